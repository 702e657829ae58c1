package check

import (
	"strings"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A Fleet dump may hold a management cluster's Bundles without their BundleDeployments: the
// Bundle's summary repeats each deployment's error (Fleet v0.12+ bundle status,
// status.summary.nonReadyResources[] named after the Fleet Cluster "namespace/name"), and the
// same parser reads it there, on the cluster the entry names.
func TestBundleSummaryIsReadAsAQuote(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	fc := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-default", Name: "shop-eu-1"}}
	fc.Status.Namespace = "cluster-fleet-default-shop-eu-1-5e1b2c"
	b := &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-default", Name: "shop-app"}}
	b.Status.Summary.NonReadyResources = []fleetv1.NonReadyResource{{
		Name: "fleet-default/shop-eu-1", State: fleetv1.ErrApplied,
		// Helm 4 (Fleet v0.13+) drops Helm 3's "unable to build kubernetes objects" prefix.
		Message: "resource mapping not found for name: \"shop-app\" namespace: \"shop\" from \"\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\nensure CRDs are installed first",
	}, {
		Name: "fleet-default/unknown-cluster", State: fleetv1.ErrApplied,
		Message: "no matches for kind \"PodMonitor\" in version \"monitoring.coreos.com/v1\"",
	}}
	m := &snapshot.Cluster{Name: "local", Role: snapshot.Management, FleetClusters: []*fleetv1.Cluster{fc}, Bundles: []*fleetv1.Bundle{b}}
	ctx := &Context{Snap: &snapshot.Snapshot{Clusters: []*snapshot.Cluster{m}}, Now: time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), Thresholds: NewThresholds(cat), Catalog: cat}
	fs, err := crdMissing.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("want one crd/missing (the entry whose cluster is known), got %d: %+v", len(fs), fs)
	}
	f := fs[0]
	for _, want := range []string{"servicemonitors.monitoring.coreos.com", "shop-eu-1", "kind ServiceMonitor (monitoring.coreos.com/v1)", "bundle shop-app"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary %q does not name %s", f.Summary, want)
		}
	}
	if f.Affects != "shop-eu-1" || !hasKey(f.Keys, BundleKey("fleet-default/shop-eu-1", "shop-app")) {
		t.Errorf("affects %q keys %v: the finding must land on shop-eu-1 in the bundle's incident", f.Affects, f.Keys)
	}
	if len(f.Evidence) == 0 || !strings.Contains(f.Evidence[0].Source, "status.summary.nonReadyResources[0]") {
		t.Errorf("evidence %+v does not say where the quote was read", f.Evidence)
	}
}

// A controller's FailedCreate event is read with the parser a bundle's quote is: the finding
// names the webhook, the configuration holding it and its Service, and carries the webhook's
// key, so a bundle refused by the same webhook joins it; a quota refusal names the quota.
func TestFailedCreateEventNamesWhatRefused(t *testing.T) {
	cfg := &snapshot.Unstructured{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration", Name: "kyverno-resource-validating-webhook-cfg",
		Object: map[string]any{"webhooks": []any{map[string]any{"name": "validate.kyverno.svc-fail"}}}}
	c := &snapshot.Cluster{Name: "shop-eu-1", Other: []*snapshot.Unstructured{cfg}}
	cases := []struct {
		id, msg, what string
		vars          map[string]string
		keys          []string
	}{
		{
			// kube-controller-manager replica_set.go FailedCreate ("Error creating: %v");
			// k8s.io/apiserver ErrCallingWebhook, proxy.ResolveEndpoint.
			id:   "workload/webhook-unavailable",
			msg:  `Error creating: Internal error occurred: failed calling webhook "validate.kyverno.svc-fail": failed to call webhook: Post "https://kyverno-svc.kyverno.svc:443/validate/fail?timeout=10s": no endpoints available for service "kyverno-svc"`,
			what: `admission webhook "validate.kyverno.svc-fail" (ValidatingWebhookConfiguration kyverno-resource-validating-webhook-cfg) cannot be called: its Service kyverno/kyverno-svc has no ready endpoints`,
			vars: map[string]string{"namespace": "kyverno", "service": "kyverno-svc", "webhook": "kyverno-resource-validating-webhook-cfg"},
			keys: []string{"webhook:shop-eu-1/validate.kyverno.svc-fail"},
		},
		{
			// k8s.io/apiserver resourcequota/controller.go CheckRequest, older aggregate form
			// (k8s.io/apimachinery utilerrors.NewAggregate: "[a, b]").
			id:   "workload/quota-exceeded",
			msg:  `Error creating: pods "fleet-agent-5c8d9f7b46-" is forbidden: failed quota: default-q7x2n: [must specify limits.cpu for: fleet-agent, must specify limits.memory for: fleet-agent]`,
			what: "ResourceQuota default-q7x2n refuses pods fleet-agent-5c8d9f7b46- ([must specify limits.cpu for: fleet-agent, must specify limits.memory for: fleet-agent])",
			vars: map[string]string{"quota": "default-q7x2n"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			what, vars, keys := createRefusal(c, tc.id, tc.msg)
			if what != tc.what {
				t.Errorf("what:\n got %s\nwant %s", what, tc.what)
			}
			for k, v := range tc.vars {
				if vars[k] != v {
					t.Errorf("vars[%s] = %q, want %q", k, vars[k], v)
				}
			}
			if strings.Join(keys, ",") != strings.Join(tc.keys, ",") {
				t.Errorf("keys %v, want %v", keys, tc.keys)
			}
		})
	}
}

// A SUC Job's Failed condition is read as a quote in its Plan's incident: it carries the
// Plan's key and says where it was read.
func TestSUCQuotesCarryThePlanKey(t *testing.T) {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "system-upgrade", Name: "apply-k3s-agent-on-worker-1-with-2b3debe",
		Labels: map[string]string{"upgrade.cattle.io/plan": "k3s-agent", "upgrade.cattle.io/node": "worker-1"}}}
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}
	c := &snapshot.Cluster{Name: "edge-1", Jobs: []*batchv1.Job{j}}
	qs := sucQuotes(c)
	if len(qs) != 1 || qs[0].target != c || !hasKey(qs[0].keys, PlanKey("edge-1", "system-upgrade", "k3s-agent")) ||
		!strings.HasSuffix(qs[0].source, "status.conditions[Failed]") || qs[0].msg != "Job has reached the specified backoff limit" {
		t.Errorf("quotes %+v", qs)
	}
}

func hasKey(keys []string, k string) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}
