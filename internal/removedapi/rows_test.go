package removedapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// Each row says what the deprecation guide and the API server say: removal release,
// replacement (followed to a version still served) and whether a plain apiVersion rewrite is
// enough.
func TestRowsSayWhatKubernetesSays(t *testing.T) {
	cases := []struct {
		apiVersion, kind, removed, replacement string
		review                                 string // a word the review note holds; "" for a plain rewrite
	}{
		{"events.k8s.io/v1beta1", "Event", "1.25", "events.k8s.io/v1", "reportingController"},
		{"node.k8s.io/v1beta1", "RuntimeClass", "1.25", "node.k8s.io/v1", ""},
		{"policy/v1beta1", "PodDisruptionBudget", "1.25", "policy/v1", "empty spec.selector"},
		{"policy/v1beta1", "Eviction", "1.25", "policy/v1", ""},
		{"policy/v1beta1", "PodSecurityPolicy", "1.25", "", "Pod Security Admission"},
		{"extensions/v1beta1", "PodSecurityPolicy", "1.16", "", "Pod Security Admission"},
		{"flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", "1.26", "flowcontrol.apiserver.k8s.io/v1", ""},
		{"flowcontrol.apiserver.k8s.io/v1beta1", "PriorityLevelConfiguration", "1.26", "flowcontrol.apiserver.k8s.io/v1", "nominalConcurrencyShares"},
		{"flowcontrol.apiserver.k8s.io/v1beta2", "PriorityLevelConfiguration", "1.29", "flowcontrol.apiserver.k8s.io/v1", "assuredConcurrencyShares"},
		{"flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.32", "flowcontrol.apiserver.k8s.io/v1", ""},
		{"storage.k8s.io/v1alpha1", "CSIStorageCapacity", "1.24", "storage.k8s.io/v1", ""},
		{"admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicy", "1.34", "admissionregistration.k8s.io/v1", ""},
		{"admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicyBinding", "1.34", "admissionregistration.k8s.io/v1", ""},
		{"admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration", "1.22", "admissionregistration.k8s.io/v1", "sideEffects"},
		{"networking.k8s.io/v1beta1", "IngressClass", "1.22", "networking.k8s.io/v1", ""},
		{"networking.k8s.io/v1beta1", "Ingress", "1.22", "networking.k8s.io/v1", "pathType"},
		// Rows that read "no replacement" although a GA (or newer) version is served.
		{"admissionregistration.k8s.io/v1alpha1", "ValidatingAdmissionPolicy", "1.32", "admissionregistration.k8s.io/v1", ""},
		{"networking.k8s.io/v1beta1", "ServiceCIDR", "1.37", "networking.k8s.io/v1", ""},
		{"networking.k8s.io/v1beta1", "IPAddress", "1.37", "networking.k8s.io/v1", ""},
		{"certificates.k8s.io/v1alpha1", "ClusterTrustBundle", "1.37", "certificates.k8s.io/v1", ""},
		{"resource.k8s.io/v1beta1", "ResourceClaim", "1.38", "resource.k8s.io/v1", "exactly"},
		{"resource.k8s.io/v1beta2", "ResourceSlice", "1.39", "resource.k8s.io/v1", ""},
		{"coordination.k8s.io/v1alpha2", "LeaseCandidate", "1.38", "coordination.k8s.io/v1beta1", ""},
		{"authentication.k8s.io/v1alpha1", "SelfSubjectReview", "1.32", "authentication.k8s.io/v1", ""},
		{"authentication.k8s.io/v1beta1", "SelfSubjectReview", "1.33", "authentication.k8s.io/v1", ""},
		// Rows for types deleted from k8s.io/api.
		{"scheduling.k8s.io/v1alpha2", "Workload", "1.37", "scheduling.k8s.io/v1beta1", "alpha"},
		{"scheduling.k8s.io/v1alpha2", "PodGroup", "1.37", "scheduling.k8s.io/v1beta1", "alpha"},
		{"scheduling.k8s.io/v1alpha1", "Workload", "1.36", "scheduling.k8s.io/v1beta1", "alpha"},
		{"storagemigration.k8s.io/v1alpha1", "StorageVersionMigration", "1.35", "storagemigration.k8s.io/v1", "alpha"},
		{"certificates.k8s.io/v1alpha1", "PodCertificateRequest", "1.35", "certificates.k8s.io/v1", "alpha"},
		{"resource.k8s.io/v1alpha3", "ResourceClaim", "1.34", "resource.k8s.io/v1", "exactly"},
		{"resource.k8s.io/v1alpha3", "DeviceClass", "1.34", "resource.k8s.io/v1", ""},
		{"resource.k8s.io/v1alpha3", "PodSchedulingContext", "1.32", "", ""},
		{"resource.k8s.io/v1alpha2", "PodSchedulingContext", "1.31", "", ""},
		{"coordination.k8s.io/v1alpha1", "LeaseCandidate", "1.32", "coordination.k8s.io/v1beta1", "alpha"},
		{"resource.k8s.io/v1alpha2", "ResourceClaim", "1.31", "resource.k8s.io/v1", "structured parameters"},
		{"networking.k8s.io/v1alpha1", "ClusterCIDR", "1.29", "", ""},
		// Rows kept from before, unchanged.
		{"batch/v1beta1", "CronJob", "1.25", "batch/v1", ""},
		{"extensions/v1beta1", "Deployment", "1.16", "apps/v1", "spec.selector"},
		{"autoscaling/v2beta2", "HorizontalPodAutoscaler", "1.26", "autoscaling/v2", ""},
		{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", "1.22", "apiextensions.k8s.io/v1", "structural schema"},
	}
	for _, c := range cases {
		r, ok := Lookup(c.apiVersion, c.kind)
		if !ok {
			t.Errorf("Lookup(%s, %s): no row", c.apiVersion, c.kind)
			continue
		}
		if r.RemovedIn != c.removed || r.ReplacementAPIVersion() != c.replacement {
			t.Errorf("%s %s: removed in %s → %q, want %s → %q", c.apiVersion, c.kind, r.RemovedIn, r.ReplacementAPIVersion(), c.removed, c.replacement)
		}
		if c.replacement != "" && r.Replacement.Kind != c.kind {
			t.Errorf("%s %s: replacement kind %s", c.apiVersion, c.kind, r.Replacement.Kind)
		}
		if (c.review == "") != (r.Review == "") || !strings.Contains(r.Review, c.review) {
			t.Errorf("%s %s: review %q, want one holding %q", c.apiVersion, c.kind, r.Review, c.review)
		}
		if r.Source == "" {
			t.Errorf("%s %s: no source", c.apiVersion, c.kind)
		}
	}
	if r, _ := Lookup("events.k8s.io/v1beta1", "Event"); strings.Contains(r.Review, "renames") {
		t.Errorf("events.k8s.io/v1 keeps v1beta1's field names; review says %q", r.Review)
	}
	for _, gv := range [][2]string{{"apps/v1", "Deployment"}, {"policy/v1", "PodDisruptionBudget"}, {"v1", "Pod"}, {"v1", "Endpoints"}, {"fleet.cattle.io/v1alpha1", "Bundle"}, {"not a version//", "X"}} {
		if r, ok := Lookup(gv[0], gv[1]); ok {
			t.Errorf("Lookup(%s, %s) = %+v, want not removed", gv[0], gv[1], r)
		}
	}
}

// A cluster is offered the newest version of the chain it serves: never one it no longer
// serves, never one it does not serve yet.
func TestReplacementAtFollowsTheChain(t *testing.T) {
	cases := []struct {
		apiVersion, kind string
		minor            int
		want             string
	}{
		{"flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", 26, "flowcontrol.apiserver.k8s.io/v1beta3"},
		{"flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", 29, "flowcontrol.apiserver.k8s.io/v1"},
		{"flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", 33, "flowcontrol.apiserver.k8s.io/v1"},
		{"extensions/v1beta1", "PodSecurityPolicy", 20, "policy/v1beta1"},
		{"extensions/v1beta1", "PodSecurityPolicy", 25, ""},
		{"scheduling.k8s.io/v1alpha1", "Workload", 36, "scheduling.k8s.io/v1alpha2"},
		{"scheduling.k8s.io/v1alpha1", "Workload", 37, "scheduling.k8s.io/v1beta1"},
		{"admissionregistration.k8s.io/v1alpha1", "MutatingAdmissionPolicy", 35, "admissionregistration.k8s.io/v1beta1"},
		{"admissionregistration.k8s.io/v1alpha1", "MutatingAdmissionPolicy", 36, "admissionregistration.k8s.io/v1"},
		{"networking.k8s.io/v1beta1", "ServiceCIDR", 32, ""},
		{"networking.k8s.io/v1beta1", "ServiceCIDR", 33, "networking.k8s.io/v1"},
	}
	for _, c := range cases {
		r, ok := find(c.apiVersion, c.kind)
		if !ok {
			t.Fatalf("%s %s: no row", c.apiVersion, c.kind)
		}
		if got := r.At(c.minor).ReplacementAPIVersion(); got != c.want {
			t.Errorf("%s %s at 1.%d: replacement %q, want %q", c.apiVersion, c.kind, c.minor, got, c.want)
		}
	}
}

// APIs deprecated but still served at targets 1.33 to 1.37 are reported with the release that
// removes them; a removal after the newest known release reads as a plan.
func TestDeprecatedInTarget(t *testing.T) {
	cases := []struct {
		apiVersion, kind string
		minor            int
		replacement      string
		removal          string
	}{
		{"v1", "Endpoints", 33, "discovery.k8s.io/v1 EndpointSlice", "no removal planned"},
		{"admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicy", 33, "admissionregistration.k8s.io/v1", "removed in Kubernetes 1.34"},
		{"storage.k8s.io/v1alpha1", "VolumeAttributesClass", 33, "storage.k8s.io/v1beta1", "removed in Kubernetes 1.35"},
		{"storage.k8s.io/v1beta1", "VolumeAttributesClass", 34, "storage.k8s.io/v1", "removed in Kubernetes 1.37"},
		{"networking.k8s.io/v1beta1", "ServiceCIDR", 34, "networking.k8s.io/v1", "removed in Kubernetes 1.37"},
		{"networking.k8s.io/v1beta1", "IPAddress", 36, "networking.k8s.io/v1", "removed in Kubernetes 1.37"},
		{"certificates.k8s.io/v1alpha1", "ClusterTrustBundle", 34, "certificates.k8s.io/v1beta1", "removed in Kubernetes 1.37"},
		{"resource.k8s.io/v1beta1", "ResourceClaim", 35, "resource.k8s.io/v1", "removal planned for Kubernetes 1.38"},
		{"resource.k8s.io/v1beta2", "DeviceClass", 36, "resource.k8s.io/v1", "removal planned for Kubernetes 1.39"},
		{"resource.k8s.io/v1alpha3", "DeviceTaintRule", 36, "resource.k8s.io/v1beta2", "removal planned for Kubernetes 1.39"},
		{"resource.k8s.io/v1alpha3", "DeviceTaintRule", 37, "resource.k8s.io/v1", "removal planned for Kubernetes 1.39"},
		{"admissionregistration.k8s.io/v1alpha1", "MutatingAdmissionPolicy", 35, "admissionregistration.k8s.io/v1beta1", "removal planned for Kubernetes 1.38"},
		{"admissionregistration.k8s.io/v1beta1", "MutatingAdmissionPolicyBinding", 37, "admissionregistration.k8s.io/v1", "removal planned for Kubernetes 1.40"},
		{"coordination.k8s.io/v1alpha2", "LeaseCandidate", 35, "coordination.k8s.io/v1beta1", "removal planned for Kubernetes 1.38"},
		{"coordination.k8s.io/v1beta1", "LeaseCandidate", 36, "", "removal planned for Kubernetes 1.39"},
		{"certificates.k8s.io/v1beta1", "ClusterTrustBundle", 37, "certificates.k8s.io/v1", "removal planned for Kubernetes 1.40"},
		{"certificates.k8s.io/v1beta1", "PodCertificateRequest", 37, "certificates.k8s.io/v1", "removal planned for Kubernetes 1.40"},
		{"storagemigration.k8s.io/v1beta1", "StorageVersionMigration", 37, "storagemigration.k8s.io/v1", "removal planned for Kubernetes 1.40"},
	}
	for _, c := range cases {
		r, ok := Deprecated(c.apiVersion, c.kind, c.minor)
		if !ok {
			t.Errorf("%s %s at 1.%d: not deprecated", c.apiVersion, c.kind, c.minor)
			continue
		}
		if r.ReplacementText() != c.replacement || r.RemovalText() != c.removal {
			t.Errorf("%s %s at 1.%d: → %q, %s; want → %q, %s", c.apiVersion, c.kind, c.minor, r.ReplacementText(), r.RemovalText(), c.replacement, c.removal)
		}
	}
	for _, c := range []struct {
		apiVersion, kind string
		minor            int
	}{
		{"v1", "Endpoints", 32}, // not yet deprecated
		{"admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicy", 34}, // removed, not deprecated
		{"v1", "Service", 37},
		{"discovery.k8s.io/v1", "EndpointSlice", 37},
	} {
		if r, ok := Deprecated(c.apiVersion, c.kind, c.minor); ok {
			t.Errorf("%s %s at 1.%d: reported deprecated (%+v)", c.apiVersion, c.kind, c.minor, r)
		}
	}
}

// A policy/v1beta1 PodDisruptionBudget is a plain rewrite unless its selector is explicitly
// empty, which matches no pod in v1beta1 and every pod of the namespace in v1.
func TestPodDisruptionBudgetReviewOnlyForAnEmptySelector(t *testing.T) {
	pdb, _ := Lookup("policy/v1beta1", "PodDisruptionBudget")
	obj := func(spec string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(`{"apiVersion":"policy/v1beta1","kind":"PodDisruptionBudget","spec":`+spec+`}`), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for spec, want := range map[string]bool{
		`{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}`:                            false,
		`{"minAvailable":1,"selector":{"matchExpressions":[{"key":"app","operator":"Exists"}]}}`: false,
		`{"minAvailable":1}`:                               false,
		`{"minAvailable":1,"selector":{}}`:                 true,
		`{"minAvailable":1,"selector":{"matchLabels":{}}}`: true,
	} {
		if got := pdb.NeedsReview(obj(spec)); got != want {
			t.Errorf("spec %s: NeedsReview %v, want %v", spec, got, want)
		}
	}
	if pdb.NeedsReview(nil) {
		t.Error("content unknown: a PodDisruptionBudget is not refused by kind alone")
	}
	if ing, _ := Lookup("extensions/v1beta1", "Ingress"); !ing.NeedsReview(nil) {
		t.Error("an Ingress always needs a review")
	}
	if cj, _ := Lookup("batch/v1beta1", "CronJob"); cj.NeedsReview(nil) {
		t.Error("a CronJob is a plain rewrite")
	}
}
