package check_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/source"
)

// pipelineFiles are the example fleet's files that hold Fleet's pipeline before the
// BundleDeployment: GitRepos, HelmOps, Contents, and the gitjob Jobs and pods of the GitRepos'
// namespace.
func pipelineFile(rel string) bool {
	base := filepath.Base(rel)
	for _, p := range []string{"gitrepos", "helmops", "contents"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return strings.Contains(rel, "/fleet-default/") && (strings.HasPrefix(base, "jobs") || strings.HasPrefix(base, "pods"))
}

// exampleWithoutPipeline copies the example fleet without its pipeline files.
func exampleWithoutPipeline(tb testing.TB, src string) (dir string, dropped int) {
	tb.Helper()
	dir = tb.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if pipelineFile(filepath.ToSlash(rel)) {
			dropped++
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dir, dropped
}

// BenchmarkExampleFleetPipeline is a whole offline scan (load, judge, group) of the example
// fleet as shipped and of the same fleet without its pipeline objects (GitRepos, HelmOps,
// Contents, gitjob Jobs and pods): what reading and judging the pipeline costs. Each
// iteration scans both, alternating which goes first, so both see the same machine; it
// reports each one's median and their ratio.
//
//	go test ./internal/check -run '^$' -bench ExampleFleetPipeline -benchtime 40x -count 3
func BenchmarkExampleFleetPipeline(b *testing.B) {
	src := filepath.Join("..", "..", "examples", "fleet-upgrade-stuck")
	without, dropped := exampleWithoutPipeline(b, src)
	if dropped == 0 {
		b.Fatal("the example fleet holds no pipeline objects: nothing to compare")
	}
	var with, wo, withCPU, woCPU []time.Duration
	timed := func(dir string, wall, cpu *[]time.Duration) {
		start, cpu0 := time.Now(), processCPU()
		scanFleet(b, dir)
		*wall = append(*wall, time.Since(start))
		*cpu = append(*cpu, processCPU()-cpu0)
	}
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			timed(src, &with, &withCPU)
			timed(without, &wo, &woCPU)
		} else {
			timed(without, &wo, &woCPU)
			timed(src, &with, &withCPU)
		}
		i++
	}
	mw, mo := median(with), median(wo)
	b.ReportMetric(float64(mw.Nanoseconds()), "with-ns/scan")
	b.ReportMetric(float64(mo.Nanoseconds()), "without-ns/scan")
	b.ReportMetric(float64(mw)/float64(mo), "wall-ratio")
	if cw, co := median(withCPU), median(woCPU); co > 0 {
		b.ReportMetric(float64(cw)/float64(co), "cpu-ratio")
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// The comparison above is only worth its figure if the pipeline is read in one and not in
// the other: the example's GitRepos are loaded, and leaving their files out leaves them out.
func TestExampleFleetPipelineBenchComparesWhatItSays(t *testing.T) {
	src := filepath.Join("..", "..", "examples", "fleet-upgrade-stuck")
	without, _ := exampleWithoutPipeline(t, src)
	count := func(dir string) (n int) {
		snap, err := (&source.Offline{Path: dir}).Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range snap.Clusters {
			n += len(c.GitRepos)
		}
		return n
	}
	if got := count(src); got == 0 {
		t.Errorf("the example fleet as shipped loads no GitRepo")
	}
	if got := count(without); got != 0 {
		t.Errorf("the example fleet without its pipeline files still loads %d GitRepos", got)
	}
}
