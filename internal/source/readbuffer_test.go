package source

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/unstick-dev/unstick/internal/fleetgen"
)

// A bundle directory's files are read into one buffer per worker, reused from file to file:
// the objects of a file must keep nothing of it. A fleet's bundle (typed Lists of
// BundleDeployments, Fleet Clusters and ClusterRegistrations, with a YAML file and agent
// logs between them) loads from its directory exactly as from a .tar.gz of it, whose
// members are read into memory of their own.
func TestDirectoryReadsAsItsArchive(t *testing.T) {
	dir := t.TempDir()
	if err := fleetgen.Write(dir, 60, 0.05, 7); err != nil {
		t.Fatal(err)
	}
	extra := map[string]string{
		"clusters/local/cattle-fleet-system/pods.yaml":                          goodPod,
		"clusters/local/logs/cattle-fleet-system/fleet-agent-0/fleet-agent.log": "time=\"2026-11-28T09:00:00Z\" level=error msg=\"error syncing 'c-m-1': cannot patch\"\n",
	}
	for name, body := range extra {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "fleet.tar.gz")
	packTarGz(t, archive, treeEntries(files, ""))

	fromDir, fromArchive := load(t, dir), load(t, archive)
	if len(fromDir.Clusters) != 1 || len(fromDir.Clusters[0].BundleDeployments) != 600 {
		t.Fatalf("want one cluster with 600 BundleDeployments, got %s", describeSnap(fromDir))
	}
	a, b := fromDir.Clusters[0], fromArchive.Clusters[0]
	for _, pair := range [][2]any{
		{a.BundleDeployments, b.BundleDeployments}, {a.FleetClusters, b.FleetClusters},
		{a.ClusterRegistrations, b.ClusterRegistrations}, {a.Pods, b.Pods}, {a.Logs, b.Logs},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%T read from the directory differ from those read from its archive", pair[0])
		}
	}
}
