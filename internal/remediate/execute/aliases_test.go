package execute

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// bombManifests are release manifests a tenant wrote: a PodDisruptionBudget on a removed API
// (so a rewrite has work to do) followed by an alias bomb.
func bombManifests() map[string]string {
	out := map[string]string{}
	for name, doc := range bombtest.Shapes("tenant-a", "app-config") {
		out[name] = "---\n# Source: app/templates/pdb.yaml\napiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: app\nspec:\n  minAvailable: 1\n---\n# Source: app/templates/cm.yaml\n" + doc
	}
	return out
}

const aliasesRefused = "with its YAML aliases expanded it holds "

// Every reader of a release manifest on the act path refuses an alias bomb before decoding
// it, allocating a few MiB where the expanded manifest holds gigabytes: the rollback's and the
// backup's manifestObjects, the rewrite, and the check that names the revision (called where
// the executor reads a revision, before any write).
func TestExecutorRefusesAliasBombManifests(t *testing.T) {
	e := &Executor{}
	for name, m := range bombManifests() {
		t.Run(name, func(t *testing.T) {
			var err error
			bombtest.WithinAlloc(t, "manifestFits", func() { err = manifestFits("tenant-a", "app", 3, m) })
			if err == nil || !strings.HasPrefix(err.Error(), "Helm release tenant-a/app revision 3: manifest not read: "+aliasesRefused) {
				t.Errorf("manifestFits: %v", err)
			}
			bombtest.WithinAlloc(t, "manifestObjects", func() { _, _, err = e.manifestObjects(nil, "tenant-a", m) })
			if err == nil || !strings.HasPrefix(err.Error(), "the release manifest: not read: "+aliasesRefused) {
				t.Errorf("manifestObjects: %v", err)
			}
			bombtest.WithinAlloc(t, "rewriteManifest", func() { _, _, _, err = rewriteManifest(m, 25) })
			if err == nil || !strings.HasPrefix(err.Error(), "manifest not read: "+aliasesRefused) {
				t.Errorf("rewriteManifest: %v", err)
			}
		})
	}
	// A chart's anchored label set is no bomb: the rewrite goes on.
	shared := "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata:\n  name: app\n  labels: &l {app: app}\nspec:\n  selector:\n    matchLabels: *l\n"
	if err := manifestFits("tenant-a", "app", 3, shared); err != nil {
		t.Errorf("manifestFits refuses an anchored label set: %v", err)
	}
	if _, changes, _, err := rewriteManifest(shared, 25); err != nil || len(changes) != 1 {
		t.Errorf("rewrite of a manifest with an anchored label set: %d changes, %v", len(changes), err)
	}
}

// A backup body is decoded whole: one someone holding the key resealed as an alias bomb is
// refused, naming its file, without expanding it.
func TestLoadBackupRefusesAnAliasBomb(t *testing.T) {
	dir := sampleBackup(t)
	depFile := "objects/local/apps/Deployment/cattle-fleet-system/fleet-agent.yaml"
	bomb := strings.Replace(bombtest.BigScalar("cattle-fleet-system", "fleet-agent"), "apiVersion: v1\nkind: ConfigMap\n", "apiVersion: apps/v1\nkind: Deployment\n", 1)
	if err := os.WriteFile(filepath.Join(dir, depFile), []byte(bomb), 0o600); err != nil {
		t.Fatal(err)
	}
	reseal(t, dir, func(idx []IndexEntry) []IndexEntry { return idx })
	var err error
	bombtest.WithinAlloc(t, "LoadBackup", func() { _, err = LoadBackup(dir, mustKey(t, sampleKey)) })
	if err == nil || !strings.Contains(err.Error(), depFile+": not read: "+aliasesRefused) {
		t.Fatalf("want the backup refused naming %s, got %v", depFile, err)
	}
}
