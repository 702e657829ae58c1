package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/cli"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// fleetOf is a scenario replayed into real API servers, one per cluster of the bundle, with a
// kubeconfig holding one administrator context per cluster (named as the bundle names them).
type fleetOf struct {
	dir        string
	kubeconfig string
	envs       map[string]*testenv.Env
	now        string
}

func scenario(name string) string { return filepath.Join("..", "..", "testdata", "scenarios", name) }

// replay loads a scenario bundle into fresh API servers (only the clusters named, when any).
func replay(t *testing.T, dir string, only ...string) *fleetOf {
	t.Helper()
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	multi := false
	_ = source.ReadRawObjects(dir, func(o source.RawObject) error {
		multi = multi || o.Cluster != ""
		return nil
	})
	f := &fleetOf{dir: dir, envs: map[string]*testenv.Env{}, now: now}
	// A scenario is judged at the time its expect.yaml names (as internal/check's tests do).
	if b, err := os.ReadFile(filepath.Join(dir, "expect.yaml")); err == nil {
		var e struct {
			Now string `json:"now"`
		}
		if yaml.Unmarshal(b, &e) == nil && e.Now != "" {
			f.now = e.Now
		}
	}
	kc := clientcmdapi.NewConfig()
	for _, c := range snap.Clusters {
		if len(only) > 0 && !contains(only, c.Name) {
			continue
		}
		env := testenv.Start(t, testenv.WithContextName(c.Name))
		pick := ""
		if multi {
			pick = c.Name
		}
		if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{Cluster: pick}); err != nil {
			t.Fatalf("loading %s: %v", c.Name, err)
		}
		f.envs[c.Name] = env
		// The test server has no kubelet: the log proxy serves the bundle's pod logs (the
		// evidence fix saves) and passes everything else to the server as the administrator.
		logs := filepath.Join(t.TempDir(), "logs")
		if _, err := testenv.CopyLogs(dir, pick, logs); err != nil {
			t.Fatal(err)
		}
		addProxiedContext(t, kc, c.Name, env.Config, logs)
		kc.CurrentContext = c.Name
	}
	f.kubeconfig = writeKubeconfig(t, kc)
	return f
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// args are the connection flags for every cluster of the fleet.
func (f *fleetOf) args(extra ...string) []string {
	return append([]string{"--kubeconfig", f.kubeconfig, "--all-contexts", "-q", "--offline-registry", "--now", f.now}, extra...)
}

func runCtx(ctx context.Context, t *testing.T, in string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(ctx, cli.Streams{In: strings.NewReader(in), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), code
}

// planJSON is `unstick fix -o json`.
func planOf(t *testing.T, f *fleetOf, extra ...string) *remediate.Plan {
	t.Helper()
	out, errOut, code := runCtx(context.Background(), t, "", append([]string{"fix"}, f.args(append(extra, "-o", "json")...)...)...)
	if code != 0 && code != 3 { // 3: the plan has incidents (nothing is changed without --apply)
		t.Fatalf("fix (plan) exit %d: %s", code, errOut)
	}
	var p remediate.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	return &p
}

// objState is an object's version and its content as the server returns it (minus what the
// server alone moves).
type objState struct {
	RV, UID string
	Content map[string]any
}

// noise are resources the API server itself keeps writing (leases, its own endpoints,
// priority-and-fairness and aggregation status): never touched by unstick, never compared.
var noise = map[string]bool{
	"leases.coordination.k8s.io": true, "events": true, "events.events.k8s.io": true,
	"endpoints": true, "endpointslices.discovery.k8s.io": true, "componentstatuses": true, "apiservices.apiregistration.k8s.io": true,
	"flowschemas.flowcontrol.apiserver.k8s.io": true, "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io": true,
}

// everything reads every object of every listable resource of one cluster.
func everything(t *testing.T, cfg *rest.Config) map[string]objState {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	// Lists run in parallel: the first list of each CRD waits about a second for its cache.
	out := map[string]objState{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			full := r.Name
			if gv.Group != "" {
				full += "." + gv.Group
			}
			if strings.Contains(r.Name, "/") || noise[full] || !contains(r.Verbs, "list") {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				items, err := dyn.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("listing %s: %w", full, err)
					}
					return
				}
				kind := r.Kind
				if snapshot.QualifiedGroups[gv.Group] {
					// Rancher's provisioning and management Clusters and CAPI's share Fleet's
					// kind name and, for one cluster, its namespace and name.
					kind += "." + gv.Group
				}
				for _, it := range items.Items {
					key := kind + "/" + it.GetNamespace() + "/" + it.GetName()
					if it.GetNamespace() == "" {
						key = kind + "/" + it.GetName()
					}
					out[key] = objState{RV: it.GetResourceVersion(), UID: string(it.GetUID()), Content: content(&it)}
				}
			}()
		}
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return out
}

