package serve

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/unstick-dev/unstick/internal/source"
)

// cachedObject is what the informers store: an object's identity and its trimmed JSON. A
// decoded unstructured map costs several times its JSON in memory; a management cluster of
// thousands of Fleet clusters holds tens of thousands of BundleDeployments, so the caches
// keep bytes, and each evaluation decodes them straight into the snapshot's typed objects.
type cachedObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	raw []byte
}

func (c *cachedObject) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out // raw is never written after creation: shared
}

// compact is the informers' transform: what no check reads (managedFields, CRD schemas)
// never reaches the cache, and what does is kept as JSON. Objects in namespaces keep does
// not keep are stored as their name alone (raw nil).
func compact(obj any, keep func(string) bool) (any, error) {
	if m, ok := obj.(metav1.Object); ok && keep != nil && !keep(m.GetNamespace()) {
		return &cachedObject{ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion()}}, nil
	}
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		source.Trim(o.Object)
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		return &cachedObject{
			TypeMeta:   metav1.TypeMeta{APIVersion: o.GetAPIVersion(), Kind: o.GetKind()},
			ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(), ResourceVersion: o.GetResourceVersion()},
			raw:        raw,
		}, nil
	case *metav1.PartialObjectMetadata:
		o.ManagedFields = nil
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		return &cachedObject{
			TypeMeta:   o.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion},
			raw:        raw,
		}, nil
	}
	return obj, nil
}

// cachedList is a listed page set, already compacted, as the informers' reflector wants it.
type cachedList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*cachedObject
}

func (l *cachedList) DeepCopyObject() runtime.Object {
	out := &cachedList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for _, it := range l.Items {
		out.Items = append(out.Items, it.DeepCopyObject().(*cachedObject))
	}
	return out
}
