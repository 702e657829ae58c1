package manifest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const helmManifest = `---
# Source: app/templates/flowschema.yaml
apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata:
  name: app-fs
  labels:
    name: not-the-name
spec:
  matchingPrecedence: 1000
  password: hunter2
---
# Source: app/templates/pdb.yaml
apiVersion: "policy/v1beta1"
kind: PodDisruptionBudget
metadata:
  namespace: apps
  name: 'app'
---
# Source: app/templates/notes.txt
just text
---
# Source: app/crds/widgets.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    plural: widgets
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: false
  - name: v2
    served: true
    storage: true
`

func TestDocsKeepsIdentitiesOnly(t *testing.T) {
	docs := Docs(helmManifest, "fallback")
	want := []Doc{
		{APIVersion: "flowcontrol.apiserver.k8s.io/v1beta3", Kind: "FlowSchema", Name: "app-fs", Source: "app/templates/flowschema.yaml"},
		{APIVersion: "policy/v1beta1", Kind: "PodDisruptionBudget", Namespace: "apps", Name: "app", Source: "app/templates/pdb.yaml"},
		{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com", Source: "app/crds/widgets.yaml",
			CRD: &CRD{Group: "example.com", Plural: "widgets", Versions: []Version{{"v1", true, false}, {"v2", true, true}}}},
	}
	if !reflect.DeepEqual(docs, want) {
		t.Fatalf("Docs:\n got %+v\nwant %+v", docs, want)
	}
	b, _ := json.Marshal(docs)
	if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "1000") {
		t.Fatalf("a value leaked into the documents: %s", b)
	}
	// The skeleton reads back as the same documents and holds no value.
	sk := Skeleton(docs)
	if strings.Contains(sk, "hunter2") {
		t.Fatalf("skeleton holds a value:\n%s", sk)
	}
	if again := Docs(sk, ""); !reflect.DeepEqual(again, want) {
		t.Fatalf("skeleton does not read back:\n got %+v\nwant %+v\n%s", again, want, sk)
	}
}

func TestTemplatedFieldsReadEmpty(t *testing.T) {
	docs := Docs("apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: {{ include \"x.fullname\" . }}\n---\napiVersion: {{ template \"pdb.apiVersion\" . }}\nkind: PodDisruptionBudget\n", "templates/pdb.yaml")
	if len(docs) != 1 || docs[0].Name != "" || docs[0].Source != "templates/pdb.yaml" {
		t.Fatalf("got %+v", docs)
	}
}

func gzipped(t *testing.T, s string) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func TestResourceAndContentDocs(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString(gzipped(t, "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: PriorityLevelConfiguration\nmetadata:\n  name: p\n"))
	rs := []Resource{
		{Name: "apps/flow/plc.yaml", Content: enc, Encoding: "base64+gz"},
		{Name: "apps/flow/cm.yaml", Content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: secret\n"},
		{Name: "broken.yaml", Content: "!!", Encoding: "base64+gz"},
	}
	docs, err := ResourceDocs(rs)
	if err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("want an error naming broken.yaml, got %v", err)
	}
	if len(docs) != 2 || docs[0].Source != "apps/flow/plc.yaml" || docs[0].Kind != "PriorityLevelConfiguration" || docs[1].Kind != "ConfigMap" {
		t.Fatalf("got %+v", docs)
	}
	raw, _ := json.Marshal(map[string]any{"resources": rs[:2]})
	cdocs, err := ContentDocs(gzipped(t, string(raw)))
	if err != nil || !reflect.DeepEqual(cdocs, docs) {
		t.Fatalf("ContentDocs: %v %+v", err, cdocs)
	}
	if _, err := ContentDocs([]byte("not gzip")); err == nil {
		t.Error("want an error for a Content that is not gzip")
	}
}

// Any manifest, however malformed, reads without a panic, within MaxDocs, and its skeleton
// reads back as the same documents' kinds.
func FuzzDocs(f *testing.F) {
	f.Add(helmManifest)
	f.Add("---\n---\napiVersion: v1\nkind: List\nitems: [\n")
	f.Add("{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\",\"spec\":{\"versions\":7}}")
	f.Add("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: &a [*a, *a]\n")
	f.Fuzz(func(t *testing.T, text string) {
		docs := Docs(text, "f.yaml")
		if len(docs) > MaxDocs {
			t.Fatalf("%d documents", len(docs))
		}
		for _, d := range docs {
			if d.APIVersion == "" || d.Kind == "" {
				t.Fatalf("a document without apiVersion or kind: %+v", d)
			}
		}
	})
}
