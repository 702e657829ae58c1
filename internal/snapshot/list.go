package snapshot

import (
	"encoding/json"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// listDecoders are the kinds whose List decodes straight into typed items: the kinds kept
// as their plain Kubernetes or Fleet type, with nothing to tolerate on the way in (Secrets
// are decoded leniently and Plans, events.k8s.io Events and CRDs into views, item by item).
var listDecoders = map[string]func(apiVersion, kind string, data []byte, page bool) ([]*Object, string, bool){
	"/Pod":                                decodeList[corev1.Pod],
	"/Node":                               decodeList[corev1.Node],
	"/Event":                              decodeList[corev1.Event],
	"/Namespace":                          decodeList[corev1.Namespace],
	"/ConfigMap":                          decodeList[corev1.ConfigMap],
	"/ResourceQuota":                      decodeList[corev1.ResourceQuota],
	"apps/Deployment":                     decodeList[appsv1.Deployment],
	"apps/ReplicaSet":                     decodeList[appsv1.ReplicaSet],
	"apps/DaemonSet":                      decodeList[appsv1.DaemonSet],
	"batch/Job":                           decodeList[batchv1.Job],
	"fleet.cattle.io/Cluster":             decodeList[fleetv1.Cluster],
	"fleet.cattle.io/Bundle":              decodeList[fleetv1.Bundle],
	"fleet.cattle.io/BundleDeployment":    decodeList[BundleDeployment],
	"fleet.cattle.io/ClusterRegistration": decodeList[fleetv1.ClusterRegistration],
}

// PrepareList decodes a JSON List whose items are all apiVersion/kind in one pass into
// typed objects, as Prepare would one by one. What `kubectl get -o json` and fleet dump
// write is such a list, and decoding it item by item read every byte several times (the
// list, each item's header, each item). ok is false when it cannot: a kind without a plain
// typed form, an item of another kind or without a name, anything that does not decode.
// The caller then reads the list item by item, which names what is wrong.
func PrepareList(apiVersion, kind string, data []byte) (objs []*Object, ok bool) {
	dec := listDecoders[groupOf(apiVersion)+"/"+kind]
	if dec == nil {
		return nil, false
	}
	objs, _, ok = dec(apiVersion, kind, data, false)
	return objs, ok
}

// PreparePage decodes one page of a LIST answered by an API server for apiVersion/kind
// straight into typed objects, and returns the page's continue token. An API server leaves
// apiVersion and kind out of the items of built-in kinds; they are filled in. ok is false
// for a kind without a plain typed form or an item of another kind: the caller reads the
// page the general way.
func PreparePage(apiVersion, kind string, data []byte) (objs []*Object, cont string, ok bool) {
	dec := listDecoders[groupOf(apiVersion)+"/"+kind]
	if dec == nil {
		return nil, "", false
	}
	return dec(apiVersion, kind, data, true)
}

// HasPageDecoder reports whether PreparePage can read pages of this kind.
func HasPageDecoder(apiVersion, kind string) bool {
	return listDecoders[groupOf(apiVersion)+"/"+kind] != nil
}

// Typed is the decoded object (*corev1.Pod, *BundleDeployment, ...); read-only.
func (o *Object) Typed() any { return o.obj }

func groupOf(apiVersion string) string {
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// listItem is what decodeList needs of an item type: Kubernetes' and Fleet's types, and
// unstick's slim ones.
type listItem interface {
	named
	GetObjectKind() schema.ObjectKind
	SetManagedFields([]metav1.ManagedFieldsEntry)
}

// named is an object with a namespace and name.
type named interface {
	GetNamespace() string
	GetName() string
}

func decodeList[T any, P interface {
	*T
	listItem
}](apiVersion, kind string, data []byte, page bool) ([]*Object, string, bool) {
	var list struct {
		Kind     string          `json:"kind"`
		Metadata metav1.ListMeta `json:"metadata"`
		Items    []T             `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil || !strings.HasSuffix(list.Kind, "List") {
		return nil, "", false
	}
	out := make([]*Object, len(list.Items))
	for i := range list.Items {
		p := P(&list.Items[i])
		tm, ok := p.GetObjectKind().(*metav1.TypeMeta)
		if ok && page && tm.APIVersion == "" && tm.Kind == "" {
			tm.APIVersion, tm.Kind = apiVersion, kind
		}
		if !ok || tm.APIVersion != apiVersion || tm.Kind != kind || p.GetName() == "" {
			return nil, "", false
		}
		p.SetManagedFields(nil)
		out[i] = finish(apiVersion, kind, p.GetNamespace(), p.GetName(), p)
	}
	return out, list.Metadata.Continue, true
}
