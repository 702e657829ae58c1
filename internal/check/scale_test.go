package check_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/fleetgen"
	"github.com/unstick-dev/unstick/internal/source"
)

var fleets sync.Map // n → bundle dir, generated once per test binary

func fleetBundle(tb testing.TB, n int) string {
	tb.Helper()
	if d, ok := fleets.Load(n); ok {
		return d.(string)
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("unstick-fleet-%d-", n))
	if err != nil {
		tb.Fatal(err)
	}
	if err := fleetgen.Write(dir, n, 0.02, 1); err != nil {
		tb.Fatal(err)
	}
	fleets.Store(n, dir)
	return dir
}

func scanFleet(tb testing.TB, dir string) (findings map[string]int, incidents int) {
	tb.Helper()
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		tb.Fatal(err)
	}
	ctx := &check.Context{Snap: snap, Now: snap.CollectedAt, Thresholds: check.NewThresholds(cat), Catalog: cat}
	incs, fs, _ := check.Evaluate(ctx, check.Filter{})
	findings = map[string]int{}
	for _, f := range fs {
		findings[f.ID]++
	}
	return findings, len(incs)
}

// A generated fleet's stuck clusters are all found, and the same agent failure on many
// clusters is one fleet-wide incident rather than dozens.
func TestGeneratedFleetFindings(t *testing.T) {
	got, incidents := scanFleet(t, fleetBundle(t, 500))
	for _, id := range []string{"fleet/agent-upgrade-stuck", "fleet/bundle-err-applied", "fleet/bundle-not-ready", "fleet/agent-heartbeat-stale"} {
		if got[id] < 5 {
			t.Errorf("%s found %d times in a 500-cluster fleet with 2 %% stuck that way", id, got[id])
		}
	}
	if got["fleet/fleetwide-failure"] == 0 {
		t.Errorf("no fleet-wide incident for the same agent error on ~10 clusters: %v", got)
	}
	if incidents > got["fleet/agent-heartbeat-stale"]+5 {
		t.Errorf("%d incidents: the per-cluster failures were not grouped (%v)", incidents, got)
	}
}

// BenchmarkOfflineScan is a whole scan (load, judge, group) of a generated management bundle.
//
//	go test ./internal/check -run '^$' -bench 'OfflineScan|DecodeOnly' -benchtime 3x
func BenchmarkOfflineScan(b *testing.B) {
	for _, n := range []int{500, 1000, 2000, 5000} {
		dir := fleetBundle(b, n)
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for b.Loop() {
				scanFleet(b, dir)
			}
		})
	}
}

// BenchmarkDecodeOnly is the floor a scan is measured against: read every file of the same
// bundle and decode its JSON into generic values, nothing else.
func BenchmarkDecodeOnly(b *testing.B) {
	for _, n := range []int{500, 1000, 2000, 5000} {
		dir := fleetBundle(b, n)
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for b.Loop() {
				var files []string
				_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						files = append(files, p)
					}
					return nil
				})
				var wg sync.WaitGroup
				ch := make(chan string)
				for range runtime.GOMAXPROCS(0) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for p := range ch {
							data, err := os.ReadFile(p)
							if err != nil {
								b.Error(err)
								continue
							}
							var v any
							_ = json.Unmarshal(data, &v)
						}
					}()
				}
				for _, f := range files {
					ch <- f
				}
				close(ch)
				wg.Wait()
			}
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	fleets.Range(func(_, d any) bool { _ = os.RemoveAll(d.(string)); return true })
	os.Exit(code)
}
