package messages

import (
	"reflect"
	"testing"
)

func TestParseWebhook(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              *WebhookFailure
	}{
		{
			name:   "Service missing",
			source: "k8s.io/apiserver pkg/util/webhook/error.go ErrCallingWebhook; pkg/util/proxy/proxy.go ResolveEndpoint (\"service %q not found\")",
			msg:    `Internal error occurred: failed calling webhook "validate.nginx.ingress.kubernetes.io": failed to call webhook: Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses?timeout=10s": service "ingress-nginx-controller-admission" not found`,
			want:   &WebhookFailure{Webhook: "validate.nginx.ingress.kubernetes.io", Service: "ingress-nginx-controller-admission", ServiceNamespace: "ingress-nginx", ServiceMissing: true, Reason: `service "ingress-nginx-controller-admission" not found`, Backend: BackendServiceMissing},
		},
		{
			name:   "no endpoints, quoted by Helm in a Fleet condition",
			source: "k8s.io/apiserver pkg/util/proxy/proxy.go ResolveEndpoint (\"no endpoints available for service %q\")",
			msg:    `error while running post render on files: failed to create resource: Internal error occurred: failed calling webhook "webhook.cert-manager.io": failed to call webhook: Post "https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s": no endpoints available for service "cert-manager-webhook"`,
			want:   &WebhookFailure{Webhook: "webhook.cert-manager.io", Service: "cert-manager-webhook", ServiceNamespace: "cert-manager", NoEndpoints: true, Reason: `no endpoints available for service "cert-manager-webhook"`, Backend: BackendNoEndpoints},
		},
		{
			name:   "connection refused, Service exists",
			source: "k8s.io/apiserver pkg/admission/plugin/webhook/validating/dispatcher.go callHook (\"failed to call webhook: %w\")",
			msg:    `Internal error occurred: failed calling webhook "rancher.cattle.io.namespaces": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/validation/namespaces?timeout=10s": dial tcp 10.43.12.7:443: connect: connection refused`,
			want:   &WebhookFailure{Webhook: "rancher.cattle.io.namespaces", Service: "rancher-webhook", ServiceNamespace: "cattle-system", Reason: "dial tcp 10.43.12.7:443: connect: connection refused", Backend: BackendRefused},
		},
		{
			name:   "no endpoints for rancher-webhook, Rancher's own log (rancher#42699)",
			source: "k8s.io/apiserver pkg/util/proxy/proxy.go ResolveEndpoint; rancher/rancher updateClusterHealth error, as quoted in rancher#42699",
			msg:    `[ERROR] [updateClusterHealth] Failed to update cluster [local]: Internal error occurred: failed calling webhook "rancher.cattle.io.clusters.management.cattle.io": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/mutation/clusters.management.cattle.io?timeout=10s": no endpoints available for service "rancher-webhook"`,
			want:   &WebhookFailure{Webhook: "rancher.cattle.io.clusters.management.cattle.io", Service: "rancher-webhook", ServiceNamespace: "cattle-system", NoEndpoints: true, Reason: `no endpoints available for service "rancher-webhook"`, Backend: BackendNoEndpoints},
		},
		{
			name:   "timed out, FailedCreate event",
			source: "k8s.io/apiserver dispatcher.go callHook; Go net/http client under the webhook's timeout (\"context deadline exceeded\")",
			msg:    `Error creating: Internal error occurred: failed calling webhook "rancher.cattle.io.pods": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/validation/pods?timeout=10s": context deadline exceeded`,
			want:   &WebhookFailure{Webhook: "rancher.cattle.io.pods", Service: "rancher-webhook", ServiceNamespace: "cattle-system", Reason: "context deadline exceeded", Backend: BackendTimeout},
		},
		{
			name:   "certificate not trusted",
			source: "k8s.io/apiserver dispatcher.go callHook; Go crypto/tls and crypto/x509 (\"tls: failed to verify certificate: x509: certificate signed by unknown authority\")",
			msg:    `Internal error occurred: failed calling webhook "rancher.cattle.io.pods": failed to call webhook: Post "https://rancher-webhook.cattle-system.svc:443/v1/webhook/validation/pods?timeout=10s": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
			want:   &WebhookFailure{Webhook: "rancher.cattle.io.pods", Service: "rancher-webhook", ServiceNamespace: "cattle-system", Reason: "tls: failed to verify certificate: x509: certificate signed by unknown authority", Backend: BackendTLS},
		},
		{
			name:   "denied",
			source: "k8s.io/apiserver pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr",
			msg:    `admission webhook "validation.gatekeeper.sh" denied the request: [psp-privileged] Privileged container is not allowed: agent, securityContext: {"privileged": true}`,
			want:   &WebhookFailure{Webhook: "validation.gatekeeper.sh", Denied: true, Reason: `[psp-privileged] Privileged container is not allowed: agent, securityContext: {"privileged": true}`},
		},
		{
			name:   "denied inside Helm 3's UPGRADE FAILED",
			source: "helm/helm v3 cmd/helm/upgrade.go (\"UPGRADE FAILED: %w\"); statuserror.go ToStatusErr",
			msg:    `UPGRADE FAILED: cannot patch "web" with kind Deployment: admission webhook "vdeployment.kb.io" denied the request: replicas must be at least 2`,
			want:   &WebhookFailure{Webhook: "vdeployment.kb.io", Denied: true, Reason: "replicas must be at least 2"},
		},
		{
			name:   "Fleet agent's log line, Helm 4 apply, JSON-escaped",
			source: "rancher/fleet v0.13+ agent (logr JSON, \"error\" field); helm.sh/helm/v4 pkg/kube/client.go; k8s.io/apiserver ErrCallingWebhook",
			msg:    `{"level":"error","msg":"Reconciler error","error":"failed to create resource: Internal error occurred: failed calling webhook \"rancher.cattle.io.namespaces\": failed to call webhook: Post \"https://rancher-webhook.cattle-system.svc:443/v1/webhook/validation/namespaces?timeout=10s\": service \"rancher-webhook\" not found"}`,
			want:   &WebhookFailure{Webhook: "rancher.cattle.io.namespaces", Service: "rancher-webhook", ServiceNamespace: "cattle-system", ServiceMissing: true, Reason: `service "rancher-webhook" not found`, Backend: BackendServiceMissing},
		},
		{
			name:   "not this family",
			source: "k8s.io/apiserver namespace lifecycle",
			msg:    `unable to create new content in namespace shop because it is being terminated`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseWebhook(tt.msg)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseWebhook (%s) ok=%v", tt.source, ok)
			}
			if tt.want != nil && !reflect.DeepEqual(got, *tt.want) {
				t.Errorf("ParseWebhook (%s):\n got %+v\nwant %+v", tt.source, got, *tt.want)
			}
			if tt.want != nil && got.Unavailable() == tt.want.Denied {
				t.Errorf("ParseWebhook (%s): Unavailable()=%v for a denial=%v", tt.source, got.Unavailable(), tt.want.Denied)
			}
		})
	}
}
