package messages

import (
	"reflect"
	"testing"
)

func TestParseApplyConflict(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              *ApplyConflict
	}{
		{
			name:   "Helm 4 in Fleet, ConfigMap created by kubectl",
			source: "helm.sh/helm/v4 pkg/kube/client.go patchResourceServerSide; k8s.io/apimachinery managedfields/internal/conflict.go NewConflictError; structured-merge-diff merge.Conflicts.Error",
			msg:    "conflict occurred while applying object shop/app-config /v1, Kind=ConfigMap: Apply failed with 2 conflicts: conflicts with \"kubectl-create\" using v1:\n- .data.color\n- .data.size",
			want: &ApplyConflict{Namespace: "shop", Name: "app-config", APIVersion: "v1", Kind: "ConfigMap", Count: 2,
				Managers: []ConflictManager{{Manager: "kubectl-create", APIVersion: "v1", Fields: []string{".data.color", ".data.size"}}}},
		},
		{
			name:   "one conflict, Update manager with a time",
			source: "conflict.go printManager (\"%s using %v at %v\"); merge.Conflict.Error (\"conflict with %v: %v\")",
			msg:    `conflict occurred while applying object kube-system/cilium apps/v1, Kind=DaemonSet: Apply failed with 1 conflict: conflict with "argocd-controller" using apps/v1 at 2025-03-02T10:04:11Z: .spec.template.spec.containers[name="cilium-agent"].image`,
			want: &ApplyConflict{Namespace: "kube-system", Name: "cilium", APIVersion: "apps/v1", Kind: "DaemonSet", Count: 1,
				Managers: []ConflictManager{{Manager: "argocd-controller", APIVersion: "apps/v1", Fields: []string{`.spec.template.spec.containers[name="cilium-agent"].image`}}}},
		},
		{
			name:   "two managers, cluster-scoped object",
			source: "merge.Conflicts.Error groups paths per manager",
			msg:    "conflict occurred while applying object /shop-reader rbac.authorization.k8s.io/v1, Kind=ClusterRole: Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using rbac.authorization.k8s.io/v1:\n- .rules\nconflicts with \"kubectl-edit\" using rbac.authorization.k8s.io/v1:\n- .metadata.labels.team",
			want: &ApplyConflict{Name: "shop-reader", APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Count: 2,
				Managers: []ConflictManager{
					{Manager: "kubectl-client-side-apply", APIVersion: "rbac.authorization.k8s.io/v1", Fields: []string{".rules"}},
					{Manager: "kubectl-edit", APIVersion: "rbac.authorization.k8s.io/v1", Fields: []string{".metadata.labels.team"}},
				}},
		},
		{
			name:   "API server's text alone, in a JSON log",
			source: "conflict.go NewConflictError",
			msg:    `{"level":"error","error":"Apply failed with 1 conflict: conflict with \"helm\" using v1: .data.key"}`,
			want:   &ApplyConflict{Count: 1, Managers: []ConflictManager{{Manager: "helm", APIVersion: "v1", Fields: []string{".data.key"}}}},
		},
		{
			name:   "not this family: an update conflict",
			source: "k8s.io/apimachinery pkg/api/errors NewConflict (optimistic concurrency)",
			msg:    `Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseApplyConflict(tt.msg)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseApplyConflict (%s) ok=%v", tt.source, ok)
			}
			if tt.want != nil && !reflect.DeepEqual(got, *tt.want) {
				t.Errorf("ParseApplyConflict (%s):\n got %+v\nwant %+v", tt.source, got, *tt.want)
			}
		})
	}
}
