package messages

import (
	"reflect"
	"testing"
)

func TestParseQuota(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              *QuotaExceeded
	}{
		{
			name:   "ReplicaSet event FailedCreate",
			source: "k8s.io/apiserver pkg/admission/plugin/resourcequota/controller.go CheckRequest; kube-controller-manager replica_set.go FailedCreate event (\"Error creating: %v\")",
			msg:    `Error creating: pods "web-7d4b9c8f5-x2x9q" is forbidden: exceeded quota: compute-resources, requested: limits.cpu=2, used: limits.cpu=3500m, limited: limits.cpu=4`,
			want:   &QuotaExceeded{Quota: "compute-resources", Requested: "limits.cpu=2", Used: "limits.cpu=3500m", Limited: "limits.cpu=4", Kind: "pods", Name: "web-7d4b9c8f5-x2x9q"},
		},
		{
			name:   "several resources, quoted by Helm",
			source: "resourcequota/controller.go CheckRequest (prettyPrint joins with \",\")",
			msg:    `failed to create resource: persistentvolumeclaims "data-db-0" is forbidden: exceeded quota: storage, requested: requests.storage=20Gi, used: requests.storage=90Gi, limited: requests.storage=100Gi`,
			want:   &QuotaExceeded{Quota: "storage", Requested: "requests.storage=20Gi", Used: "requests.storage=90Gi", Limited: "requests.storage=100Gi", Kind: "persistentvolumeclaims", Name: "data-db-0"},
		},
		{
			name:   "a quota the pod cannot be charged to, StatefulSet event",
			source: "k8s.io/apiserver resourcequota/controller.go CheckRequest (\"failed quota: %s: %v\"); pkg/quota/v1/evaluator/core/pods.go (\"must specify %s\")",
			msg:    `create Pod db-0 in StatefulSet db failed error: pods "db-0" is forbidden: failed quota: compute-resources: must specify limits.cpu for: postgres; limits.memory for: postgres`,
			want:   &QuotaExceeded{Quota: "compute-resources", Kind: "pods", Name: "db-0", Constraint: "must specify limits.cpu for: postgres; limits.memory for: postgres"},
		},
		{
			name:   "Helm 4 create in a Fleet BundleDeployment condition, JSON-escaped",
			source: "helm.sh/helm/v4 pkg/kube/client.go Create (\"failed to create resource: %w\"); resourcequota/controller.go CheckRequest",
			msg:    `{\"error\":\"failed to create resource: deployments.apps \\\"web\\\" is forbidden: exceeded quota: team-a, requested: count/deployments.apps=1, used: count/deployments.apps=10, limited: count/deployments.apps=10\"}`,
			want:   &QuotaExceeded{Quota: "team-a", Requested: "count/deployments.apps=1", Used: "count/deployments.apps=10", Limited: "count/deployments.apps=10", Kind: "deployments.apps", Name: "web"},
		},
		{
			name:   "not this family",
			source: "k8s.io/apiserver ResourceQuota admission while the quota is being computed",
			msg:    `pods "x" is forbidden: status unknown for quota: compute, resource: limits.cpu`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseQuota(tt.msg)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseQuota (%s) ok=%v", tt.source, ok)
			}
			if tt.want != nil && !reflect.DeepEqual(got, *tt.want) {
				t.Errorf("ParseQuota (%s):\n got %+v\nwant %+v", tt.source, got, *tt.want)
			}
		})
	}
}

func TestTerminatingNamespace(t *testing.T) {
	tests := []struct {
		name, source, msg, want string
	}{
		{
			name:   "Helm 4 create in a Fleet condition",
			source: "k8s.io/apiserver pkg/admission/plugin/namespace/lifecycle/admission.go Admit",
			msg:    `failed to create resource: configmaps "app-config" is forbidden: unable to create new content in namespace shop because it is being terminated`,
			want:   "shop",
		},
		{
			name:   "Event FailedCreate",
			source: "namespace/lifecycle/admission.go Admit via kube-controller-manager FailedCreate",
			msg:    `Error creating: pods "web-1" is forbidden: unable to create new content in namespace cattle-monitoring-system because it is being terminated`,
			want:   "cattle-monitoring-system",
		},
		{name: "not this family", source: "-", msg: `namespaces "shop" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := TerminatingNamespace(tt.msg)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("TerminatingNamespace (%s) = %q, %v; want %q", tt.source, got, ok, tt.want)
			}
		})
	}
}
