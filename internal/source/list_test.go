package source

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/unstick-dev/unstick/internal/fleetgen"
)

// A List is decoded in one pass when its first bytes say what its items are (what kubectl
// and fleet dump write). The snapshot must be exactly the one the item-by-item reading gives:
// the same typed objects, the same evidence sources.
func TestListFastPathMatchesItemByItem(t *testing.T) {
	fast := t.TempDir()
	if err := fleetgen.Write(fast, 40, 0.1, 7); err != nil {
		t.Fatal(err)
	}
	events := `{"apiVersion":"v1","items":[` +
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"fleet-agent-7d9c.1","namespace":"cattle-fleet-system"},"involvedObject":{"kind":"Pod","namespace":"cattle-fleet-system","name":"fleet-agent-7d9c"},"reason":"FailedScheduling","message":"0/3 nodes are available: 3 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }.","type":"Warning","eventTime":"2026-10-29T09:30:00.000000Z","series":{"count":41,"lastObservedTime":"2026-10-29T10:10:00.000000Z"}},` +
		`{"apiVersion":"v1","kind":"Event","metadata":{"name":"fleet-agent-7d9c.2","namespace":"cattle-fleet-system","managedFields":[{"manager":"kubelet"}]},"involvedObject":{"kind":"Pod","namespace":"cattle-fleet-system","name":"fleet-agent-7d9c"},"reason":"BackOff","message":"Back-off pulling image \"rancher/fleet-agent:v0.16.0\"","type":"Warning","count":12,"lastTimestamp":"2026-10-29T10:00:00Z"}` +
		`],"kind":"List","metadata":{"resourceVersion":""}}`
	if err := os.WriteFile(filepath.Join(fast, "clusters", "local", "events.json"), []byte(events), 0o644); err != nil {
		t.Fatal(err)
	}

	// The same files with a key order the fast path does not read: metadata first.
	slow := t.TempDir()
	lists := 0
	err := filepath.WalkDir(fast, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fast, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, _, ok := listItemKind(data); ok {
			lists++
			var l struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(data, &l); err != nil {
				return err
			}
			items, _ := json.Marshal(l.Items)
			data = append(append([]byte(`{"metadata":{},"kind":"List","apiVersion":"v1","items":`), items...), '}')
			if _, _, ok := listItemKind(data); ok {
				t.Fatalf("%s: reordered list still read by the fast path", rel)
			}
		}
		out := filepath.Join(slow, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if lists < 40 {
		t.Fatalf("only %d list files took the fast path", lists)
	}

	a, b := load(t, fast), load(t, slow)
	if len(a.Errors) > 0 || len(b.Errors) > 0 {
		t.Fatalf("errors: %v / %v", a.Errors, b.Errors)
	}
	if len(a.Clusters) != len(b.Clusters) {
		t.Fatalf("%d clusters vs %d", len(a.Clusters), len(b.Clusters))
	}
	for i, ca := range a.Clusters {
		cb := b.Clusters[i]
		if len(ca.BundleDeployments) == 0 || len(ca.Events) != 2 {
			t.Fatalf("cluster %s: %d BundleDeployments, %d events", ca.Name, len(ca.BundleDeployments), len(ca.Events))
		}
		for _, pair := range [][2]any{
			{ca.BundleDeployments, cb.BundleDeployments},
			{ca.FleetClusters, cb.FleetClusters},
			{ca.ClusterRegistrations, cb.ClusterRegistrations},
			{ca.Events, cb.Events},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("cluster %s: objects differ between the one-pass and the item-by-item reading", ca.Name)
			}
		}
		for _, bd := range ca.BundleDeployments {
			sa, sb := ca.Source("BundleDeployment", bd.Namespace, bd.Name), cb.Source("BundleDeployment", bd.Namespace, bd.Name)
			if sa != sb || sa == "" {
				t.Errorf("BundleDeployment %s/%s cited as %q, item by item %q", bd.Namespace, bd.Name, sa, sb)
			}
		}
		for _, fc := range ca.FleetClusters {
			if fc.ManagedFields != nil {
				t.Errorf("managedFields kept on %s", fc.Name)
			}
		}
		for _, ev := range ca.Events {
			if ev.Reason == "FailedScheduling" && ev.Count != 41 {
				t.Errorf("event series not folded into count: %d", ev.Count)
			}
		}
	}
}

// The first item's kind is read from the bytes kubectl writes, compact or indented; any
// other shape is left to the general reading.
func TestListItemKind(t *testing.T) {
	for _, tc := range []struct {
		in       string
		av, kind string
	}{
		{`{"apiVersion":"v1","items":[{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{}}],"kind":"List"}`, "fleet.cattle.io/v1alpha1", "BundleDeployment"},
		{"{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\n            \"apiVersion\": \"v1\",\n            \"kind\": \"Pod\",\n", "v1", "Pod"},
		{`{"items":[{"kind":"Node","apiVersion":"v1","metadata":{}}]}`, "v1", "Node"},
		{`{"apiVersion":"v1","items":[],"kind":"List"}`, "", ""},
		{`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}`, "", ""},
		{`{"metadata":{},"items":[{"apiVersion":"v1","kind":"Pod"}]}`, "", ""},
		{`{"apiVersion":"v1","items":[{"apiVersion":"v\u0031","kind":"Pod"}]}`, "", ""},
		{`{"apiVersion":"v1","items":[{"apiVersion":"v1","metadata":{},"kind":"Pod"}]}`, "", ""},
		{`{"apiVersion":"v1","items":[{"apiVersion":"v1"`, "", ""},
		{``, "", ""},
	} {
		av, kind, ok := listItemKind([]byte(tc.in))
		if av != tc.av || kind != tc.kind || ok != (tc.kind != "") {
			t.Errorf("listItemKind(%.60q) = %q %q %v, want %q %q", tc.in, av, kind, ok, tc.av, tc.kind)
		}
	}
}
