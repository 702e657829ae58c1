package execute

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/remediate"
)

const (
	oldID = "s-b744a663bd7fc20fe4e4b861d880c591a04815fc778ae096525bebae95102:2bd5c93f5965d2cdeabdeeb8f288d0cefdebf87c92fa0d32e7f87d26832624a3"
	newID = "s-b744a663bd7fc20fe4e4b861d880c591a04815fc778ae096525bebae95102:67bbdcbeb69b1b0cf208aa0f55abeca84202d0e5d8f9047d2c861018543bbbe7"
	// The Helm 3 error the Fleet agent reports for a chart whose kind the cluster does not serve.
	noKind = "unable to build kubernetes objects from release manifest: resource mapping not found for name: \"ingress-nginx-controller\" namespace: \"ingress-nginx\" from \"\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\nensure CRDs are installed first"
)

// bundleDeployment is a BundleDeployment as the Fleet agent reports it: spec.deploymentID
// spec, status.appliedDeploymentID applied, and the conditions given (type=status[:reason]).
func bundleDeployment(t *testing.T, uid, spec, applied string, ready bool, conds ...string) *unstructured.Unstructured {
	t.Helper()
	var cs []any
	for _, c := range conds {
		typ, rest, _ := strings.Cut(c, "=")
		status, reason, _ := strings.Cut(rest, ":")
		m := map[string]any{"type": typ, "status": status, "lastUpdateTime": "2026-11-28T07:50:00Z"}
		if reason != "" {
			m["reason"], m["message"] = reason, noKind
		}
		cs = append(cs, m)
	}
	doc := map[string]any{"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "BundleDeployment",
		"metadata": map[string]any{"name": "platform-ingress-nginx", "namespace": "cluster-fleet-default-c-m-8k2lq-d39d68e554a5", "uid": uid},
		"spec":     map[string]any{"deploymentID": spec, "stagedDeploymentID": spec},
		"status":   map[string]any{"appliedDeploymentID": applied, "ready": ready, "nonModified": true, "conditions": cs}}
	b, _ := yaml.Marshal(doc)
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// What a BundleDeployment shows after a step, judged against what the step must bring about.
func TestBundleDeployedOutcome(t *testing.T) {
	const uid = "8a3c7d3b-4b88-d3b3-5d9c-3497b665fc53"
	resync := &remediate.BundleDeploymentRef{Name: "platform-ingress-nginx", UID: uid, DeploymentID: oldID, NewDeployment: true}
	deleted := &remediate.BundleDeploymentRef{Name: "platform-ingress-nginx", UID: uid, DeploymentID: oldID, NewObject: true}
	ready := []string{"Installed=True", "Deployed=True", "Ready=True", "Monitored=True"}
	cases := []struct {
		name string
		bd   *unstructured.Unstructured
		ref  *remediate.BundleDeploymentRef
		ok   bool
		says string
	}{
		{"the controller has not deployed again", bundleDeployment(t, uid, oldID, "s-a3954e:7cda23", true, "Installed=True", "Deployed=False:Error", "Ready=True"), resync, false, "has no new deploymentID yet"},
		// Fleet's agent leaves appliedDeploymentID at the old one when the apply fails again.
		{"deployed again, failing again", bundleDeployment(t, uid, newID, "s-a3954e:7cda23", true, "Installed=True", "Deployed=False:Error", "Ready=True"), resync, false, "is ErrApplied; Deployed=False: unable to build kubernetes objects"},
		// ...and sets it for a failure it will not retry (deployErrToStatus), NotReady.
		{"applied, refused", bundleDeployment(t, uid, newID, newID, false, "Installed=False:Error", "Ready=False"), resync, false, "is NotReady; Installed=False: unable to build"},
		// A failed upgrade leaves Ready=True from the release before it: the error condition counts.
		{"Ready, but in error", bundleDeployment(t, uid, newID, newID, true, "Installed=True", "Deployed=True:Error", "Ready=True"), resync, false, "is Ready; Deployed=True: unable to build"},
		{"Ready at the new deploymentID", bundleDeployment(t, uid, newID, newID, true, ready...), resync, true, ""},
		{"Ready at the old deploymentID", bundleDeployment(t, uid, oldID, oldID, true, ready...), resync, false, "has no new deploymentID yet"},
		{"the deleted object, still there", bundleDeployment(t, uid, oldID, oldID, true, ready...), deleted, false, "is still the object the step deleted"},
		{"re-created and Ready", bundleDeployment(t, "0c1d2e3f-0000-4000-8000-000000000001", oldID, oldID, true, ready...), deleted, true, ""},
		{"not re-created yet", nil, deleted, false, "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := bundleDeployed(tc.bd, tc.ref)
			if ok != tc.ok || !strings.Contains(why, tc.says) {
				t.Errorf("got %v %q, want %v and %q", ok, why, tc.ok, tc.says)
			}
			if strings.Contains(why, "\n") {
				t.Errorf("the quoted message spans lines: %q", why)
			}
		})
	}
}