// content is what restore must bring back: metadata labels and annotations, spec, data, type.
func content(u *unstructured.Unstructured) map[string]any {
	c := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
			c[k] = v
		}
	}
	c["labels"], c["annotations"] = u.GetLabels(), u.GetAnnotations()
	if u.GetKind() == "Job" {
		// A re-created Job gets a new selector and controller-uid labels from the server.
		cc := u.DeepCopy()
		unstructured.RemoveNestedField(cc.Object, "spec", "selector")
		for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
			unstructured.RemoveNestedField(cc.Object, "spec", "template", "metadata", "labels", l)
		}
		c["spec"] = cc.Object["spec"]
		delete(c["labels"].(map[string]string), "controller-uid")
		delete(c["labels"].(map[string]string), "batch.kubernetes.io/controller-uid")
	}
	return c
}

// changed lists the objects whose version or existence differs.
func changed(before, after map[string]objState) []string {
	var out []string
	for k, b := range before {
		if a, ok := after[k]; !ok || a.RV != b.RV {
			out = append(out, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	sa, sb := append([]string{}, a...), append([]string{}, b...)
	sort.Strings(sa)
	sort.Strings(sb)
	for i := range sa {
		if sa[i] != sb[i] {
			return false
		}
	}
	return true
}

// journalWrites are the objects the journal says were written, as Kind/ns/name keys per cluster.
func journalWrites(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := execute.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	type state struct{ created, deleted bool }
	seen := map[string]*state{}
	var order []string
	for _, e := range entries {
		for _, w := range e.Writes {
			k := w.Kind + "/" + w.Namespace + "/" + w.Name
			if w.Namespace == "" {
				k = w.Kind + "/" + w.Name
			}
			key := w.Cluster + "|" + k
			st, ok := seen[key]
			if !ok {
				st = &state{created: w.Op == "create"}
				seen[key] = st
				order = append(order, key)
			}
			st.deleted = w.Op == "delete"
		}
	}
	out := map[string][]string{}
	for _, key := range order {
		// Created and deleted again in the run (a StorageVersionMigration no controller
		// acted on): no change is left behind.
		if st := seen[key]; st.created && st.deleted {
			continue
		}
		cluster, k, _ := strings.Cut(key, "|")
		out[cluster] = append(out[cluster], k)
	}
	return out
}

// terminalCount counts, per step, the journal lines that finish it, and the "applied" lines.
func terminalCount(t *testing.T, dir string) (terminal, applied map[string]int) {
	t.Helper()
	entries, err := execute.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	terminal, applied = map[string]int{}, map[string]int{}
	for _, e := range entries {
		switch e.Phase {
		case execute.PhaseVerified, execute.PhaseUnverified, execute.PhaseAbandoned:
			terminal[e.Step]++
		case execute.PhaseApplied:
			applied[e.Step]++
		}
	}
	return terminal, applied
}

// fixRegistry is go-containerregistry's in-process registry, serving multi-platform images.
type fixRegistry struct{ host string }

// sucImageFix is fix's repair of the suc/image-missing-kubectl-tag scenario: the flags that
// point the Plan at an image pushed to a real registry, and the objects it changes. --only
// narrows what is judged (as scan's does): the label on worker-2 is its own finding
// (suc/node-label-blocks-rerun) grouped under the missing image, so both are named. (With
// no SUC controller on the server, the deleted Jobs are not re-created and a rerun would
// find worker-1 left cordoned: suc/node-left-cordoned, not named, so not planned.) For the
// same reason the chain's last step never sees the Plan done on the nodes: it ends
// unverified (exit 3) after --verify-timeout, kept short here.
func sucImageFix(t *testing.T) (flags, changes []string) {
	reg := startFixRegistry(t)
	good := reg.pushIndex(t, "rancher/kubectl:v1.30.3", v1.Platform{OS: "linux", Architecture: "amd64"})
	return []string{"--max-risk", "medium", "--only", "suc/image-missing", "--only", "suc/node-label-blocks-rerun", "--verify-timeout", "2s", "--image=node-maintenance:upgrade=" + good},
		[]string{
			"Plan/system-upgrade/node-maintenance",
			"Job/system-upgrade/apply-node-maintenance-on-prod-eu-1-worker-1-with-4ee557c-0598b",
			"Job/system-upgrade/apply-node-maintenance-on-prod-eu-1-worker-2-with-4ee557c-b1741",
			"Node/prod-eu-1-worker-2",
		}
}

func startFixRegistry(t *testing.T) *fixRegistry {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &fixRegistry{host: strings.TrimPrefix(srv.URL, "http://")}
}

// pushIndex pushes an image index with one small image per platform and returns its reference.
func (r *fixRegistry) pushIndex(t *testing.T, repoTag string, plats ...v1.Platform) string {
	t.Helper()
	idx := v1.ImageIndex(empty.Index)
	for _, p := range plats {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = p.OS, p.Architecture
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			t.Fatal(err)
		}
		p := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	ref := r.host + "/" + repoTag
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(parsed, idx); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// checkRolledBackOnce asserts the end state of the agent release's rollback in prod-eu-1:
// revision 6 deployed over superseded 4 and 5 (one rollback, not two), and the rollback the
// only step, applied and finished exactly once in the journal of dir.
func checkRolledBackOnce(t *testing.T, f *fleetOf, dir string) {
	t.Helper()
	hist, err := helmStore(t, f, "prod-eu-1", agentNS).History(agentRelease)
	if err != nil {
		t.Fatal(err)
	}
	status := map[int]string{}
	for _, r := range hist {
		status[r.Version] = r.Info.Status.String()
	}
	if w := map[int]string{4: "superseded", 5: "superseded", 6: "deployed"}; !reflect.DeepEqual(status, w) {
		t.Errorf("history %v, want %v (one rollback, not two)", status, w)
	}
	terminal, applied := terminalCount(t, dir)
	for id := range applied {
		if applied[id] != 1 || terminal[id] != 1 {
			t.Errorf("step %s: applied %d times, finished %d times; want once each", id, applied[id], terminal[id])
		}
	}
	if len(applied) != 1 {
		t.Errorf("%d steps applied, want the rollback alone", len(applied))
	}
}

// checkRerunExit holds a rerun after a killed or failed fix --apply to its exit: 0, or 3 when
// what is left open has guided steps only ("No automatic fix", no step left), as the printed
// plan exits then. The rerun plans again after finishing the interrupted step, and sees as an
// incident of its own a symptom the first plan had grouped under the root cause it fixed (the
// agent Deployment's stalled rollout, which no controller rolls out on the test server).
func checkRerunExit(t *testing.T, code int, out string) {
	t.Helper()
	switch {
	case code == 0:
	case code == 3 && strings.Contains(out, "No automatic fix") && strings.Contains(out, " 0 steps"):
	default:
		t.Fatalf("rerun exit %d", code)
	}
}
