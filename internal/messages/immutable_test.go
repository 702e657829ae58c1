package messages

import (
	"reflect"
	"testing"
)

func TestParseImmutable(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              *Immutable
	}{
		{
			name:   "Deployment selector, Helm 3 upgrade",
			source: "k8s.io/apimachinery pkg/api/errors NewInvalid; pkg/apis/apps/validation ValidateDeploymentUpdate (spec.selector, FieldImmutableErrorMsg); helm v3 pkg/kube/client.go (\"cannot patch %q with kind %s: %w\")",
			msg:    `UPGRADE FAILED: cannot patch "web" with kind Deployment: Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "tier":"front"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable`,
			want:   &Immutable{Kind: "Deployment", Group: "apps", Name: "web", Fields: []string{"spec.selector"}},
		},
		{
			name:   "Job template, Helm 4 in a Fleet condition",
			source: "pkg/apis/batch/validation ValidateJobUpdate (spec.template: field is immutable)",
			msg:    `failed to apply: Job.batch "db-migrate" is invalid: spec.template: Invalid value: core.PodTemplateSpec{ObjectMeta:v1.ObjectMeta{Name:"", Labels:map[string]string{"job-name":"db-migrate"}}}: field is immutable`,
			want:   &Immutable{Kind: "Job", Group: "batch", Name: "db-migrate", Fields: []string{"spec.template"}},
		},
		{
			name:   "several errors, one immutable",
			source: "k8s.io/apimachinery pkg/util/validation/field ErrorList.ToAggregate (\"[a, b]\")",
			msg:    `StatefulSet.apps "db" is invalid: [spec.replicas: Invalid value: -1: must be greater than or equal to 0, spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden, spec.selector: Invalid value: "x": field is immutable]`,
			want:   &Immutable{Kind: "StatefulSet", Group: "apps", Name: "db", Fields: []string{"spec.selector"}},
		},
		{
			name:   "core kind has no group",
			source: "pkg/apis/core/validation ValidateServiceUpdate",
			msg:    `Service "web" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.43.0.20"}: may not change once set, spec.clusterIP: Invalid value: "10.43.0.20": field is immutable`,
			want:   &Immutable{Kind: "Service", Name: "web", Fields: []string{"spec.clusterIP"}},
		},
		{
			name:   "not this family",
			source: "-",
			msg:    `Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseImmutable(tt.msg)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseImmutable (%s) ok=%v", tt.source, ok)
			}
			if tt.want != nil && !reflect.DeepEqual(got, *tt.want) {
				t.Errorf("ParseImmutable (%s):\n got %+v\nwant %+v", tt.source, got, *tt.want)
			}
		})
	}
}

func TestParseWaitTimeout(t *testing.T) {
	tests := []struct {
		name, source, msg string
		want              *WaitTimeout
	}{
		{
			name:   "Helm 4 status watcher names the resource",
			source: "helm.sh/helm/v4 pkg/kube/statuswait.go (\"resource not ready, name: %s, kind: %s, status: %s\")",
			msg:    "context deadline exceeded: resource not ready, name: web, kind: Deployment, status: InProgress",
			want:   &WaitTimeout{NotReady: []NotReadyResource{{Kind: "Deployment", Name: "web", Status: "InProgress"}}},
		},
		{
			name:   "Helm 4.1.1 and later name kind, namespace and name, one line per resource",
			source: "helm.sh/helm/v4 pkg/kube/statuswait.go (\"resource %s/%s/%s not ready. status: %s, message: %s\")",
			msg: "Upgrade \"shop-app\" failed: resource Deployment/shop/web not ready. status: InProgress, message: Updated: 1/3\n" +
				"resource StatefulSet/shop/db not ready. status: InProgress, message: Ready: 1/2\ncontext deadline exceeded",
			want: &WaitTimeout{NotReady: []NotReadyResource{
				{Kind: "Deployment", Namespace: "shop", Name: "web", Status: "InProgress"},
				{Kind: "StatefulSet", Namespace: "shop", Name: "db", Status: "InProgress"},
			}},
		},
		{
			name:   "Helm 3 legacy waiter",
			source: "helm/helm v3 pkg/kube/wait.go; k8s.io/apimachinery wait.ErrWaitTimeout",
			msg:    "UPGRADE FAILED: timed out waiting for the condition",
			want:   &WaitTimeout{},
		},
		{name: "not this family", source: "-", msg: "install failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseWaitTimeout(tt.msg)
			if ok != (tt.want != nil) {
				t.Fatalf("ParseWaitTimeout (%s) ok=%v", tt.source, ok)
			}
			if tt.want != nil && !reflect.DeepEqual(got, *tt.want) {
				t.Errorf("ParseWaitTimeout (%s):\n got %+v\nwant %+v", tt.source, got, *tt.want)
			}
		})
	}
}

func TestParseEmpty(t *testing.T) {
	if !Parse("all good").Empty() {
		t.Error("a message of no family has facts")
	}
	f := Parse(`failed to create resource: configmaps "a" is forbidden: unable to create new content in namespace shop because it is being terminated`)
	if f.Empty() || f.TerminatingNamespace != "shop" {
		t.Errorf("Parse = %+v", f)
	}
}
