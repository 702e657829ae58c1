package serve

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// cachedObject is what the informers store: an object's identity and the object decoded
// once into the snapshot's typed form (snapshot.Prepare), trimmed. A decoded unstructured map
// costs several times its JSON in memory, and re-decoding every object at every evaluation
// made a garbage peak as large as the caches; a management cluster of thousands of Fleet
// clusters holds tens of thousands of BundleDeployments. Evaluations add the same prepared
// objects to each new snapshot.
type cachedObject struct {
	namespace, name, resourceVersion string
	// obj is nil for an object of a namespace that is not watched (kept by name only) and
	// when decoding failed (err says why).
	obj *snapshot.Object
	err error
}

// GetObjectMeta names the object for the informer's keys: cachedObject carries no full
// ObjectMeta of its own (the typed object has it), so this one is made on demand.
func (c *cachedObject) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: c.namespace, Name: c.name, ResourceVersion: c.resourceVersion}
}

func (c *cachedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (c *cachedObject) DeepCopyObject() runtime.Object {
	out := *c
	return &out // obj is never written after creation: shared
}

// kept reports whether an evaluation reads this object.
func (c *cachedObject) kept() bool { return c.obj != nil || c.err != nil }

// compact is the informers' transform: what no check reads (managedFields, CRD schemas,
// Secret payloads) never reaches the cache, and what does is kept decoded as the snapshot
// keeps it. Objects in namespaces keep does not keep are stored as their name alone.
// apiVersion and kind name the resource watched: metadata-only objects (Contents) come as
// PartialObjectMetadata.
func compact(obj any, apiVersion, kind string, keep func(string) bool) (any, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil // already compacted (a listed page), or a tombstone the informer handles
	}
	c := &cachedObject{namespace: m.GetNamespace(), name: m.GetName(), resourceVersion: m.GetResourceVersion()}
	if keep != nil && !keep(c.namespace) {
		return c, nil
	}
	var raw []byte
	var err error
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		source.Trim(o.Object)
		raw, err = json.Marshal(o.Object)
	case *metav1.PartialObjectMetadata:
		o.ManagedFields = nil
		raw, err = json.Marshal(o)
	default:
		return obj, nil
	}
	if err != nil {
		return nil, err
	}
	h := snapshot.Header{APIVersion: apiVersion, Kind: kind}
	h.Metadata.Name, h.Metadata.Namespace = c.name, c.namespace
	if c.obj, err = snapshot.Prepare(&h, raw); err != nil {
		c.err = fmt.Errorf("decoding a %s: %w", kind, err)
		return c, nil
	}
	c.obj.Intern()
	c.namespace = c.obj.Namespace // share the interned copy
	return c, nil
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
