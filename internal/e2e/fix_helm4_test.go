package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/helmrelease"
)

// helm4Record is a podinfo release record as Helm 4 writes it (internal/helmrelease's fixture,
// marshalled from Helm 4's own types: apply_method "ssa", the chart's modtimes).
func helm4Record(t *testing.T, rev string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "helmrelease", "testdata", "records", "helm4-podinfo.v"+rev+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordOf reads the record JSON of a release Secret as stored.
func recordOf(t *testing.T, cs kubernetes.Interface, ns, name string) (map[string]any, map[string]string) {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := helmrelease.Payload(s.Data["release"])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, s.Labels
}

// A Helm 4 release installed with server-side apply (apply_method "ssa": revision 1 deployed)
// whose upgrade to 6.9.2 was left pending-upgrade (revision 2). `fix --apply --max-risk medium`
// rolls back to revision 1 through Helm v3's storage; every record it writes still says
// "ssa", so the next `helm upgrade` (--server-side auto) applies server-side as before.
// Revision 3 is revision 1's record with the rollback's changes; revisions 1 and 2 differ from
// what was stored only in info.status; the Secrets keep their labels.
func TestFixKeepsHelm4RecordFields(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := liveFleet(t)
	cfg := f.envs["local"].Config
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ns = "podinfo"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As Helm's driver labels them: the install's final update leaves modifiedAt, the pending
	// upgrade's create createdAt; team=web came from `helm install --labels`.
	for rev, lbl := range map[string]map[string]string{
		"1": {"status": "deployed", "modifiedAt": "1793628331"},
		"2": {"status": "pending-upgrade", "createdAt": "1795850404"},
	} {
		payload, err := helmrelease.Encode(helm4Record(t, rev))
		if err != nil {
			t.Fatal(err)
		}
		lbl["name"], lbl["owner"], lbl["version"], lbl["team"] = "podinfo", "helm", rev, "web"
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.podinfo.v" + rev, Labels: lbl},
			Type: helmrelease.SecretType, Data: map[string][]byte{"release": payload}}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	applyHelmObjects(t, cfg, ns, "podinfo", helm4Record(t, "2"))
	before := map[string]map[string]any{}
	beforeLabels := map[string]map[string]string{}
	for _, rev := range []string{"1", "2"} {
		before[rev], beforeLabels[rev] = recordOf(t, cs, ns, "sh.helm.release.v1.podinfo.v"+rev)
	}

	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(ctx, t, "", append([]string{"fix"}, f.args("--only", "helm/", "--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir, "--verify-timeout", "20s")...)...)
	t.Logf("fix --apply:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("fix --apply exit %d", code)
	}
	if last, err := helmStore(t, f, "local", ns).Last("podinfo"); err != nil || last.Version != 3 || last.Info.Status != release.StatusDeployed {
		t.Fatalf("Helm's storage reads the newest revision as %+v (%v), want 3 deployed", last, err)
	}

	v3, v3Labels := recordOf(t, cs, ns, "sh.helm.release.v1.podinfo.v3")
	if v3["apply_method"] != "ssa" {
		t.Errorf("revision 3 apply_method %v, want revision 1's \"ssa\"", v3["apply_method"])
	}
	info := v3["info"].(map[string]any)
	if v3["version"] != float64(3) || info["status"] != "deployed" || info["description"] != "Rollback to 1" {
		t.Errorf("revision 3: version %v, status %v, description %v", v3["version"], info["status"], info["description"])
	}
	if _, ok := info["deleted"]; ok {
		t.Errorf("revision 3 gained info.deleted, which Helm 4 omits when zero")
	}
	if !reflect.DeepEqual(v3["chart"], before["1"]["chart"]) || !reflect.DeepEqual(v3["hooks"], before["1"]["hooks"]) || v3["manifest"] != before["1"]["manifest"] {
		t.Errorf("revision 3's chart, hooks or manifest differ from revision 1's (chart modtime %v, want %v)",
			v3["chart"].(map[string]any)["modtime"], before["1"]["chart"].(map[string]any)["modtime"])
	}
	if v3Labels["team"] != "web" {
		t.Errorf("revision 3 labels %v: the release's own label team=web is lost", v3Labels)
	}

	for _, rev := range []string{"1", "2"} {
		after, labels := recordOf(t, cs, ns, "sh.helm.release.v1.podinfo.v"+rev)
		if got := after["info"].(map[string]any)["status"]; got != "superseded" {
			t.Errorf("revision %s is %v, want superseded", rev, got)
		}
		delete(after["info"].(map[string]any), "status")
		delete(before[rev]["info"].(map[string]any), "status")
		if !reflect.DeepEqual(after, before[rev]) {
			t.Errorf("revision %s changed beyond info.status:\n  before %s\n  after  %s", rev, mustJSON(before[rev]), mustJSON(after))
		}
		for k, v := range beforeLabels[rev] {
			if k != "status" && k != "modifiedAt" && labels[k] != v {
				t.Errorf("revision %s: label %s=%q after the rollback, was %q", rev, k, labels[k], v)
			}
		}
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "podinfo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/stefanprodan/podinfo:6.7.1" {
		t.Errorf("podinfo image %s after the rollback, want revision 1's 6.7.1", img)
	}
}

// applyHelmObjects creates the objects of a record's manifest as Helm 4 applies them
// (server-side, field manager "helm", the release's ownership labels and annotations).
func applyHelmObjects(t *testing.T, cfg *rest.Config, ns, name string, record []byte) {
	t.Helper()
	var rec struct {
		Manifest string `json:"manifest"`
	}
	must(t, json.Unmarshal(record, &rec))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]schema.GroupVersionResource{
		"Service":    {Version: "v1", Resource: "services"},
		"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
	}
	dec := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(rec.Manifest), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			break
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetNamespace(ns)
		u.SetAnnotations(map[string]string{"meta.helm.sh/release-name": name, "meta.helm.sh/release-namespace": ns})
		gvr, ok := res[u.GetKind()]
		if !ok {
			t.Fatalf("no resource for %s", u.GetKind())
		}
		if _, err := dyn.Resource(gvr).Namespace(ns).Apply(context.Background(), u.GetName(), u, metav1.ApplyOptions{FieldManager: "helm", Force: true}); err != nil {
			t.Fatal(err)
		}
	}
}
