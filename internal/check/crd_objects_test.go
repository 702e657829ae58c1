package check

import (
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A CRD with objects stored in a version it no longer serves: the finding says how many
// objects its migration rewrites when the source counted them, "unknown" when the server's
// list gave no count, and "count not read" when nothing listed them.
func TestCRDVersionNotServedSaysObjectCount(t *testing.T) {
	widgets := func() *snapshot.CRD {
		return &snapshot.CRD{Name: "widgets.example.unstick.dev", Group: "example.unstick.dev", Kind: "Widget", Plural: "widgets",
			Versions:       []snapshot.CRDVersion{{Name: "v1", Served: false}, {Name: "v2", Served: true, Storage: true}},
			StoredVersions: []string{"v1", "v2"}}
	}
	for _, tc := range []struct {
		name     string
		counts   map[string]int
		objects  string // the "objects" Var
		summary  string
		evidence string
	}{
		{"counted", map[string]int{"widgets.example.unstick.dev": 37}, "37", "migrate its 37 objects to v2", "; 37 objects to migrate"},
		{"one", map[string]int{"widgets.example.unstick.dev": 1}, "1", "migrate its 1 object to v2", "; 1 object to migrate"},
		{"none left", map[string]int{"widgets.example.unstick.dev": 0}, "0", "migrate its 0 objects to v2", "; 0 objects to migrate"},
		{"server gave no count", map[string]int{"widgets.example.unstick.dev": snapshot.ObjectsUnknown}, "", "migrate them to v2", "objects to migrate: unknown"},
		{"not read", nil, "", "migrate them to v2", "objects to migrate: count not read"},
		{"another CRD counted", map[string]int{"gadgets.example.unstick.dev": 5}, "", "migrate them to v2", "objects to migrate: count not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &snapshot.Cluster{Name: "prod-ap-1", Role: snapshot.Downstream, CRDsCollected: true, CRDs: []*snapshot.CRD{widgets()}, CRDObjects: tc.counts}
			fs, err := crdVersions.Run(gateContext(t, &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, ""))
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 || fs[0].ID != "crd/version-not-served" {
				t.Fatalf("want one crd/version-not-served, got %+v", fs)
			}
			f := fs[0]
			if got := f.Vars["objects"]; got != tc.objects {
				t.Errorf("objects Var %q, want %q", got, tc.objects)
			}
			if !strings.Contains(f.Summary, tc.summary) {
				t.Errorf("summary %q does not say %q", f.Summary, tc.summary)
			}
			if len(f.Evidence) != 1 || !strings.Contains(f.Evidence[0].Text, tc.evidence) {
				t.Errorf("evidence %+v does not say %q", f.Evidence, tc.evidence)
			}
		})
	}
}
