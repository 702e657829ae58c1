package classify

import (
	"testing"

	"github.com/unstick-dev/unstick/internal/messages"
)

// The message families classify shares with internal/messages are read by messages' parsers
// alone: a text classify puts in the family is one the family's parser reads, and a text
// that only looks like it (no quoted name, no amounts) is not put there.
func TestFamiliesAreReadByTheirParser(t *testing.T) {
	webhook := func(s string) bool { _, ok := messages.ParseWebhook(s); return ok }
	quota := func(s string) bool { _, ok := messages.ParseQuota(s); return ok }
	kind := func(s string) bool { return len(messages.ParseMissingKind(s)) > 0 }
	cases := []struct {
		name, source, text, id string
		parser                 func(string) bool
	}{
		{"webhook denied, FailedCreate event", "k8s.io/apiserver webhook/errors/statuserror.go ToStatusErr; kube-controller-manager replica_set.go",
			`Error creating: admission webhook "validate.kyverno.svc-fail" denied the request: resource Pod/cattle-fleet-system/ was blocked`, "workload/admission-denied", webhook},
		{"webhook Service missing, Helm 4 in a Fleet condition", "k8s.io/apiserver pkg/util/webhook/error.go ErrCallingWebhook; helm.sh/helm/v4 pkg/kube/client.go",
			`failed to create resource: Internal error occurred: failed calling webhook "validate.nginx.ingress.kubernetes.io": failed to call webhook: Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses?timeout=10s": service "ingress-nginx-controller-admission" not found`, "workload/webhook-unavailable", webhook},
		{"quota, FailedCreate event", "k8s.io/apiserver resourcequota/controller.go CheckRequest",
			`Error creating: pods "cattle-cluster-agent-58d7c9f6b4-" is forbidden: exceeded quota: default-w8k2m, requested: limits.memory=1Gi, used: limits.memory=3584Mi, limited: limits.memory=4Gi`, "workload/quota-exceeded", quota},
		{"quota constraint", "k8s.io/apiserver resourcequota/controller.go CheckRequest (\"failed quota: %s: %v\")",
			`pods "fleet-agent-5c8d9f7b46-" is forbidden: failed quota: default-q7x2n: must specify limits.cpu for: fleet-agent; limits.memory for: fleet-agent`, "workload/quota-exceeded", quota},
		{"missing CRD kind, Helm 3", "helm/helm v3 pkg/action/install.go; k8s.io/apimachinery NoKindMatchError",
			"Error: INSTALLATION FAILED: unable to build kubernetes objects from release manifest: resource mapping not found for name: \"site\" namespace: \"argocd\" from \"\": no matches for kind \"Application\" in version \"argoproj.io/v1alpha1\"\nensure CRDs are installed first", "agent/crd-missing", kind},
		{"missing CRD kind, controller-runtime log", "sigs.k8s.io/controller-runtime pkg/internal/source/kind.go; NoKindMatchError (\"in versions %q\")",
			`{"level":"error","msg":"if kind is a CRD, it should be installed before calling Start","error":"no matches for kind \"Certificate\" in versions [\"cert-manager.io/v1\" \"cert-manager.io/v1beta1\"]"}`, "agent/crd-missing", kind},
		{"removed built-in API, Helm 3 upgrade", "helm/helm v3 pkg/action/upgrade.go; NoKindMatchError for policy/v1beta1",
			"UPGRADE FAILED: unable to build kubernetes objects from current release manifest: resource mapping not found for name: \"web\" namespace: \"\" from \"\": no matches for kind \"PodDisruptionBudget\" in version \"policy/v1beta1\"\nensure CRDs are installed first", "api/removed", kind},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := Classify(tc.text, Any)
			if !ok || m.ID != tc.id {
				t.Fatalf("Classify (%s) = %q, want %s", tc.source, m.ID, tc.id)
			}
			if m.Rule.Family == nil && m.Rule.Regexp != "" {
				t.Errorf("rule %s matched by its own expression, not the family's parser", m.Rule.ID)
			}
			if !tc.parser(tc.text) {
				t.Errorf("the family's parser does not read %q (%s)", tc.text, tc.source)
			}
		})
	}
	// Look-alikes the parsers refuse: no webhook name, a quota word without the refusal.
	for _, text := range []string{
		`failed calling webhook: context deadline exceeded`,
		`exceeded quota: the cluster is full`,
	} {
		if m, ok := Classify(text, Any); ok && (m.ID == "workload/admission-denied" || m.ID == "workload/webhook-unavailable" || m.ID == "workload/quota-exceeded") {
			t.Errorf("%q classified %s, which its family's parser does not read", text, m.ID)
		}
	}
}
