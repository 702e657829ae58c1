package source

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// The object counts collect records go into the bundle's metadata and come back offline;
// a count the server did not give is not written, so the offline scan says it was not read.
func TestCollectedBundleKeepsCRDObjectCounts(t *testing.T) {
	w := NewBundleWriter("unstick test", time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC))
	w.DeclareCluster(snapshot.ClusterInfo{Name: "prod-ap-1", Context: "prod-ap-1"})
	w.MarkCRDsCollected("prod-ap-1")
	w.SetCRDObjects("prod-ap-1", "widgets.apps.example.com", 37)
	w.SetCRDObjects("prod-ap-1", "gadgets.apps.example.com", 0)
	w.SetCRDObjects("prod-ap-1", "sprockets.apps.example.com", snapshot.ObjectsUnknown)
	dest := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if _, err := w.Write(dest); err != nil {
		t.Fatal(err)
	}
	s := load(t, dest)
	if len(s.Errors) != 0 {
		t.Fatalf("errors %v", s.Errors)
	}
	c := s.Cluster("prod-ap-1")
	if c == nil {
		t.Fatal("no cluster prod-ap-1")
	}
	want := map[string]int{"widgets.apps.example.com": 37, "gadgets.apps.example.com": 0}
	if !reflect.DeepEqual(c.CRDObjects, want) {
		t.Errorf("counts %v, want %v", c.CRDObjects, want)
	}
	if _, ok, unknown := c.CRDObjectCount("sprockets.apps.example.com"); ok || unknown {
		t.Errorf("a count the server did not give came back from the bundle (ok %v, unknown %v)", ok, unknown)
	}
}

// A bundle is untrusted: a negative or absurd count, or one without a CRD name, is ignored
// and said under errors; the good counts and the objects still load.
func TestBundleCRDObjectCountsAreChecked(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"unstick-bundle.yaml": `apiVersion: unstick.dev/v1alpha1
kind: BundleInfo
clusters:
  - name: prod-ap-1
    crdObjects:
      widgets.apps.example.com: 37
      gadgets.apps.example.com: -5
      sprockets.apps.example.com: 9000000000
      "": 3
`,
		"clusters/prod-ap-1/pods.yaml": goodPod,
	})
	s := load(t, dir)
	c := s.Cluster("prod-ap-1")
	if c == nil || len(c.Pods) != 1 {
		t.Fatalf("objects must still load:\n%s", describeSnap(s))
	}
	if want := map[string]int{"widgets.apps.example.com": 37}; !reflect.DeepEqual(c.CRDObjects, want) {
		t.Errorf("counts %v, want only the good one %v", c.CRDObjects, want)
	}
	errs := errorsFor(s, BundleInfoFile)
	joined := strings.Join(errs, "\n")
	if len(errs) != 3 || !strings.Contains(joined, `-5 objects of CRD "gadgets.apps.example.com"`) ||
		!strings.Contains(joined, `9000000000 objects of CRD "sprockets.apps.example.com"`) || !strings.Contains(joined, `a count for ""`) {
		t.Errorf("want three errors naming the bad counts, got:\n%s", joined)
	}
}

// A metadata file with more counts than a cluster has CRDs is ignored whole.
func TestBundleCRDObjectCountsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\nclusters:\n  - name: a\n    crdObjects:\n")
	for i := 0; i <= maxCRDCounts; i++ {
		b.WriteString("      c" + strconv.Itoa(i) + ".example.com: 1\n")
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"unstick-bundle.yaml": b.String(), "clusters/a/pods.yaml": goodPod})
	s := load(t, dir)
	if c := s.Cluster("a"); c == nil || len(c.CRDObjects) != 0 {
		t.Fatalf("counts kept from an oversized list")
	}
	if errs := errorsFor(s, BundleInfoFile); len(errs) != 1 || !strings.Contains(errs[0], "more than the 10000") {
		t.Errorf("errors %v", errs)
	}
}

// Only a CRD with objects stored in a version other than its storage version is counted.
func TestMigratingOf(t *testing.T) {
	crd := func(stored []string, versions ...any) *unstructured.Unstructured {
		s := make([]any, 0, len(stored))
		for _, v := range stored {
			s = append(s, v)
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.apps.example.com"},
			"spec": map[string]any{"group": "apps.example.com", "names": map[string]any{"plural": "widgets", "kind": "Widget"},
				"versions": versions},
			"status": map[string]any{"storedVersions": s},
		}}
	}
	v := func(name string, served, storage bool) any {
		return map[string]any{"name": name, "served": served, "storage": storage}
	}
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
		want bool
	}{
		{"stored as the storage version only", crd([]string{"v2"}, v("v1", true, false), v("v2", true, true)), false},
		{"an old stored version, still served", crd([]string{"v1", "v2"}, v("v1", true, false), v("v2", true, true)), true},
		{"an old stored version, no longer served", crd([]string{"v1", "v2"}, v("v1", false, false), v("v2", true, true)), true},
		{"no storage version", crd([]string{"v1"}, v("v1", true, false)), false},
		{"no status yet", crd(nil, v("v1", true, true)), false},
	} {
		m, ok := migratingOfObject(tc.u)
		if ok != tc.want {
			t.Errorf("%s: counted %v, want %v", tc.name, ok, tc.want)
		}
		if ok && m != (MigratingCRD{Name: "widgets.apps.example.com", Group: "apps.example.com", Plural: "widgets", Version: "v2"}) {
			t.Errorf("%s: %+v", tc.name, m)
		}
	}
}

// CountObjects against a stand-in API server: the real kube-apiserver always gives
// remainingItemCount for an unfiltered list that goes on, so a server that does not (one
// before 1.15, per the field's API doc) and a refusal are injected here.
func TestCountObjectsAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		n       int
		counted bool
	}{
		{"remaining count", 200, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"continue":"eyJ2","remainingItemCount":36},"items":[{"metadata":{"name":"w-000","namespace":"widgets"}}]}`, 37, true},
		{"all in one", 200, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[{"metadata":{"name":"w-000","namespace":"widgets"}}]}`, 1, true},
		{"none", 200, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{},"items":[]}`, 0, true},
		{"no remaining count", 200, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"continue":"eyJ2"},"items":[{"metadata":{"name":"w-000","namespace":"widgets"}}]}`, snapshot.ObjectsUnknown, true},
		{"absurd remaining count", 200, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"continue":"eyJ2","remainingItemCount":9000000000},"items":[{"metadata":{"name":"w-000","namespace":"widgets"}}]}`, snapshot.ObjectsUnknown, true},
		{"forbidden", 403, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"widgets.apps.example.com is forbidden: User \"system:serviceaccount:cattle-system:unstick\" cannot list resource \"widgets\" in API group \"apps.example.com\" at the cluster scope","reason":"Forbidden","code":403}`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				asked = r.URL.Path + "?" + r.URL.RawQuery
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			meta, err := metadata.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			n, ok := CountObjects(t.Context(), meta, MigratingCRD{Name: "widgets.apps.example.com", Group: "apps.example.com", Plural: "widgets", Version: "v1beta1"})
			if n != tc.n || ok != tc.counted {
				t.Errorf("count %d (read %v), want %d (%v)", n, ok, tc.n, tc.counted)
			}
			if asked != "/apis/apps.example.com/v1beta1/widgets?limit=1" {
				t.Errorf("asked %s", asked)
			}
		})
	}
}
