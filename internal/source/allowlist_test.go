package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/redact"
)

// The allowlist keeps everything a check reads: every scenario bundle, passed object by object
// through what collect keeps (snapshot.Keep, Helm records reduced to their metadata, logs
// redacted), gives the same findings, incidents and errors as the bundle as written. A check
// that starts reading a field the allowlist drops fails here, naming the scenario.
func TestScenariosScanTheSameThroughTheAllowlist(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "testdata", "scenarios")
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "expect.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if len(dirs) < 50 {
		t.Fatalf("only %d scenarios found under %s", len(dirs), root)
	}
	removedSomewhere := 0
	for _, dir := range dirs {
		name, _ := filepath.Rel(root, dir)
		t.Run(name, func(t *testing.T) {
			var want struct {
				Now time.Time `json:"now"`
			}
			b, _ := os.ReadFile(filepath.Join(dir, "expect.yaml"))
			_ = yaml.Unmarshal(b, &want)
			kept := filepath.Join(t.TempDir(), "bundle")
			removedSomewhere += throughAllowlist(t, dir, kept)
			a, b2 := scanKeys(t, cat, dir, want.Now), scanKeys(t, cat, kept, want.Now)
			if !slices.Equal(a, b2) {
				t.Errorf("findings differ through the allowlist:\nas written:\n  %s\nthrough the allowlist:\n  %s", strings.Join(a, "\n  "), strings.Join(b2, "\n  "))
			}
		})
	}
	if removedSomewhere == 0 {
		t.Error("the allowlist removed nothing from any scenario: the test proves nothing")
	}
}

// scanKeys scans a bundle and lists its findings, incident roots and error count as lines.
func scanKeys(t *testing.T, cat *catalog.Catalog, dir string, now time.Time) []string {
	t.Helper()
	snap, err := (&Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	if now.IsZero() {
		now = snap.CollectedAt
	}
	ctx := &check.Context{Snap: snap, Now: now, Thresholds: check.NewThresholds(cat), Catalog: cat}
	incs, fs, errs := check.Evaluate(ctx, check.Filter{})
	var out []string
	for _, f := range fs {
		out = append(out, "finding "+f.ID+" "+f.Cluster+"→"+f.Affects+" "+f.Object.String()+" "+f.Severity.String())
	}
	for _, i := range incs {
		out = append(out, "incident "+i.RootCause.ID+" "+i.RootCause.Cluster+" "+i.RootCause.Object.String())
	}
	out = append(out, "errors "+itoa(len(errs)+len(snap.Errors)))
	slices.Sort(out)
	return out
}

// throughAllowlist copies a scenario bundle, rewriting every object file as collect would
// keep its objects, and every log as redacted; it returns how many fields were removed.
func throughAllowlist(t *testing.T, src, dst string) int {
	t.Helper()
	removed := 0
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".log"):
			b = redact.Text(b)
		case strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json"):
			if nb, n, ok := keepFile(b); ok {
				b, removed = nb, removed+n
			}
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return removed
}

// keepFile rewrites a file of Kubernetes objects (YAML documents, JSON, Lists) as one JSON
// List of the objects reduced by collect's keepAllowed; ok is false for any other file, which is
// copied as it is.
func keepFile(b []byte) ([]byte, int, bool) {
	var items []any
	removed := 0
	var add func(obj map[string]any) bool
	add = func(obj map[string]any) bool {
		kind, _ := obj["kind"].(string)
		api, _ := obj["apiVersion"].(string)
		if kind == "" || api == "" || strings.HasPrefix(api, "unstick.dev/") {
			return false
		}
		if list, ok := obj["items"].([]any); ok && strings.HasSuffix(kind, "List") {
			for _, it := range list {
				m, ok := it.(map[string]any)
				if !ok || !add(m) {
					return false
				}
			}
			return true
		}
		counts := map[string]int{}
		keepAllowed(api, kind, obj, counts)
		removed += counts["fields outside the allowlist"]
		items = append(items, obj)
		return true
	}
	docs := strings.Split("\n"+string(b), "\n---")
	for _, doc := range docs {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj == nil || !add(obj) {
			return nil, 0, false
		}
	}
	if len(items) == 0 {
		return nil, 0, false
	}
	out, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return nil, 0, false
	}
	return out, removed, true
}

// What collect keeps of the objects the upgrade gate reads beyond the scenarios: the version
// Rancher installs next, and of a Fleet Content only its documents' identities.
func TestAllowlistKeepsTheUpgradeTarget(t *testing.T) {
	prov := map[string]any{"apiVersion": "provisioning.cattle.io/v1", "kind": "Cluster",
		"metadata": map[string]any{"name": "prod-ap-1", "namespace": "fleet-default"},
		"spec":     map[string]any{"kubernetesVersion": "v1.32.5+rke2r1", "rkeConfig": map[string]any{"registries": map[string]any{"configs": "secret"}}},
		"status":   map[string]any{"clusterName": "c-m-abc"}}
	keepAllowed("provisioning.cattle.io/v1", "Cluster", prov, map[string]int{})
	spec := prov["spec"].(map[string]any)
	// rkeConfig keeps what the rancher/ checks read (upgrade strategy, pools, etcd snapshot
	// settings, the registry prefix); its registries (credentials) go.
	rkeConfig, _ := spec["rkeConfig"].(map[string]any)
	if spec["kubernetesVersion"] != "v1.32.5+rke2r1" || rkeConfig["registries"] != nil || prov["status"].(map[string]any)["clusterName"] != "c-m-abc" {
		t.Errorf("provisioning Cluster through the allowlist: %v", prov)
	}
	mgmt := map[string]any{"apiVersion": "management.cattle.io/v3", "kind": "Cluster", "metadata": map[string]any{"name": "c-m-abc"},
		"spec": map[string]any{"displayName": "prod-ap-1", "k3sConfig": map[string]any{"kubernetesVersion": "v1.32.3+k3s1", "k3supgradeStrategy": map[string]any{}}}}
	keepAllowed("management.cattle.io/v3", "Cluster", mgmt, map[string]int{})
	if k := mgmt["spec"].(map[string]any)["k3sConfig"].(map[string]any); k["kubernetesVersion"] != "v1.32.3+k3s1" || len(k) != 1 {
		t.Errorf("management Cluster through the allowlist: %v", mgmt)
	}

	payload := `{"resources":[{"name":"apf/fs.yaml","content":"apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata:\n  name: fs\nspec:\n  matchingPrecedence: 4242\n"}]}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(payload))
	zw.Close()
	content := map[string]any{"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Content", "metadata": map[string]any{"name": "s-abc"},
		"content": base64.StdEncoding.EncodeToString(gz.Bytes()), "sha256sum": "abc"}
	keepAllowed("fleet.cattle.io/v1alpha1", "Content", content, map[string]int{})
	raw, _ := base64.StdEncoding.DecodeString(content["content"].(string))
	docs, err := manifest.ContentDocs(raw)
	if err != nil || len(docs) != 1 || docs[0].Kind != "FlowSchema" || docs[0].Source != "apf/fs.yaml" {
		t.Fatalf("Content through the allowlist: %v %+v", err, docs)
	}
	if d, _ := manifest.Gunzip(raw); strings.Contains(string(d), "4242") {
		t.Errorf("a value of the Content is kept: %s", d)
	}
}
