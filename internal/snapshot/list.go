package snapshot

import (
	"bytes"
	"errors"
	"io"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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
var listDecoders = map[string]func(apiVersion, kind string, data []byte, page bool, max int, strs *Strings) (objs []*Object, cont string, ok, more bool){
	"/Pod":                                decodeList[corev1.Pod],
	"/Node":                               decodeList[corev1.Node],
	"/Event":                              decodeList[corev1.Event],
	"/Namespace":                          decodeList[corev1.Namespace],
	"/ConfigMap":                          decodeList[corev1.ConfigMap],
	"/ResourceQuota":                      decodeList[corev1.ResourceQuota],
	"apps/Deployment":                     decodeList[appsv1.Deployment],
	"apps/ReplicaSet":                     decodeList[appsv1.ReplicaSet],
	"apps/DaemonSet":                      decodeList[appsv1.DaemonSet],
	"apps/StatefulSet":                    decodeList[appsv1.StatefulSet],
	"batch/Job":                           decodeList[batchv1.Job],
	"fleet.cattle.io/Cluster":             decodeList[fleetv1.Cluster],
	"fleet.cattle.io/Bundle":              decodeList[fleetv1.Bundle],
	"fleet.cattle.io/BundleDeployment":    decodeBundleDeployments,
	"fleet.cattle.io/ClusterRegistration": decodeList[fleetv1.ClusterRegistration],
	"fleet.cattle.io/GitRepo":             decodeList[fleetv1.GitRepo],
	"fleet.cattle.io/HelmOp":              decodeList[fleetv1.HelmOp],
}

// PrepareList decodes a JSON List whose items are all apiVersion/kind in one pass into
// typed objects, as Prepare would one by one. What `kubectl get -o json` and fleet dump
// write is such a list, and decoding it item by item read every byte several times (the
// list, each item's header, each item). ok is false when it cannot: a kind without a plain
// typed form, an item of another kind or without a name, anything that does not decode.
// The caller then reads the list item by item, which names what is wrong.
//
// max bounds the items decoded: a List with more returns its first max items and more=true,
// so that a small file listing a million objects is never built in memory whole. strs, if
// not nil, shares the decoded strings with the other objects decoded through it.
func PrepareList(apiVersion, kind string, data []byte, max int, strs *Strings) (objs []*Object, ok, more bool) {
	dec := listDecoders[groupOf(apiVersion)+"/"+kind]
	if dec == nil {
		return nil, false, false
	}
	objs, _, ok, more = dec(apiVersion, kind, data, false, max, strs)
	return objs, ok, more
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
	objs, cont, ok, _ = dec(apiVersion, kind, data, true, -1, nil)
	return objs, cont, ok
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

// decodeList decodes a List's items by reflection, under v1 semantics (decodeOptions).
func decodeList[T any, P interface {
	*T
	listItem
}](apiVersion, kind string, data []byte, page bool, max int, strs *Strings) ([]*Object, string, bool, bool) {
	return decodeListWith[T, P](apiVersion, kind, data, page, max, decodeOptions(strs), unmarshalItem[T])
}

// itemReader decodes one List item, the next value of dec, into it.
type itemReader[T any] func(dec *jsontext.Decoder, opts jsonv2.Options, it *T) error

// unmarshalItem decodes an item by reflection.
func unmarshalItem[T any](dec *jsontext.Decoder, opts jsonv2.Options, it *T) error {
	return jsonv2.UnmarshalDecode(dec, it, opts)
}

// decodeListWith decodes a List, each item with read.
func decodeListWith[T any, P interface {
	*T
	listItem
}](apiVersion, kind string, data []byte, page bool, max int, opts jsonv2.Options, read itemReader[T]) ([]*Object, string, bool, bool) {
	// Streamed item by item (the tokens of the List itself, then one decode per item), so
	// that a count can stop it.
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), opts)
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return nil, "", false, false
	}
	var listKind string
	var meta metav1.ListMeta
	var out []*Object
	sawItems := false
	for dec.PeekKind() != '}' {
		t, err := dec.ReadToken()
		if err != nil || t.Kind() != '"' {
			return nil, "", false, false
		}
		switch t.String() {
		case "kind":
			err = jsonv2.UnmarshalDecode(dec, &listKind, opts)
		case "metadata":
			err = jsonv2.UnmarshalDecode(dec, &meta, opts)
		case "items":
			if sawItems {
				return nil, "", false, false
			}
			sawItems = true
			var more bool
			out, more, err = decodeItems[T, P](dec, opts, read, apiVersion, kind, page, max)
			if more {
				return out, "", true, true // the caller stops here: the rest is not decoded
			}
		default:
			err = dec.SkipValue()
		}
		if err != nil {
			return nil, "", false, false
		}
	}
	if _, err := dec.ReadToken(); err != nil || !strings.HasSuffix(listKind, "List") {
		return nil, "", false, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, "", false, false // more after the List: not one List
	}
	if out == nil {
		out = []*Object{}
	}
	return out, meta.Continue, true, false
}

// errNotOneKind stops a List's decode at an item of another kind or without a name.
var errNotOneKind = errors.New("an item of another kind, or without a name")

// decodeItems decodes a List's items array, all of apiVersion/kind (a page's items may
// leave both out); more says it stopped at max items.
func decodeItems[T any, P interface {
	*T
	listItem
}](dec *jsontext.Decoder, opts jsonv2.Options, read itemReader[T], apiVersion, kind string, page bool, max int) (out []*Object, more bool, err error) {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken() // "items": null
		return nil, false, err
	}
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '[' {
		return nil, false, errNotOneKind
	}
	for dec.PeekKind() != ']' {
		if max >= 0 && len(out) >= max {
			return out, true, nil
		}
		var it T
		if err := read(dec, opts, &it); err != nil {
			return nil, false, err
		}
		p := P(&it)
		tm, ok := p.GetObjectKind().(*metav1.TypeMeta)
		if ok && page && tm.APIVersion == "" && tm.Kind == "" {
			tm.APIVersion, tm.Kind = apiVersion, kind
		}
		if !ok || tm.APIVersion != apiVersion || tm.Kind != kind || p.GetName() == "" {
			return nil, false, errNotOneKind
		}
		trimManagedFields(p)
		out = append(out, finish(apiVersion, kind, p.GetNamespace(), p.GetName(), p))
	}
	_, err = dec.ReadToken() // ]
	return out, false, err
}
