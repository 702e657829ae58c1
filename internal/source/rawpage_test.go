package source

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// secretPage is a page of `GET /api/v1/namespaces/cattle-fleet-system/secrets?limit=500` as
// an API server writes it: items without apiVersion and kind, managedFields on each.
const secretPage = `{"kind":"SecretList","apiVersion":"v1","metadata":{"resourceVersion":"48213","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDgyMTMsInN0YXJ0Ijoic2guaGVsbS5yZWxlYXNlLnYxLmZsZWV0LWFnZW50LWxvY2FsLnYyXHUwMDAwIn0"},"items":[
 {"metadata":{"name":"sh.helm.release.v1.fleet-agent-local.v1","namespace":"cattle-fleet-system","uid":"5d0e6a53-55d2-4f43-9bd7-0b1fd1b1c8f2","resourceVersion":"1733","creationTimestamp":"2026-11-28T09:12:40Z","labels":{"modifiedAt":"1764321160","name":"fleet-agent-local","owner":"helm","status":"superseded","version":"1"},"managedFields":[{"manager":"fleetagent","operation":"Update","apiVersion":"v1","time":"2026-11-28T09:12:40Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:release":{}},"f:type":{}}}]},"data":{"release":"SDRzSUFBQUFBQUFDLzZ5U3pXcmJRQlNGWDJXWUxyeUpRcmZkQ1hkUkdFbUUwQm11bUpFdHR0R0VVTlNsY0g="},"type":"helm.sh/release.v1"},
 {"metadata":{"name":"sh.helm.release.v1.fleet-agent-local.v2","namespace":"cattle-fleet-system","uid":"0a4f3b7e-8c2f-4a55-9a43-64c2b2b7f5e1","resourceVersion":"48160","creationTimestamp":"2026-12-01T03:40:11Z","labels":{"name":"fleet-agent-local","owner":"helm","status":"pending-upgrade","version":"2"}},"data":{"release":"SDRzSUFBQUFBQUFDLzZ5U3pXcmJRQlNGWDJXWUxyeUpRcmZkQ1hkUkdFbUUwQm11bUpFdHR0R0VVTlNsY0g="},"type":"helm.sh/release.v1"}
]}`

// crdPage is a page of `GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions`: items
// with their own apiVersion and kind, a schema per version.
const crdPage = `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"48213"},"items":[
 {"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"plans.upgrade.cattle.io","uid":"8f3f8a0e-3e4c-4b2b-a3d5-2a8e0c1f9b11","resourceVersion":"412","managedFields":[{"manager":"kube-apiserver","operation":"Update"}]},
  "spec":{"group":"upgrade.cattle.io","names":{"kind":"Plan","plural":"plans","singular":"plan"},"scope":"Namespaced",
   "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}},"subresources":{"status":{}},"additionalPrinterColumns":[{"name":"Image","type":"string","jsonPath":".spec.upgrade.image"}]}]},
  "status":{"acceptedNames":{"kind":"Plan","plural":"plans"},"storedVersions":["v1"],"conditions":[{"type":"Established","status":"True","reason":"InitialNamesAccepted","message":"the initial names have been accepted","lastTransitionTime":"2026-11-28T09:10:02Z"}]}}
]}`

// dynamicItems is what the general way makes of a page: the dynamic client's decode into
// an UnstructuredList (apiVersion and kind set on items that lack them), less what the
// reader drops.
func dynamicItems(t *testing.T, page string, dropSchemas bool) []map[string]any {
	t.Helper()
	var l unstructured.UnstructuredList
	if err := l.UnmarshalJSON([]byte(page)); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, u := range l.Items {
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		if vs, ok, _ := unstructured.NestedSlice(u.Object, "spec", "versions"); ok && dropSchemas {
			for _, v := range vs {
				delete(v.(map[string]any), "schema")
			}
			_ = unstructured.SetNestedSlice(u.Object, vs, "spec", "versions")
		}
		out = append(out, roundTrip(t, u.Object))
	}
	return out
}

// roundTrip is a value as encoding/json decodes it (numbers as float64 on both sides).
func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func splitAsMaps(t *testing.T, page, apiVersion, kind string, dropSchemas bool) ([]map[string]any, []rawItem, string) {
	t.Helper()
	items, cont, err := splitPage([]byte(page), apiVersion, kind, dropSchemas)
	if err != nil {
		t.Fatalf("splitPage: %v", err)
	}
	var out []map[string]any
	for _, it := range items {
		var m map[string]any
		if err := json.Unmarshal(it.raw, &m); err != nil {
			t.Fatalf("item %s is not JSON: %v\n%s", it.h.Metadata.Name, err, it.raw)
		}
		out = append(out, m)
	}
	return out, items, cont
}

