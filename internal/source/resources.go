package source

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is one kind the checks need and where to read it: the table the live scan lists,
// exported so `unstick serve` watches exactly the same set.
type Resource struct {
	GVR      schema.GroupVersionResource
	Kind     string
	Selector string // label selector (Helm release Secrets: owner=helm)
	// FieldSelector narrows a list further (Rancher's machine-plan Secrets: by type).
	FieldSelector string
	// SkipIfServed names a newer version of the same kind: this one is read only when that
	// is not served.
	SkipIfServed schema.GroupVersionResource
	// ClusterScoped kinds are read once; Namespaced ones either in all namespaces
	// (AllNamespaces) or only in the watched ones (see WatchedNamespace).
	ClusterScoped bool
	AllNamespaces bool
	MetaOnly      bool // names only (Fleet Contents are large)
	Optional      bool // a CRD that may not be installed: silently skipped when not served
}

// Resources lists what unstick reads, in the live scan's order.
func Resources() []Resource {
	out := make([]Resource, 0, len(resources))
	for _, r := range resources {
		out = append(out, Resource{
			GVR: r.gvr, Kind: r.kind, Selector: r.selector, FieldSelector: r.fieldSelector, SkipIfServed: r.skipIfServed,
			ClusterScoped: r.scope == clusterScoped, AllNamespaces: r.scope == allNamespaces,
			MetaOnly: r.metaOnly, Optional: r.optional,
		})
	}
	return out
}

// Wanted says whether this resource is read from a cluster serving served.
func (r Resource) Wanted(served map[schema.GroupVersionResource]bool) bool {
	return served[r.GVR] && (r.SkipIfServed.Resource == "" || !served[r.SkipIfServed])
}

// Trim drops what no check reads from a listed or watched object, in place: managedFields
// always, and the schemas of a CRD (most of its size).
func Trim(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	if obj["kind"] != "CustomResourceDefinition" {
		return
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		if vs, ok := spec["versions"].([]any); ok {
			for _, v := range vs {
				if m, ok := v.(map[string]any); ok {
					delete(m, "schema")
				}
			}
		}
	}
}

// RetryRead is the live scan's retry of a read that may pass a second time (429, 5xx, a
// dropped connection, a cut body), for other long-lived readers (serve's start-up).
func RetryRead(ctx context.Context, read func() error) error { return retryRead(ctx, read) }
