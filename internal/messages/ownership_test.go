package messages

import (
	"reflect"
	"testing"
)

func TestParseOwnership(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              *Ownership
	}{
		{
			name:   "install, object made by hand",
			source: "helm/helm pkg/action/install.go (\"rendered manifests contain a resource that already exists\"); pkg/action/validate.go existingResourceConflict, checkOwnership, requireValue",
			msg:    `rendered manifests contain a resource that already exists. Unable to continue with install: ConfigMap "app-config" in namespace "shop" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"; annotation validation error: missing key "meta.helm.sh/release-name": must be set to "shop-app"; annotation validation error: missing key "meta.helm.sh/release-namespace": must be set to "shop"`,
			want:   &Ownership{Kind: "ConfigMap", Name: "app-config", Namespace: "shop", Release: "shop-app", ReleaseNamespace: "shop", ManagedByMissing: true, Install: true},
		},
		{
			name:   "upgrade, object owned by another release",
			source: "helm/helm pkg/action/validate.go requireValue (\"key %q must equal %q: current value is %q\")",
			msg:    `Unable to continue with update: ServiceAccount "app" in namespace "shop" exists and cannot be imported into the current release: invalid ownership metadata; annotation validation error: key "meta.helm.sh/release-name" must equal "shop-app": current value is "legacy-app"`,
			want:   &Ownership{Kind: "ServiceAccount", Name: "app", Namespace: "shop", Release: "shop-app", OwnerRelease: "legacy-app"},
		},
		{
			name:   "Fleet's release name in a BundleDeployment, JSON-escaped",
			source: "rancher/fleet agent Installed condition quoting helm pkg/action/validate.go",
			msg:    `ClusterRole \"shop-reader\" in namespace \"\" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: key \"app.kubernetes.io/managed-by\" must equal \"Helm\": current value is \"kustomize\"`,
			want:   &Ownership{Kind: "ClusterRole", Name: "shop-reader", ManagedByMissing: true},
		},
		{
			name:   "not this family",
			source: "-",
			msg:    `configmaps "app-config" already exists`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseOwnership(tt.msg)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseOwnership (%s) ok=%v", tt.source, ok)
			}
			if tt.want != nil && !reflect.DeepEqual(got, *tt.want) {
				t.Errorf("ParseOwnership (%s):\n got %+v\nwant %+v", tt.source, got, *tt.want)
			}
		})
	}
}
