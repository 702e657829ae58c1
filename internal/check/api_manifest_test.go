package check

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/suc"
)

func gateContext(t *testing.T, s *snapshot.Snapshot, target string) *Context {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	s.Reindex()
	return &Context{Snap: s, Now: time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), Thresholds: NewThresholds(cat), Catalog: cat, TargetVersion: target}
}

func node(name, kubelet string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.NodeInfo.KubeletVersion = kubelet
	return n
}

// The findings the fixes consume (internal/remediate reads these Vars): a Helm release finding
// is on the latest revision's Secret and names the release, its latest revision, the first
// removed apiVersion, its kind and replacement, and the version that drops it.
func TestRemovedInTargetHelmContract(t *testing.T) {
	fs := []manifest.Doc{{APIVersion: "flowcontrol.apiserver.k8s.io/v1beta3", Kind: "FlowSchema", Name: "fs", Source: "apf/templates/fs.yaml"}}
	c := &snapshot.Cluster{Name: "prod-ap-1", Role: snapshot.Downstream,
		Nodes: []*corev1.Node{node("a", "v1.32.1+rke2r1"), node("b", "v1.31.12+rke2r1")},
		HelmReleases: []*helmrelease.Release{
			{Name: "apf", Namespace: "kube-system", Revision: 3, Status: "superseded", SecretName: "sh.helm.release.v1.apf.v3", Docs: fs},
			{Name: "apf", Namespace: "kube-system", Revision: 4, Status: "deployed", SecretName: "sh.helm.release.v1.apf.v4", Docs: fs},
			{Name: "apf", Namespace: "kube-system", Revision: 5, Status: "pending-upgrade", SecretName: "sh.helm.release.v1.apf.v5", Docs: fs},
			{Name: "ok", Namespace: "kube-system", Revision: 1, Status: "deployed", SecretName: "sh.helm.release.v1.ok.v1",
				Docs: []manifest.Doc{{APIVersion: "flowcontrol.apiserver.k8s.io/v1", Kind: "FlowSchema", Name: "fs"}}},
		}}
	fsOut, err := apiRemoved.Run(gateContext(t, &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, "v1.32.0"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fsOut) != 1 {
		t.Fatalf("want one finding (release apf), got %d: %+v", len(fsOut), fsOut)
	}
	f := fsOut[0]
	if f.ID != "api/removed-in-target" {
		t.Errorf("ID %s: the lowest node (v1.31) still serves v1beta3, v1.32 does not", f.ID)
	}
	if want := ref("v1", "Secret", "kube-system", "sh.helm.release.v1.apf.v5"); f.Object != want {
		t.Errorf("object %v, want the latest revision's Secret %v", f.Object, want)
	}
	want := map[string]string{"namespace": "kube-system", "release": "apf", "revision": "5", "group-version": "flowcontrol.apiserver.k8s.io/v1beta3",
		"kind": "FlowSchema", "replacement": "flowcontrol.apiserver.k8s.io/v1", "kubernetes-version": "v1.32", "review": "", "uses": "2"}
	if !reflect.DeepEqual(f.Vars, want) {
		t.Errorf("Vars %v\nwant %v", f.Vars, want)
	}
	// revisions 4 (deployed) and 5 (pending) are quoted; 3, older than the deployed one, is not
	var ev []string
	for _, e := range f.Evidence {
		ev = append(ev, e.Text)
	}
	if len(ev) != 2 || !strings.HasPrefix(ev[0], "revision 4 (deployed) apf/templates/fs.yaml: FlowSchema fs uses flowcontrol.apiserver.k8s.io/v1beta3") ||
		!strings.HasPrefix(ev[1], "revision 5 (pending-upgrade)") {
		t.Errorf("evidence: %q", ev)
	}

	// The same cluster already on v1.32: stuck now, api/removed, kubernetes-version the current one.
	c.Nodes = []*corev1.Node{node("a", "v1.32.1+rke2r1")}
	fsOut, _ = apiRemoved.Run(gateContext(t, &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, ""))
	if len(fsOut) != 1 || fsOut[0].ID != "api/removed" || fsOut[0].Vars["kubernetes-version"] != "v1.32" {
		t.Errorf("on v1.32: %+v", fsOut)
	}
	// No Node read, but the API server said v1.32 (live, or recorded by collect): stuck now.
	c.Nodes, c.ServerVersion = nil, "v1.32.4+rke2r1"
	fsOut, _ = apiRemoved.Run(gateContext(t, &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, ""))
	if len(fsOut) != 1 || fsOut[0].ID != "api/removed" || !strings.Contains(fsOut[0].Summary, "(v1.32.4+rke2r1)") {
		t.Errorf("API server on v1.32: %+v", fsOut)
	}
	c.ServerVersion = ""
	// On v1.31 with no upgrade in sight: nothing.
	c.Nodes = []*corev1.Node{node("a", "v1.31.12+rke2r1")}
	if fsOut, _ = apiRemoved.Run(gateContext(t, &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, "")); len(fsOut) != 0 {
		t.Errorf("no target, still served: %+v", fsOut)
	}
}

// The target version: --target-version first, else the Kubernetes upgrade Plans (spec.version,
// else the channel-resolved latestVersion; a Plan that upgrades something else does not count),
// else Rancher's provisioning Cluster or, for an imported cluster, the management Cluster's
// rke2Config/k3sConfig — told apart from Fleet's Cluster by apiVersion.
func TestTargetVersion(t *testing.T) {
	plan := func(name, version, latest, image string) *suc.Plan {
		p := &suc.Plan{}
		p.Name, p.Namespace = name, "system-upgrade"
		p.Spec.Version, p.Status.LatestVersion = version, latest
		p.Spec.Upgrade = &suc.ContainerSpec{Image: image}
		return p
	}
	fc := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "c-m-abc", Namespace: "fleet-default",
		Labels: map[string]string{"management.cattle.io/cluster-name": "c-m-abc", "management.cattle.io/cluster-display-name": "prod-ap-1"}}}
	unstr := func(apiVersion, ns, name string, obj map[string]any) *snapshot.Unstructured {
		return &snapshot.Unstructured{APIVersion: apiVersion, Kind: "Cluster", Namespace: ns, Name: name, Object: obj}
	}
	cases := []struct {
		name         string
		target       string
		plans        []*suc.Plan
		other        []*snapshot.Unstructured
		want, wantBy string
	}{
		{name: "nothing", want: ""},
		{name: "flag wins", target: "v1.33.0", plans: []*suc.Plan{plan("server-plan", "v1.32.5+rke2r1", "", "rancher/rke2-upgrade")}, want: "v1.33.0", wantBy: "--target-version"},
		{name: "plan spec.version", plans: []*suc.Plan{plan("server-plan", "v1.32.5+rke2r1", "v1.32.5-rke2r1", "rancher/rke2-upgrade")}, want: "v1.32.5+rke2r1", wantBy: "Plan system-upgrade/server-plan spec.version"},
		{name: "channel", plans: []*suc.Plan{plan("agent-plan", "", "v1.33.2-k3s1", "rancher/k3s-upgrade")}, want: "v1.33.2-k3s1", wantBy: "Plan system-upgrade/agent-plan status.latestVersion"},
		{name: "not a Kubernetes plan", plans: []*suc.Plan{plan("os", "", "v2.1.0", "registry.example.com/os-upgrade")}, want: ""},
		{name: "older than running", plans: []*suc.Plan{plan("server-plan", "v1.30.4+rke2r1", "", "rancher/rke2-upgrade")}, want: ""},
		{name: "provisioned", other: []*snapshot.Unstructured{
			unstr("provisioning.cattle.io/v1", "fleet-default", "prod-ap-1", map[string]any{"spec": map[string]any{"kubernetesVersion": "v1.33.1+rke2r1"}, "status": map[string]any{"clusterName": "c-m-abc"}}),
		}, want: "v1.33.1+rke2r1", wantBy: "provisioning.cattle.io/v1 Cluster fleet-default/prod-ap-1 spec.kubernetesVersion"},
		{name: "imported k3s", other: []*snapshot.Unstructured{
			unstr("management.cattle.io/v3", "", "c-m-abc", map[string]any{"spec": map[string]any{"displayName": "prod-ap-1", "k3sConfig": map[string]any{"kubernetesVersion": "v1.32.3+k3s1"}}}),
		}, want: "v1.32.3+k3s1", wantBy: "management.cattle.io/v3 Cluster c-m-abc spec.k3sConfig.kubernetesVersion"},
		{name: "another cluster's", other: []*snapshot.Unstructured{
			unstr("provisioning.cattle.io/v1", "fleet-default", "prod-eu-1", map[string]any{"spec": map[string]any{"kubernetesVersion": "v1.33.1+rke2r1"}, "status": map[string]any{"clusterName": "c-m-xyz"}}),
		}, want: ""},
		{name: "an unknown group's Cluster", other: []*snapshot.Unstructured{
			unstr("cluster.x-k8s.io/v1beta1", "fleet-default", "prod-ap-1", map[string]any{"spec": map[string]any{"kubernetesVersion": "v1.33.1"}}),
		}, want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &snapshot.Cluster{Name: "local", Role: snapshot.Management, FleetClusters: []*fleetv1.Cluster{fc}, Other: tc.other}
			d := &snapshot.Cluster{Name: "prod-ap-1", Role: snapshot.Downstream, FleetCluster: "fleet-default/c-m-abc",
				Nodes: []*corev1.Node{node("n", "v1.31.12+rke2r1")}, Plans: tc.plans}
			v := newTargets(gateContext(t, &snapshot.Snapshot{Clusters: []*snapshot.Cluster{m, d}}, tc.target)).versionsOf(d)
			if v.Current != "v1.31.12+rke2r1" || v.CurrentMinor != 31 {
				t.Errorf("current %q (%d)", v.Current, v.CurrentMinor)
			}
			if v.Target != tc.want || !strings.HasPrefix(v.TargetFrom, tc.wantBy) {
				t.Errorf("target %q from %q, want %q from %q", v.Target, v.TargetFrom, tc.want, tc.wantBy)
			}
		})
	}
}

