package messages

import (
	"reflect"
	"testing"
)

func TestParseMissingKind(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              []MissingKind
	}{
		{
			name:   "Helm 3 install, one document",
			source: "helm/helm v3 pkg/action/install.go (\"unable to build kubernetes objects from release manifest\") around pkg/kube/client.go (\"resource mapping not found for name\")",
			msg:    "Error: INSTALLATION FAILED: unable to build kubernetes objects from release manifest: resource mapping not found for name: \"site\" namespace: \"argocd\" from \"\": no matches for kind \"Application\" in version \"argoproj.io/v1alpha1\"\nensure CRDs are installed first",
			want:   []MissingKind{{Kind: "Application", Group: "argoproj.io", Version: "v1alpha1", Name: "site", Namespace: "argocd"}},
		},
		{
			name:   "Helm 3, several documents joined",
			source: "helm/helm v3 pkg/kube/client.go Build (errors joined in brackets)",
			msg:    "unable to build kubernetes objects from release manifest: [resource mapping not found for name: \"otel-serving-cert\" namespace: \"default\" from \"\": no matches for kind \"Certificate\" in version \"cert-manager.io/v1\"\nensure CRDs are installed first, resource mapping not found for name: \"otel-selfsigned-issuer\" namespace: \"default\" from \"\": no matches for kind \"Issuer\" in version \"cert-manager.io/v1\"\nensure CRDs are installed first]",
			want: []MissingKind{
				{Kind: "Certificate", Group: "cert-manager.io", Version: "v1", Name: "otel-serving-cert", Namespace: "default"},
				{Kind: "Issuer", Group: "cert-manager.io", Version: "v1", Name: "otel-selfsigned-issuer", Namespace: "default"},
			},
		},
		{
			name:   "Helm 4 in a Fleet BundleDeployment condition, no Helm 3 prefix",
			source: "helm.sh/helm/v4 pkg/kube/client.go; rancher/fleet internal/cmd/agent/deployer (Deployed condition message)",
			msg:    "resource mapping not found for name: \"app-monitor\" namespace: \"shop\" from \"\": no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\nensure CRDs are installed first",
			want:   []MissingKind{{Kind: "ServiceMonitor", Group: "monitoring.coreos.com", Version: "v1", Name: "app-monitor", Namespace: "shop"}},
		},
		{
			name:   "bare RESTMapper error in a JSON log line",
			source: "k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError",
			msg:    `{"level":"error","msg":"Reconciler error","error":"no matches for kind \"GitRepo\" in version \"fleet.cattle.io/v1alpha1\""}`,
			want:   []MissingKind{{Kind: "GitRepo", Group: "fleet.cattle.io", Version: "v1alpha1"}},
		},
		{
			name:   "core group",
			source: "k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError",
			msg:    `no matches for kind "Endpoints" in version "v2"`,
			want:   []MissingKind{{Kind: "Endpoints", Version: "v2"}},
		},
		{
			name:   "several versions searched, controller-runtime's log",
			source: "k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError (\"in versions %q\" with the sorted group/versions); sigs.k8s.io/controller-runtime pkg/internal/source/kind.go",
			msg:    `if kind is a CRD, it should be installed before calling Start: no matches for kind "Certificate" in versions ["cert-manager.io/v1" "cert-manager.io/v1beta1"]`,
			want:   []MissingKind{{Kind: "Certificate", Group: "cert-manager.io", Version: "v1"}},
		},
		{
			name:   "no version searched",
			source: "k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError (\"in group %q\")",
			msg:    `failed to get restmapping: no matches for kind "Bundle" in group "fleet.cattle.io"`,
			want:   []MissingKind{{Kind: "Bundle", Group: "fleet.cattle.io"}},
		},
		{
			name:   "kube-apiserver removed API, Helm 3 upgrade",
			source: "helm/helm v3 pkg/action/upgrade.go (\"unable to build kubernetes objects from current release manifest\"); NoKindMatchError for policy/v1beta1 (removed in Kubernetes 1.25)",
			msg:    `UPGRADE FAILED: unable to build kubernetes objects from current release manifest: resource mapping not found for name: "web" namespace: "" from "": no matches for kind "PodDisruptionBudget" in version "policy/v1beta1"` + "\nensure CRDs are installed first",
			want:   []MissingKind{{Kind: "PodDisruptionBudget", Group: "policy", Version: "v1beta1", Name: "web"}},
		},
		{
			name:   "not this family",
			source: "k8s.io/apimachinery pkg/api/errors NewNotFound",
			msg:    `configmaps "x" not found`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseMissingKind(tt.msg)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseMissingKind (%s):\n got %+v\nwant %+v", tt.source, got, tt.want)
			}
		})
	}
}

func TestMissingKindGroupVersion(t *testing.T) {
	if got := (MissingKind{Group: "apps", Version: "v1"}).GroupVersion(); got != "apps/v1" {
		t.Errorf("got %q", got)
	}
	if got := (MissingKind{Version: "v1"}).GroupVersion(); got != "v1" {
		t.Errorf("got %q", got)
	}
}