// An incident's outcome from its steps: a failure outranks an unverified step, which outranks
// a step not run; an attempt that verified makes it fixed.
func TestIncidentOutcome(t *testing.T) {
	inc := remediate.IncidentPlan{ID: "i1"}
	step := func(n int, status string) Outcome {
		return Outcome{Number: n, Status: status, Message: status + " message", Step: remediate.Step{Rung: "resync", Target: remediate.Object{Kind: "Bundle", Namespace: "fleet-default", Name: "web"}}}
	}
	cases := []struct {
		steps []Outcome
		fixed bool
		want  string
		says  string
	}{
		{[]Outcome{step(1, StatusSaved), step(2, StatusUnverified), step(3, StatusVerified)}, true, IncidentFixed, ""},
		{[]Outcome{step(1, StatusSaved), step(2, StatusUnverified), step(3, StatusFailed)}, false, IncidentFailed, "step 3"},
		{[]Outcome{step(1, StatusSaved), step(2, StatusAboveRisk), step(3, StatusUnverified)}, false, IncidentUnverified, "step 3"},
		{[]Outcome{step(1, StatusSaved), step(2, StatusDeclined)}, false, IncidentOpen, "declined message"},
		{[]Outcome{step(1, StatusDone)}, false, IncidentOpen, ""},
		{[]Outcome{{Number: 1, Status: StatusDone, Message: "finished in an earlier run: unverified"}}, false, IncidentUnverified, "step 1"},
	}
	for i, tc := range cases {
		got := incidentOutcome(inc, tc.steps, tc.fixed)
		if got.Outcome != tc.want || !strings.Contains(got.Message, tc.says) {
			t.Errorf("case %d: %s %q, want %s and %q", i, got.Outcome, got.Message, tc.want, tc.says)
		}
	}
}

// The last gate: an incident whose steps all verified is unverified while the clusters, judged
// again, still show its root cause (the same ID, cluster and object, a re-created object
// included), or cannot be judged. The recheck is a function the executor is given; here it
// returns what a scan would, as no cluster is needed to test the decision.
func TestRecheckDemotesWhatIsStillDetected(t *testing.T) {
	bdRef := finding.ObjectRef{APIVersion: "fleet.cattle.io/v1alpha1", Kind: "BundleDeployment", Namespace: "cluster-fleet-default-c-m-8k2lq-d39d68e554a5", Name: "platform-ingress-nginx"}
	root := remediate.Reason{FindingID: "fleet/bundle-err-applied", Cluster: "local", Object: bdRef}
	other := bdRef
	other.Name = "platform-cert-manager"
	cases := []struct {
		name  string
		found []finding.Finding
		err   error
		want  string
		says  string
	}{
		{"still detected", []finding.Finding{{ID: "fleet/bundle-err-applied", Cluster: "local", Object: bdRef, Summary: "bundle platform-ingress-nginx cannot be applied\non cluster prod-eu-1"}}, nil,
			IncidentUnverified, "a scan run now still detects fleet/bundle-err-applied on local BundleDeployment/cluster-fleet-default-c-m-8k2lq-d39d68e554a5/platform-ingress-nginx: bundle platform-ingress-nginx cannot be applied⏎on cluster prod-eu-1"},
		{"another object", []finding.Finding{{ID: "fleet/bundle-err-applied", Cluster: "local", Object: other}}, nil, IncidentFixed, ""},
		{"another cluster", []finding.Finding{{ID: "fleet/bundle-err-applied", Cluster: "prod-eu-1", Object: bdRef}}, nil, IncidentFixed, ""},
		{"another finding on it", []finding.Finding{{ID: "fleet/bundle-modified", Cluster: "local", Object: bdRef}}, nil, IncidentFixed, ""},
		{"not judged", nil, errors.New("listing bundledeployments.fleet.cattle.io: the server is currently unable to handle the request"), IncidentUnverified, "could not be judged again"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			calls := 0
			e := &Executor{opts: Options{Out: &out, Recheck: func(context.Context) ([]finding.Finding, error) { calls++; return tc.found, tc.err }}}
			res := &Result{Incidents: []IncidentOutcome{
				{ID: "i1", RootCause: root, Outcome: IncidentFixed},
				{ID: "i2", RootCause: root, Outcome: IncidentOpen, Message: "declined"},
			}}
			e.recheck(context.Background(), res)
			if got := res.Incidents[0]; got.Outcome != tc.want || !strings.Contains(got.Message, tc.says) {
				t.Errorf("%s %q, want %s and %q", got.Outcome, got.Message, tc.want, tc.says)
			}
			if res.Incidents[1].Outcome != IncidentOpen || calls != 1 {
				t.Errorf("the open incident became %s; the clusters were judged %d times, want once", res.Incidents[1].Outcome, calls)
			}
		})
	}
	// Nothing fixed: nothing to confirm, the clusters are not read again.
	e := &Executor{opts: Options{Out: &bytes.Buffer{}, Recheck: func(context.Context) ([]finding.Finding, error) {
		t.Error("judged again with no incident fixed")
		return nil, nil
	}}}
	e.recheck(context.Background(), &Result{Incidents: []IncidentOutcome{{ID: "i1", RootCause: root, Outcome: IncidentUnverified}}})
}