func TestSplitPageGivesWhatTheDynamicClientGives(t *testing.T) {
	for _, tc := range []struct {
		name, page, apiVersion, kind string
		dropSchemas                  bool
	}{
		{"secrets", secretPage, "v1", "Secret", false},
		{"crds", crdPage, "apiextensions.k8s.io/v1", "CustomResourceDefinition", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, items, _ := splitAsMaps(t, tc.page, tc.apiVersion, tc.kind, tc.dropSchemas)
			want := dynamicItems(t, tc.page, tc.dropSchemas)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("split items differ from the dynamic client's\n got: %v\nwant: %v", got, want)
			}
			for i, it := range items {
				h := it.h
				if h.APIVersion != tc.apiVersion || h.Kind != tc.kind || h.Metadata.Name != want[i]["metadata"].(map[string]any)["name"] {
					t.Errorf("item %d: header %+v", i, h)
				}
				if strings.Contains(string(it.raw), "managedFields") || strings.Contains(string(it.raw), "openAPIV3Schema") {
					t.Errorf("item %d keeps what the reader drops: %s", i, it.raw)
				}
			}
		})
	}
}

func TestSplitPageReturnsTheContinueToken(t *testing.T) {
	_, items, cont := splitAsMaps(t, secretPage, "v1", "Secret", false)
	if len(items) != 2 || !strings.HasPrefix(cont, "eyJ2Ijoib") {
		t.Fatalf("%d items, continue %q", len(items), cont)
	}
	if items[1].h.Metadata.Namespace != "cattle-fleet-system" {
		t.Fatalf("namespace %q", items[1].h.Metadata.Namespace)
	}
}

// A page that is not as an API server writes it is left to the general way, whose decode
// has encoding/json's rules (case-insensitive names, the last of duplicates).
func TestSplitPageLeavesOddPagesToTheGeneralWay(t *testing.T) {
	item := `{"metadata":{"name":"a","namespace":"ns"},"type":"Opaque"}`
	for name, page := range map[string]string{
		"name in another case":    `{"items":[{"Metadata":{"name":"a"}}]}`,
		"escaped name":            `{"items":[{"metad\u0061ta":{"name":"a"}}]}`,
		"duplicate name":          `{"items":[{"metadata":{"name":"a"},"metadata":{"name":"b"}}]}`,
		"escaped object name":     `{"items":[{"metadata":{"name":"\u0061"}}]}`,
		"item not an object":      `{"items":[` + item + `,"x"]}`,
		"items not an array":      `{"items":{"a":1}}`,
		"item without a name":     `{"items":[{"metadata":{"namespace":"ns"}}]}`,
		"name not a string":       `{"items":[{"metadata":{"name":7}}]}`,
		"invalid UTF-8":           "{\"items\":[{\"metadata\":{\"name\":\"a\xff\"}}]}",
		"truncated":               `{"items":[` + item,
		"a list of another shape": `[` + item + `]`,
	} {
		if items, _, err := splitPage([]byte(page), "v1", "Secret", false); err == nil {
			t.Errorf("%s: split into %d items, want it left to the general way", name, len(items))
		}
	}
	if _, _, err := splitPage([]byte(`{"items":[{"Metadata":{}}]}`), "v1", "Secret", false); !errors.Is(err, errOddPage) {
		t.Errorf("a case-folded name: %v, want errOddPage", err)
	}
}

// FuzzSplitPage: whatever a server answers, the split does not panic, and what it splits
// holds each item as the dynamic client reads it, less what the reader drops.
func FuzzSplitPage(f *testing.F) {
	f.Add(secretPage, false)
	f.Add(crdPage, true)
	f.Add(`{"items":null,"metadata":null}`, false)
	f.Fuzz(func(t *testing.T, page string, dropSchemas bool) {
		items, _, err := splitPage([]byte(page), "v1", "Secret", dropSchemas)
		if err != nil {
			return
		}
		var l unstructured.UnstructuredList
		if l.UnmarshalJSON([]byte(page)) != nil {
			return // the general way refuses it too (an item without a kind is set, not refused)
		}
		want := dynamicItems(t, page, dropSchemas)
		if len(items) != len(want) {
			t.Fatalf("%d items split, %d read the general way", len(items), len(want))
		}
		for i, it := range items {
			var m map[string]any
			if err := json.Unmarshal(it.raw, &m); err != nil {
				t.Fatalf("item %d is not JSON: %v", i, err)
			}
			// An item's apiVersion and kind are its own, else those of the resource asked
			// for (the dynamic client takes the list's, which a real server sets alike).
			if m["apiVersion"] != it.h.APIVersion || m["kind"] != it.h.Kind || m["metadata"].(map[string]any)["name"] != it.h.Metadata.Name {
				t.Fatalf("item %d: header %+v, object %v", i, it.h, m)
			}
			for _, k := range []string{"apiVersion", "kind"} {
				delete(m, k)
				delete(want[i], k)
			}
			if !reflect.DeepEqual(m, want[i]) {
				t.Fatalf("item %d\n got: %v\nwant: %v", i, m, want[i])
			}
		}
	})
}
