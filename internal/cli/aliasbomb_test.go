package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// helmBombSecret is a deployed Helm release Secret a tenant wrote in tenant-a: its record is
// well formed and its manifest a 1 MiB anchored value aliased 900 times.
func helmBombSecret(t *testing.T) string {
	rec, err := json.Marshal(map[string]any{"name": "app", "namespace": "tenant-a", "version": 3,
		"info": map[string]any{"status": "deployed", "description": "Upgrade complete"}, "manifest": bombtest.BigScalar("tenant-a", "app-config")})
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(rec)
	zw.Close()
	stored := base64.StdEncoding.EncodeToString(gz.Bytes())
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.app.v3
  namespace: tenant-a
  labels: {name: app, owner: helm, status: deployed, version: "3", modifiedAt: "1764309600"}
data:
  release: %s
`, base64.StdEncoding.EncodeToString([]byte(stored)))
}

// fleetConfigBomb is the fleet-controller ConfigMap with a config of nested "billion laughs".
func fleetConfigBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-controller\n  namespace: cattle-fleet-system\ndata:\n  config: |\n")
	for _, l := range strings.Split(strings.TrimSuffix("agentCheckinInterval: 15m\n"+bombtest.Laughs("cattle-fleet-system", "fleet-controller"), "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// findingKeys lists a report's findings by ID, cluster and object, sorted.
func findingKeys(r jsonReport) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s %s/%s/%s", f.ID, f.Cluster, f.Object.Kind, f.Object.Namespace, f.Object.Name))
	}
	sort.Strings(out)
	return out
}

// The example fleet with a tenant's Helm release whose manifest is an alias bomb, and a
// fleet-controller config that is one: scan names the Secret and the ConfigMap under errors,
// judges everything else as it does without them, and allocates far less than the expanded
// documents hold.
func TestScanReportsAliasBombsAndJudgesTheRest(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(example)); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "clusters/prod-eu-1/tenant-a/helm-app.yaml"), helmBombSecret(t))
	writeFile(t, filepath.Join(dir, "clusters/local/cattle-fleet-system/configmap-fleet-controller.yaml"), fleetConfigBomb())

	var base, got jsonReport
	baseAlloc := bombtest.Allocated(func() { base, _, _ = scanJSON(t, example) })
	alloc := bombtest.Allocated(func() { got, _, _ = scanJSON(t, dir) })
	if alloc > baseAlloc+256<<20 {
		t.Errorf("the scan allocated %d MiB, the example alone %d MiB: an alias was expanded", alloc>>20, baseAlloc>>20)
	}
	want := []string{
		"Helm release Secret tenant-a/sh.helm.release.v1.app.v3: release manifest not read: with its YAML aliases expanded it holds 902 MiB in 918 nodes, more than the ",
		"Fleet controller ConfigMap cattle-fleet-system/fleet-controller: config not read: with its YAML aliases expanded it holds ",
	}
	if len(got.Errors) != len(want) {
		t.Errorf("errors %+v, want %d", got.Errors, len(want))
	}
	for _, w := range want {
		found := false
		for _, e := range got.Errors {
			found = found || strings.HasPrefix(e.Message, w)
		}
		if !found {
			t.Errorf("no error starting %q in %+v", w, got.Errors)
		}
	}
	if b, g := findingKeys(base), findingKeys(got); strings.Join(b, "\n") != strings.Join(g, "\n") {
		t.Errorf("findings differ from the example's:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(b, "\n"))
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
