package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// liveFleet is one fresh API server as the only context of a kubeconfig, named "local".
func liveFleet(t *testing.T) *fleetOf {
	t.Helper()
	env := testenv.Start(t, testenv.WithContextName("local"))
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kc, env.Config, "local"); err != nil {
		t.Fatal(err)
	}
	return &fleetOf{kubeconfig: kc, envs: map[string]*testenv.Env{"local": env}, now: now}
}

const removedAPIManifest = `---
# Source: legacy/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: legacy
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: legacy
---
# Source: legacy/templates/flowschema.yaml
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata:
  name: legacy
spec:
  priorityLevelConfiguration:
    name: global-default
  matchingPrecedence: 9000
  rules:
  - subjects:
    - kind: ServiceAccount
      serviceAccount:
        name: legacy
        namespace: legacy
    resourceRules:
    - verbs: ["get"]
      apiGroups: [""]
      resources: ["configmaps"]
      namespaces: ["legacy"]
---
# Source: legacy/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy
data:
  mode: "strict"
`

// Acceptance (issue 16): a Helm release deployed before the cluster's upgrade, whose manifest
// uses policy/v1beta1 PodDisruptionBudget and flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema,
// which the v1.37 server no longer serves; its next upgrade failed with Helm's "resource
// mapping not found ... ensure CRDs are installed first" (revision 2, failed). Found as
// api/removed from that message; `fix --apply --max-risk medium` rewrites the stored manifests
// of revision 2 and of the deployed revision 1 in place: every rewritten document passes a
// server-side dry-run, Helm's storage reads both revisions back with the replacement APIs and
// their statuses unchanged, only the two release Secrets changed, and restore puts them back
// exactly.
func TestFixRewritesReleaseManifestWithRemovedAPIs(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := liveFleet(t)
	cfg := f.envs["local"].Config
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns, name = "legacy", "legacy"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	store := helmStore(t, f, "local", ns)
	deployed := helmtime.Now().Add(-48 * time.Hour)
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "legacy", Version: "1.0.0"}}
	rev := func(v int, st release.Status, desc string) *release.Release {
		return &release.Release{Name: name, Namespace: ns, Version: v, Chart: ch, Manifest: removedAPIManifest, Config: map[string]any{"replicas": 2},
			Info: &release.Info{Status: st, Description: desc, FirstDeployed: deployed, LastDeployed: deployed.Add(time.Duration(v) * time.Hour)}}
	}
	for _, r := range []*release.Release{
		rev(1, release.StatusDeployed, "Install complete"),
		rev(2, release.StatusFailed, `Upgrade "legacy" failed: unable to build kubernetes objects from current release manifest: resource mapping not found for name: "legacy" namespace: "" from "": no matches for kind "FlowSchema" in version "flowcontrol.apiserver.k8s.io/v1beta3"
ensure CRDs are installed first`),
	} {
		if err := store.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	before := everything(t, cfg)

	plan := planOf(t, f, "--only", "api/")
	var step remediate.Step
	for _, s := range plan.Steps() {
		if s.Action == remediate.HelmRewriteAPIs {
			step = s
		}
	}
	if step.Rewrite == nil || !reflect.DeepEqual(step.Rewrite.Revisions, []int{2, 1}) || step.Risk != remediate.Medium || step.Rung != remediate.RungRepair {
		t.Fatalf("plan %s: want a medium rewrite of revisions 2 and 1", mustJSON(plan))
	}

	dir := filepath.Join(t.TempDir(), "backup")
	start := time.Now()
	out, errOut, code := runCtx(ctx, t, "", append([]string{"fix"}, f.args("--only", "api/", "--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir, "--verify-timeout", "20s")...)...)
	t.Logf("fix --apply (%s):\n%s%s", time.Since(start).Round(time.Millisecond), out, errOut)
	if code != 0 {
		t.Fatalf("fix --apply exit %d", code)
	}
	after := everything(t, cfg)
	want := []string{"Secret/legacy/sh.helm.release.v1.legacy.v1", "Secret/legacy/sh.helm.release.v1.legacy.v2"}
	if got := changed(before, after); !sameSet(got, want) {
		t.Errorf("changed objects %v, want %v", got, want)
	}
	if got := journalWrites(t, dir)["local"]; !sameSet(got, want) {
		t.Errorf("journal writes %v, want %v", got, want)
	}

	// Helm's own storage reads both revisions, statuses unchanged, manifests rewritten.
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	store = helmStore(t, f, "local", ns)
	last, err := store.Last(name)
	if err != nil || last.Version != 2 {
		t.Fatalf("Helm's storage: last %v, %v", last, err)
	}
	wantManifest := strings.NewReplacer("apiVersion: policy/v1beta1\n", "apiVersion: policy/v1\n",
		"apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\n", "apiVersion: flowcontrol.apiserver.k8s.io/v1\n").Replace(removedAPIManifest)
	for v, st := range map[int]release.Status{1: release.StatusDeployed, 2: release.StatusFailed} {
		r, err := store.Get(name, v)
		if err != nil {
			t.Fatalf("Helm's storage cannot read revision %d: %v", v, err)
		}
		if r.Info.Status != st || r.Manifest != wantManifest || r.Chart.Metadata.Version != "1.0.0" || r.Config["replicas"] != float64(2) {
			t.Errorf("revision %d: status %s, chart %s, config %v, manifest:\n%s", v, r.Info.Status, r.Chart.Metadata.Version, r.Config, r.Manifest)
		}
		// Every document of the rewritten manifest passes a server-side dry-run on this server.
		dec := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(r.Manifest), 4096)
		docs := 0
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				break
			}
			if len(m) == 0 {
				continue
			}
			docs++
			u := &unstructured.Unstructured{Object: m}
			gvr := map[string]schema.GroupVersionResource{
				"PodDisruptionBudget": {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
				"FlowSchema":          {Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"},
				"ConfigMap":           {Version: "v1", Resource: "configmaps"},
			}[u.GetKind()]
			var h dynamic.ResourceInterface = dyn.Resource(gvr)
			if u.GetKind() != "FlowSchema" {
				h = dyn.Resource(gvr).Namespace(ns)
			}
			if _, err := h.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("revision %d: %s %s fails a server-side dry-run: %v", v, u.GetAPIVersion(), u.GetKind(), err)
			}
		}
		if docs != 3 {
			t.Errorf("revision %d: %d documents, want 3", v, docs)
		}
	}

	// The backup holds the Secrets exactly (payload included), private; nothing printed them.
	secretFile := filepath.Join(dir, "objects", "local", "core", "Secret", ns, "sh.helm.release.v1.legacy.v2.yaml")
	if m := fileMode(t, secretFile); m != 0o600 {
		t.Errorf("backup %s has mode %v, want 0600", secretFile, m)
	}
	payload := before["Secret/legacy/sh.helm.release.v1.legacy.v2"].Content["data"].(map[string]any)["release"].(string)
	if b, _ := os.ReadFile(secretFile); !strings.Contains(string(b), payload) {
		t.Errorf("the backup of revision 2 does not hold its payload")
	}
	if strings.Contains(out+errOut, payload[:64]) {
		t.Errorf("a release payload was printed")
	}

	// Restore puts both Secrets back exactly.
	rOut, rErr, code := runCtx(ctx, t, "", "restore", dir, "--kubeconfig", f.kubeconfig)
	t.Logf("restore:\n%s%s", rOut, rErr)
	if code != 0 {
		t.Fatalf("restore exit %d", code)
	}
	restored := everything(t, cfg)
	for _, k := range want {
		if !reflect.DeepEqual(before[k].Content, restored[k].Content) {
			t.Errorf("%s not restored", k)
		}
	}
	if d := changed(after, restored); !sameSet(d, want) {
		t.Errorf("restore touched %v, want exactly %v", d, want)
	}
	if r, err := helmStore(t, f, "local", ns).Get(name, 2); err != nil || r.Manifest != removedAPIManifest {
		t.Errorf("after restore revision 2's manifest is not the original (%v)", err)
	}
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.unstick.dev
spec:
  group: example.unstick.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// Acceptance (issue 16): a CRD whose objects were stored as v1, after which v2 became the
// storage version and v1 stopped being served (status.storedVersions [v1 v2]). Found as
// crd/version-not-served; `fix --apply --max-risk high` migrates every object (two pages of
// the 500-object list) and trims storedVersions to [v2]. A concurrent writer updates one
// object between the migration's list and its write-back — injected with the executor's
// BeforeMigrateObject hook, because a real second client cannot be made to land in that
// window on demand — and the write-back meets a 409, reads the object again and writes it
// again: the other writer's change survives. Every object's resourceVersion moved (the server
// skips a write whose encoding is unchanged, as a control shows, so each was re-encoded in
// v2), the contents are intact, and restore puts storedVersions back to [v1 v2].
// widgets sets up the CRD scenario on a fresh server: n Widgets stored as v1, then v2 the
// storage version and v1 no longer served. It returns the v2 client, a reader of
// status.storedVersions and each object's resourceVersion before any fix.
func widgets(t *testing.T, f *fleetOf, n int) (dynamic.ResourceInterface, func() []string, map[string]string) {
	t.Helper()
	cfg := f.envs["local"].Config
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crdRes := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	var crd unstructured.Unstructured
	must(t, k8syaml.Unmarshal([]byte(widgetCRD), &crd.Object))
	if _, err := crdRes.Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, dyn, "v1")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "widgets"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := dyn.Resource(schema.GroupVersionResource{Group: "example.unstick.dev", Version: "v1", Resource: "widgets"}).Namespace("widgets")
	for i := 0; i < n; i++ {
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.unstick.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%03d", i)}, "spec": map[string]any{"size": int64(i), "color": "blue"}}}
		if _, err := v1.Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// v2 becomes the storage version, v1 is no longer served (conversion None: same schema).
	cur, err := crdRes.Get(ctx, "widgets.example.unstick.dev", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, unstructured.SetNestedSlice(cur.Object, []any{
		map[string]any{"name": "v1", "served": false, "storage": false, "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
		map[string]any{"name": "v2", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
	}, "spec", "versions"))
	if _, err := crdRes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, dyn, "v2")
	v2 := dyn.Resource(schema.GroupVersionResource{Group: "example.unstick.dev", Version: "v2", Resource: "widgets"}).Namespace("widgets")
	stored := func() []string {
		c, err := crdRes.Get(ctx, "widgets.example.unstick.dev", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, _, _ := unstructured.NestedStringSlice(c.Object, "status", "storedVersions")
		return s
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v1", "v2"}) {
		t.Fatalf("storedVersions %v before the fix, want [v1 v2]", s)
	}
	return v2, stored, resourceVersions(t, v2)
}

func resourceVersions(t *testing.T, r dynamic.ResourceInterface) map[string]string {
	t.Helper()
	list, err := r.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range list.Items {
		out[it.GetName()] = it.GetResourceVersion()
	}
	return out
}

func TestFixMigratesCRDStorageAndTrimsStoredVersions(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := liveFleet(t)
	ctx := context.Background()
	const n = 520
	v2, stored, rvBefore := widgets(t, f, n)

	plan := planOf(t, f, "--only", "crd/")
	var rungs []string
	for _, s := range plan.Steps() {
		if s.Action.Mutating() {
			rungs = append(rungs, s.Rung+"/"+s.Risk.String())
		}
	}
	if want := []string{"repair/medium", "realign/high"}; !reflect.DeepEqual(rungs, want) {
		t.Fatalf("mutating steps %v, want %v", rungs, want)
	}

	// The concurrent writer: once, between the list and the write-back of w-007.
	var injected atomic.Int32
	hooks := &execute.Hooks{BeforeMigrateObject: func(ctx context.Context, st remediate.Step, obj *unstructured.Unstructured) error {
		if obj.GetName() != "w-007" || injected.Load() > 0 {
			return nil
		}
		injected.Add(1)
		live, err := v2.Get(ctx, "w-007", metav1.GetOptions{})
		if err != nil {
			return err
		}
		must(t, unstructured.SetNestedField(live.Object, "red", "spec", "color"))
		_, err = v2.Update(ctx, live, metav1.UpdateOptions{FieldManager: "other-writer"})
		return err
	}}
	dir := filepath.Join(t.TempDir(), "backup")
	start := time.Now()
	out, errOut, code := runCtx(execute.WithHooks(ctx, hooks), t, "", append([]string{"fix"}, f.args("--only", "crd/", "--apply", "--yes", "--max-risk", "high", "--backup-dir", dir, "--verify-timeout", "30s")...)...)
	t.Logf("fix --apply (%s):\n%s%s", time.Since(start).Round(time.Millisecond), out, errOut)
	if code != 0 {
		t.Fatalf("fix --apply exit %d", code)
	}
	if injected.Load() != 1 || !strings.Contains(out, "1 conflicts with other writers") {
		t.Errorf("the concurrent write was injected %d times; the output does not report the conflict it caused", injected.Load())
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v2"}) {
		t.Errorf("storedVersions %v after the fix, want [v2]", s)
	}
	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Errorf("%d objects after the migration, want %d", len(list.Items), n)
	}
	for _, it := range list.Items {
		var i int
		fmt.Sscanf(it.GetName(), "w-%d", &i)
		size, _, _ := unstructured.NestedInt64(it.Object, "spec", "size")
		color, _, _ := unstructured.NestedString(it.Object, "spec", "color")
		wantColor := "blue"
		if it.GetName() == "w-007" {
			wantColor = "red" // the other writer's update is not lost
		}
		if size != int64(i) || color != wantColor {
			t.Errorf("%s: size %d color %s, want %d %s", it.GetName(), size, color, i, wantColor)
		}
		if it.GetResourceVersion() == rvBefore[it.GetName()] {
			t.Errorf("%s was not written back (resourceVersion %s unchanged)", it.GetName(), it.GetResourceVersion())
		}
	}
	// Control: writing back an object already stored as v2 changes nothing on the server, so
	// the moved resourceVersions above were re-encodings.
	w0, err := v2.Get(ctx, "w-000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := v2.Update(ctx, w0, metav1.UpdateOptions{})
	if err != nil || again.GetResourceVersion() != w0.GetResourceVersion() {
		t.Errorf("a no-op write-back of a migrated object moved its resourceVersion (%s -> %s, %v): the migration proof does not hold", w0.GetResourceVersion(), again.GetResourceVersion(), err)
	}
	entries, _ := execute.ReadJournal(dir)
	pages := 0
	for _, e := range entries {
		if e.Phase == execute.PhaseProgress {
			pages++
		}
	}
	if pages != 2 {
		t.Errorf("%d progress lines in the journal, want 2 (pages of 500)", pages)
	}
	if m := fileMode(t, filepath.Join(dir, "objects", "local", "apiextensions.k8s.io", "CustomResourceDefinition", "_cluster", "widgets.example.unstick.dev.yaml")); m != 0o600 {
		t.Errorf("CRD backup mode %v", m)
	}

	// Restore puts status.storedVersions back (the migration itself has nothing to undo).
	rOut, rErr, code := runCtx(ctx, t, "", "restore", dir, "--kubeconfig", f.kubeconfig)
	t.Logf("restore:\n%s%s", rOut, rErr)
	if code != 0 {
		t.Fatalf("restore exit %d", code)
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v1", "v2"}) {
		t.Errorf("storedVersions %v after restore, want [v1 v2]", s)
	}
}

// waitServed waits until the widgets CRD serves a version.
func waitServed(t *testing.T, dyn dynamic.Interface, version string) {
	t.Helper()
	r := dyn.Resource(schema.GroupVersionResource{Group: "example.unstick.dev", Version: version, Resource: "widgets"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := r.List(context.Background(), metav1.ListOptions{Limit: 1})
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !apierrors.IsNotFound(err) {
			if time.Now().After(deadline) {
				t.Fatalf("version %s not served: %v", version, err)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A migration killed after its first page (the process dies right after the page's journal
// line: the executor's AfterPhase hook, the only stand-in) is resumed by the next run with the
// same --backup-dir from the journaled continue token: the second page is written back, the
// first is not written again, and the trim follows.
func TestFixResumesKilledStorageMigration(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := liveFleet(t)
	ctx := context.Background()
	const n = 520
	v2, stored, rvBefore := widgets(t, f, n)
	dir := filepath.Join(t.TempDir(), "backup")
	kill := &execute.Hooks{AfterPhase: func(ctx context.Context, st remediate.Step, phase string) error {
		if phase == execute.PhaseProgress {
			return execute.ErrKilled
		}
		return nil
	}}
	args := f.args("--only", "crd/", "--apply", "--yes", "--max-risk", "high", "--backup-dir", dir, "--verify-timeout", "30s")
	out, errOut, code := runCtx(execute.WithHooks(ctx, kill), t, "", append([]string{"fix"}, args...)...)
	t.Logf("killed run (exit %d):\n%s%s", code, out, errOut)
	if code == 0 {
		t.Fatalf("the killed run exited 0")
	}
	afterKill := resourceVersions(t, v2)
	moved := 0
	for k, rv := range afterKill {
		if rv != rvBefore[k] {
			moved++
		}
	}
	if moved != 500 {
		t.Fatalf("%d objects written back before the kill, want the first page of 500", moved)
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v1", "v2"}) {
		t.Fatalf("storedVersions %v after the kill, want [v1 v2] (no trim before the migration finished)", s)
	}
	start := time.Now()
	out, errOut, code = runCtx(ctx, t, "", append([]string{"fix"}, args...)...)
	t.Logf("rerun (%s, exit %d):\n%s%s", time.Since(start).Round(time.Millisecond), code, out, errOut)
	if code != 0 {
		t.Fatalf("rerun exit %d", code)
	}
	if !strings.Contains(out, "resuming the migration after 500 objects (page 1)") {
		t.Errorf("the rerun does not say it resumed from the journal")
	}
	final := resourceVersions(t, v2)
	for k, rv := range final {
		if afterKill[k] != rvBefore[k] && rv != afterKill[k] {
			t.Errorf("%s was written back again by the rerun", k)
		}
		if afterKill[k] == rvBefore[k] && rv == afterKill[k] {
			t.Errorf("%s was never written back", k)
		}
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v2"}) {
		t.Errorf("storedVersions %v after the rerun, want [v2]", s)
	}
}

// legacyRelease stores the release of TestFixRewritesReleaseManifestWithRemovedAPIs on a
// fresh server: revision 1 deployed, revision 2 failed on the removed FlowSchema version.
func legacyRelease(t *testing.T) (*fleetOf, *kubernetes.Clientset) {
	t.Helper()
	f := liveFleet(t)
	cs, err := kubernetes.NewForConfig(f.envs["local"].Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	store := helmStore(t, f, "local", "legacy")
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "legacy", Version: "1.0.0"}}
	for v, st := range []release.Status{release.StatusDeployed, release.StatusFailed} {
		desc := "Install complete"
		if st == release.StatusFailed {
			desc = `Upgrade "legacy" failed: unable to build kubernetes objects from current release manifest: resource mapping not found for name: "legacy" namespace: "" from "": no matches for kind "FlowSchema" in version "flowcontrol.apiserver.k8s.io/v1beta3" ensure CRDs are installed first`
		}
		r := &release.Release{Name: "legacy", Namespace: "legacy", Version: v + 1, Chart: ch, Manifest: removedAPIManifest,
			Info: &release.Info{Status: st, Description: desc, FirstDeployed: helmtime.Now(), LastDeployed: helmtime.Now()}}
		if err := store.Create(r); err != nil {
			t.Fatal(err)
		}
	}
	return f, cs
}

// Someone else writes a release Secret between the rewrite's dry-run and its write (injected
// with the BeforeApply hook: a real client cannot be timed into that window): the update,
// held to the resourceVersion read when planning, is refused by the server, nothing is
// written, and fix says why and stops (exit 1).
func TestFixRewriteConflictMakesNoWrite(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f, cs := legacyRelease(t)
	cfg := f.envs["local"].Config
	before := everything(t, cfg)
	const v1 = "sh.helm.release.v1.legacy.v1"
	hooks := &execute.Hooks{BeforeApply: func(ctx context.Context, st remediate.Step) error {
		if st.Action != remediate.HelmRewriteAPIs {
			return nil
		}
		s, err := cs.CoreV1().Secrets("legacy").Get(ctx, v1, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Labels["touched-by"] = "another-operator"
		_, err = cs.CoreV1().Secrets("legacy").Update(ctx, s, metav1.UpdateOptions{})
		return err
	}}
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(execute.WithHooks(context.Background(), hooks), t, "", append([]string{"fix"}, f.args("--only", "api/", "--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir)...)...)
	t.Logf("fix --apply:\n%s%s", out, errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(out+errOut, "changed since the plan was made") {
		t.Errorf("the output does not name the conflict")
	}
	// Every Secret is held to its planned resourceVersion before the first write, so revision
	// 2, which would be written first, is not written either.
	if got := changed(before, everything(t, cfg)); !sameSet(got, []string{"Secret/legacy/" + v1}) {
		t.Errorf("changed objects %v: only the injected change may differ", got)
	}
}

// The process dies between the rewrite's two Secret updates (the AfterWrite hook, the only
// stand-in): the next run with the same --backup-dir sees revision 2 rewritten and revision 1
// not, rewrites only revision 1, and each Secret is written exactly once; restore still puts
// both back as they were before the first run.
func TestFixRewriteKilledBetweenWritesResumes(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f, _ := legacyRelease(t)
	cfg := f.envs["local"].Config
	before := everything(t, cfg)
	kill := &execute.Hooks{AfterWrite: func(ctx context.Context, st remediate.Step, w execute.Write) error {
		if st.Action == remediate.HelmRewriteAPIs {
			return execute.ErrKilled
		}
		return nil
	}}
	dir := filepath.Join(t.TempDir(), "backup")
	args := f.args("--only", "api/", "--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir, "--verify-timeout", "20s")
	out, errOut, code := runCtx(execute.WithHooks(context.Background(), kill), t, "", append([]string{"fix"}, args...)...)
	t.Logf("killed run (exit %d):\n%s%s", code, out, errOut)
	if code == 0 {
		t.Fatal("the killed run exited 0")
	}
	mid := everything(t, cfg)
	if got := changed(before, mid); !sameSet(got, []string{"Secret/legacy/sh.helm.release.v1.legacy.v2"}) {
		t.Fatalf("after the kill %v changed, want revision 2 only", got)
	}
	out, errOut, code = runCtx(context.Background(), t, "", append([]string{"fix"}, args...)...)
	t.Logf("rerun (exit %d):\n%s%s", code, out, errOut)
	if code != 0 {
		t.Fatalf("rerun exit %d", code)
	}
	if got := changed(mid, everything(t, cfg)); !sameSet(got, []string{"Secret/legacy/sh.helm.release.v1.legacy.v1"}) {
		t.Errorf("the rerun changed %v, want revision 1 only", got)
	}
	writes := map[string]int{}
	entries, _ := execute.ReadJournal(dir)
	for _, e := range entries {
		if e.Phase == execute.PhaseWrite {
			for _, w := range e.Writes {
				writes[w.Name]++
			}
		}
	}
	if writes["sh.helm.release.v1.legacy.v1"] != 1 || writes["sh.helm.release.v1.legacy.v2"] != 1 {
		t.Errorf("writes per Secret %v, want one each", writes)
	}
	store := helmStore(t, f, "local", "legacy")
	for _, v := range []int{1, 2} {
		r, err := store.Get("legacy", v)
		if err != nil || strings.Contains(r.Manifest, "v1beta") {
			t.Errorf("revision %d not rewritten (%v)", v, err)
		}
	}
	rOut, rErr, code := runCtx(context.Background(), t, "", "restore", dir, "--kubeconfig", f.kubeconfig)
	if code != 0 {
		t.Fatalf("restore exit %d\n%s%s", code, rOut, rErr)
	}
	restored := everything(t, cfg)
	for _, k := range []string{"Secret/legacy/sh.helm.release.v1.legacy.v1", "Secret/legacy/sh.helm.release.v1.legacy.v2"} {
		if !reflect.DeepEqual(before[k].Content, restored[k].Content) {
			t.Errorf("%s not restored to its state before the first run", k)
		}
	}
}

// The CRD changes between the trim's dry-run and its write (BeforeApply hook): the trim is
// held to the resourceVersion read when planning — checked again just before the write, and
// carried by the status update itself, so the server would refuse what the check missed —
// and makes no write; storedVersions stay as they were.
func TestFixTrimConflictMakesNoWrite(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := liveFleet(t)
	_, stored, _ := widgets(t, f, 3)
	dyn, err := dynamic.NewForConfig(f.envs["local"].Config)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	hooks := &execute.Hooks{BeforeApply: func(ctx context.Context, st remediate.Step) error {
		if st.Action != remediate.TrimStoredVersions {
			return nil
		}
		c, err := crds.Get(ctx, "widgets.example.unstick.dev", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c.SetLabels(map[string]string{"touched-by": "another-operator"})
		_, err = crds.Update(ctx, c, metav1.UpdateOptions{})
		return err
	}}
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(execute.WithHooks(context.Background(), hooks), t, "", append([]string{"fix"}, f.args("--only", "crd/", "--apply", "--yes", "--max-risk", "high", "--backup-dir", dir, "--verify-timeout", "20s")...)...)
	t.Logf("fix --apply (exit %d):\n%s%s", code, out, errOut)
	if code != 1 || !strings.Contains(out+errOut, "changed since the plan was made") {
		t.Errorf("exit %d; want 1 and the conflict named", code)
	}
	if s := stored(); !reflect.DeepEqual(s, []string{"v1", "v2"}) {
		t.Errorf("storedVersions %v, want [v1 v2] (no write)", s)
	}
	var phases []string
	entries, _ := execute.ReadJournal(dir)
	for _, e := range entries {
		if e.Action == string(remediate.TrimStoredVersions) {
			phases = append(phases, e.Phase)
		}
	}
	if want := []string{execute.PhaseBegin, execute.PhaseBackup, execute.PhaseDryRun, execute.PhaseConflict}; !reflect.DeepEqual(phases, want) {
		t.Errorf("journal of the trim %v, want %v", phases, want)
	}
}
