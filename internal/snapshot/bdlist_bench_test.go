package snapshot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/unstick-dev/unstick/internal/fleetgen"
)

// fleetLists are the BundleDeployment Lists of a generated fleet of n clusters, one per
// cluster namespace, as `collect` writes them.
func fleetLists(b *testing.B, n int) [][]byte {
	dir := b.TempDir()
	if err := fleetgen.Write(dir, n, 0.02, 1); err != nil {
		b.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "clusters", "local", "cluster-*", "bundledeployments.json"))
	if err != nil || len(files) != n {
		b.Fatalf("%d BundleDeployment lists, want %d (%v)", len(files), n, err)
	}
	var out [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// BenchmarkBundleDeploymentLists decodes the BundleDeployment Lists of 200 clusters (2,000
// objects) through one string table, as one loader worker does: by hand (the loader's
// path) and by reflection (what the hand-written reader falls back to).
func BenchmarkBundleDeploymentLists(b *testing.B) {
	lists := fleetLists(b, 200)
	size := 0
	for _, l := range lists {
		size += len(l)
	}
	const av, kind = "fleet.cattle.io/v1alpha1", "BundleDeployment"
	run := func(b *testing.B, decode func(data []byte, strs *Strings) bool) {
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			var strs Strings
			for _, l := range lists {
				if !decode(l, &strs) {
					b.Fatal("not decoded")
				}
			}
		}
	}
	b.Run("by-hand", func(b *testing.B) {
		run(b, func(data []byte, strs *Strings) bool {
			_, _, ok, _ := decodeBundleDeployments(av, kind, data, false, -1, strs)
			return ok
		})
	})
	b.Run("reflection", func(b *testing.B) {
		run(b, func(data []byte, strs *Strings) bool {
			_, _, ok, _ := decodeList[BundleDeployment](av, kind, data, false, -1, strs)
			return ok
		})
	})
}
