package check

import (
	"strings"
	"testing"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// modifiedBD is a BundleDeployment of bundle on cluster, applied and ready, Modified by ms
// (Ready and unmodified when ms is empty).
func modifiedBD(bundle, cluster string, ms ...fleetv1.ModifiedStatus) *snapshot.BundleDeployment {
	bd := &snapshot.BundleDeployment{}
	bd.Name, bd.Namespace = bundle, "cluster-fleet-default-"+cluster+"-1a2b3c4d5e6f"
	bd.Labels = snapshot.Labels{{Key: fleet.LabelBundleName, Value: bundle}, {Key: fleet.LabelBundleNamespace, Value: "fleet-default"}}
	bd.Spec.DeploymentID = "s-41da88bc6422:84561fe48dc9"
	bd.Spec.StagedDeploymentID = bd.Spec.DeploymentID
	bd.Status.AppliedDeploymentID = bd.Spec.DeploymentID
	bd.Status.Ready = true
	bd.Status.NonModified = len(ms) == 0
	bd.Status.ModifiedStatus = ms
	return bd
}

var (
	// rancher/fleet#4655, #4969: Grafana's chart under Helm 4.
	rollingUpdateNull = fleetv1.ModifiedStatus{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "monitoring", Name: "grafana", Patch: `{"spec":{"strategy":{"rollingUpdate":null}}}`}
	// rancher/fleet#2784: dapr's ClusterRoles.
	managedByHelm = fleetv1.ModifiedStatus{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "dapr-injector", Patch: `{"metadata":{"labels":{"app.kubernetes.io/managed-by":"helm"}}}`}
	// Someone changed a value by hand.
	handEdit = fleetv1.ModifiedStatus{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "web-config", Patch: `{"data":{"LOG_LEVEL":"info"}}`}
)

// The same patch of defaulted or Helm-owned fields on most clusters is an artefact, with the
// comparePatches entry filled in; drift on one cluster, a patch of other fields, or a missing
// object keeps today's wording.
func TestBundleModifiedArtefact(t *testing.T) {
	for _, c := range []struct {
		name string
		bds  []*snapshot.BundleDeployment
		want []string // in the first Modified finding's summary and realign step; nil: drift
	}{
		{"rollingUpdate null on 3 of 3 clusters", []*snapshot.BundleDeployment{
			modifiedBD("monitoring-grafana", "prod-eu-1", rollingUpdateNull), modifiedBD("monitoring-grafana", "prod-eu-2", rollingUpdateNull), modifiedBD("monitoring-grafana", "prod-us-1", rollingUpdateNull)},
			[]string{"same patch as on 3 of its 3 clusters", `diff: {comparePatches: [{apiVersion: apps/v1, kind: Deployment, name: grafana, namespace: monitoring, operations: [{op: remove, path: "/spec/strategy/rollingUpdate"}]}]}`}},
		{"managed-by label on 2 of 3 clusters", []*snapshot.BundleDeployment{
			modifiedBD("dapr", "prod-eu-1", managedByHelm), modifiedBD("dapr", "prod-eu-2", managedByHelm), modifiedBD("dapr", "prod-us-1")},
			[]string{"2 of its 3 clusters", `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: dapr-injector, operations: [{op: remove, path: "/metadata/labels/app.kubernetes.io~1managed-by"}]}`}},
		{"managed-by label on 1 of 3 clusters", []*snapshot.BundleDeployment{
			modifiedBD("dapr", "prod-eu-1", managedByHelm), modifiedBD("dapr", "prod-eu-2"), modifiedBD("dapr", "prod-us-1")}, nil},
		{"a hand edit everywhere", []*snapshot.BundleDeployment{
			modifiedBD("web", "prod-eu-1", handEdit), modifiedBD("web", "prod-eu-2", handEdit)}, nil},
		{"an artefact plus a hand edit", []*snapshot.BundleDeployment{
			modifiedBD("web", "prod-eu-1", rollingUpdateNull, handEdit), modifiedBD("web", "prod-eu-2", rollingUpdateNull, handEdit)}, nil},
		{"an object missing everywhere", []*snapshot.BundleDeployment{
			modifiedBD("web", "prod-eu-1", fleetv1.ModifiedStatus{APIVersion: "v1", Kind: "Service", Namespace: "web", Name: "web", Create: true}),
			modifiedBD("web", "prod-eu-2", fleetv1.ModifiedStatus{APIVersion: "v1", Kind: "Service", Namespace: "web", Name: "web", Create: true})}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &snapshot.Cluster{Name: "local", Role: snapshot.Management, BundleDeployments: c.bds}
			fs, err := fleetBundles.Run(sizeCtx(t, m))
			if err != nil || len(fs) == 0 {
				t.Fatalf("no finding (%v)", err)
			}
			f := fs[0]
			text := f.Summary
			for _, s := range f.Remediation {
				text += "\n" + s.Action
			}
			if c.want == nil {
				if !strings.Contains(f.Summary, "was modified outside Fleet") || strings.Contains(text, "artefact") {
					t.Errorf("drift reported as %q", f.Summary)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in:\n%s", w, text)
				}
			}
			for _, s := range f.Remediation {
				if s.Rung == "resync" {
					t.Errorf("a force update is offered for an artefact it cannot end")
				}
			}
		})
	}
}