// A Bundle finding is on the Bundle and names the GitRepo and the file to change; a CRD the
// bundle rolls out that drops a stored version is an error naming what to drop and keep.
func TestRemovedInTargetBundleAndCRDContract(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "scenarios", "api", "real-k8s132-fleet-bundle-target-positive")
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := gateContext(t, snap, "")
	fs, err := apiRemoved.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b *finding.Finding
	for i := range fs {
		if fs[i].Object.Kind == "Bundle" {
			b = &fs[i]
		}
	}
	if b == nil || b.ID != "api/removed-in-target" || b.Object != ref("fleet.cattle.io/v1alpha1", "Bundle", "fleet-default", "platform-apf") {
		t.Fatalf("want api/removed-in-target on Bundle fleet-default/platform-apf, got %+v", fs)
	}
	want := map[string]string{"bundle": "platform-apf", "fleet-namespace": "fleet-default", "repo": "platform", "path": "apf/flowschema.yaml",
		"group-version": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema", "replacement": "flowcontrol.apiserver.k8s.io/v1",
		"kubernetes-version": "v1.32", "uses": "1"}
	if !reflect.DeepEqual(b.Vars, want) {
		t.Errorf("Vars %v\nwant %v", b.Vars, want)
	}
	for _, st := range b.Remediation {
		for _, c := range st.Commands {
			if strings.HasPrefix(c, "helm ") {
				t.Errorf("a bundle's ladder holds a Helm release command: %s", c)
			}
		}
	}
	cs, err := crdVersions.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Severity != finding.Error || cs[0].Object != ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.apps.example.com") {
		t.Fatalf("want one crd/version-not-served error on widgets.apps.example.com, got %+v", cs)
	}
	wantCRD := map[string]string{"crd": "widgets.apps.example.com", "stored-versions": "v1", "storage-version": "v2", "group": "apps.example.com", "plural": "widgets", "objects": ""}
	if !reflect.DeepEqual(cs[0].Vars, wantCRD) {
		t.Errorf("CRD Vars %v\nwant %v", cs[0].Vars, wantCRD)
	}
}
