package check

import (
	"testing"

	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// When the input holds the cluster's webhook configurations (a bundle made by hand, or a
// collector that reads them), the finding names the configuration that holds the webhook.
func TestWebhookFindingNamesItsConfiguration(t *testing.T) {
	cfg := &snapshot.Unstructured{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration", Name: "ingress-nginx-admission",
		Object: map[string]any{"webhooks": []any{map[string]any{"name": "validate.nginx.ingress.kubernetes.io",
			"clientConfig": map[string]any{"service": map[string]any{"name": "ingress-nginx-controller-admission", "namespace": "ingress-nginx"}}}}}}
	other := &snapshot.Unstructured{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration", Name: "cert-manager-webhook",
		Object: map[string]any{"webhooks": []any{map[string]any{"name": "webhook.cert-manager.io"}}}}
	c := &snapshot.Cluster{Name: "shop-eu-1", Other: []*snapshot.Unstructured{other, cfg}}
	if got := webhookConfig(c, "validate.nginx.ingress.kubernetes.io"); got != cfg {
		t.Fatalf("webhookConfig = %v, want %s", got, cfg.Name)
	}
	if got := webhookConfig(c, "validate.other.example.com"); got != nil {
		t.Errorf("a webhook no configuration holds was found in %s", got.Name)
	}
	w, _ := messages.ParseWebhook(`failed calling webhook "validate.nginx.ingress.kubernetes.io": failed to call webhook: Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/x": service "ingress-nginx-controller-admission" not found`)
	want := `admission webhook "validate.nginx.ingress.kubernetes.io" (ValidatingWebhookConfiguration ingress-nginx-admission) cannot be called: its Service ingress-nginx/ingress-nginx-controller-admission does not exist`
	if got := webhookWhat(w, cfg); got != want {
		t.Errorf("webhookWhat:\n got %s\nwant %s", got, want)
	}
}
