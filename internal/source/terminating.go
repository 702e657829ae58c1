package source

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// A namespace being deleted is read whatever its name: a tenant namespace stuck Terminating
// blocks every Helm release and Fleet bundle aimed at it (namespace/terminating-stuck), and
// the Namespace object with the namespace controller's conditions is what says so. Its
// objects of the kinds in resources are listed as a watched namespace's are; the objects the
// controller reports as remaining (NamespaceContentRemaining) of other kinds — custom
// resources whose finalizer no controller removes, most often — are read as metadata only,
// and only those deleted and still held by a finalizer are kept.

// maxRemainingKinds and maxHolders bound what one terminating namespace adds to a scan.
const (
	maxRemainingKinds = 8
	maxHolders        = 50
)

// remainingRE is one "<resource>.<group> has <n> resource instances" of the namespace
// controller's NamespaceContentRemaining message (kubernetes
// pkg/controller/namespace/deletion/namespaced_resources_deleter.go: "Some resources are
// remaining: %s", the resources joined by ", "; the core group is empty: "pods.").
var remainingRE = lazyre.New(`([a-z0-9-]+)\.([a-z0-9.-]*) has [0-9]+ resource instances`)

// RemainingResources are the resources a terminating namespace's NamespaceContentRemaining
// condition names, at most maxRemainingKinds.
func RemainingResources(ns *corev1.Namespace) []schema.GroupResource {
	var out []schema.GroupResource
	for _, c := range ns.Status.Conditions {
		if c.Type != corev1.NamespaceContentRemaining || c.Status != corev1.ConditionTrue {
			continue
		}
		for _, m := range remainingRE().FindAllStringSubmatch(c.Message, maxRemainingKinds) {
			out = append(out, schema.GroupResource{Group: m[2], Resource: m[1]})
		}
	}
	return out
}

// readHolders reads, in each terminating namespace, the remaining objects of kinds unstick
// does not list anyway, and emits those deleted and held by finalizers. A list that fails
// (forbidden: the scan's role need not read every custom resource) leaves them unread; the
// namespace's conditions still name the finalizer, so it is no scan error.
func (r *clusterReader) readHolders(ctx context.Context) {
	for _, ns := range r.terminating {
		for _, gr := range RemainingResources(ns) {
			gvr, kind, ok := r.servedResource(gr)
			if !ok || listedKind(gvr) {
				continue
			}
			r.emitHolders(ctx, ns.Name, gvr, kind)
		}
	}
}

func (r *clusterReader) emitHolders(ctx context.Context, ns string, gvr schema.GroupVersionResource, kind string) {
	var l *metav1.PartialObjectMetadataList
	err := retryRead(ctx, func() (err error) {
		l, err = r.meta.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: maxHolders})
		return err
	})
	if err != nil {
		return
	}
	for i := range l.Items {
		it := &l.Items[i]
		if it.DeletionTimestamp == nil || len(it.Finalizers) == 0 {
			continue
		}
		it.ManagedFields = nil
		it.APIVersion, it.Kind = gvr.GroupVersion().String(), kind
		r.emit(it, kind, it.Namespace, it.Name)
	}
}

// servedKind is a resource discovery lists, with its kind.
type servedKind struct {
	gvr  schema.GroupVersionResource
	kind string
}

// servedResource finds the version (the first discovery lists: the group's preferred)
// and kind of a group's resource.
func (r *clusterReader) servedResource(gr schema.GroupResource) (schema.GroupVersionResource, string, bool) {
	for _, k := range r.kinds {
		if k.gvr.Group == gr.Group && k.gvr.Resource == gr.Resource && !strings.Contains(k.gvr.Resource, "/") {
			return k.gvr, k.kind, true
		}
	}
	return schema.GroupVersionResource{}, "", false
}

// listedKind says whether resources lists this group and resource already.
func listedKind(gvr schema.GroupVersionResource) bool {
	for _, res := range resources {
		if res.gvr.Group == gvr.Group && res.gvr.Resource == gvr.Resource {
			return true
		}
	}
	return false
}
