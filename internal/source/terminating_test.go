package source

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The namespace controller's messages as kube-controller-manager v1.37.2 wrote them on the
// test bed (TestRealFleetStates), and the form with several resources and the core group
// (pkg/controller/namespace/deletion/namespaced_resources_deleter.go joins them with ", ").
func TestRemainingResources(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want []schema.GroupResource
	}{
		{"Some resources are remaining: prometheuses.monitoring.coreos.com has 1 resource instances",
			[]schema.GroupResource{{Group: "monitoring.coreos.com", Resource: "prometheuses"}}},
		{"Some resources are remaining: persistentvolumeclaims. has 2 resource instances, volumes.longhorn.io has 2 resource instances",
			[]schema.GroupResource{{Resource: "persistentvolumeclaims"}, {Group: "longhorn.io", Resource: "volumes"}}},
	} {
		ns := &corev1.Namespace{Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
			{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Message: "Some content in the namespace has finalizers remaining: monitoring.coreos.com/status-cleanup in 1 resource instances"},
			{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Message: c.msg},
		}}}
		if got := RemainingResources(ns); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.msg, got, c.want)
		}
	}
	done := &corev1.Namespace{Status: corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Message: "All content successfully removed"},
	}}}
	if got := RemainingResources(done); len(got) != 0 {
		t.Errorf("a namespace whose content is gone: got %v", got)
	}
}

// A collected Fleet Cluster keeps the managedFields entry owning spec.paused (who paused it,
// when) and nothing else; any other object keeps none.
func TestTrimManagedFieldsKeepsThePause(t *testing.T) {
	entries := []any{
		map[string]any{"manager": "fleetcontroller", "operation": "Update", "time": "2026-12-05T06:50:00Z", "fieldsV1": map[string]any{"f:status": map[string]any{}}},
		map[string]any{"manager": "kubectl-patch", "operation": "Update", "time": "2026-12-05T06:51:00Z", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:paused": map[string]any{}}}},
	}
	cluster := resource{gvr: gvr("fleet.cattle.io", "v1alpha1", "clusters"), kind: "Cluster"}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"managedFields": entries}}}
	trimManagedFields(u, cluster)
	kept, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	if len(kept) != 1 || kept[0].(map[string]any)["manager"] != "kubectl-patch" {
		t.Errorf("Fleet Cluster: kept %v, want only kubectl-patch's entry", kept)
	}
	capi := resource{gvr: gvr("cluster.x-k8s.io", "v1beta2", "clusters"), kind: "Cluster"}
	u = &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"managedFields": entries}}}
	trimManagedFields(u, capi)
	if _, found, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields"); found {
		t.Error("a CAPI Cluster kept managedFields")
	}
}
