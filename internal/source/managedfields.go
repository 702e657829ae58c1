package source

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// trimManagedFields drops an object's managedFields, which no check reads, except a Fleet
// Cluster's entry owning spec.paused: its manager and time say who paused the cluster and
// when (fleet/cluster-paused), as the snapshot builder keeps it for a live scan.
func trimManagedFields(u *unstructured.Unstructured, res resource) {
	if res.gvr.Group != "fleet.cattle.io" || res.kind != "Cluster" {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		return
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields")
	var keep []any
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if f, ok := m["fieldsV1"].(map[string]any); ok && ownsPaused(f) {
			keep = append(keep, m)
		}
	}
	if len(keep) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		return
	}
	_ = unstructured.SetNestedSlice(u.Object, keep, "metadata", "managedFields")
}

// ownsPaused says whether a managedFields entry's fieldsV1 holds spec.paused.
func ownsPaused(fields map[string]any) bool {
	spec, ok := fields["f:spec"].(map[string]any)
	if !ok {
		return false
	}
	for k := range spec {
		if strings.TrimPrefix(k, "f:") == "paused" {
			return true
		}
	}
	return false
}
