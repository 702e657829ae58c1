package registry

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/imageref"
)

// BenchmarkInventory1000Refs is the image inventory of a large fleet: 1,000 distinct image
// references (distinct digests, so no platform is answered from the cache), all present,
// probed by the real prober against go-containerregistry's in-process registry with 20 ms
// added to every request (each reference is a HEAD, a GET of the manifest and a GET of its
// config blob). "default" is the prober's default concurrency, what `unstick images` uses
// without --registry-concurrency.
//
//	go test ./internal/registry -run '^$' -bench Inventory1000Refs -benchtime 3x
func BenchmarkInventory1000Refs(b *testing.B) {
	const n = 1000
	tr := newTestRegistry(b)
	refs := make([]string, 0, n)
	for i := range n {
		r := fmt.Sprintf("inventory/app%02d:v%d", i%50, i)
		tr.push(b, r, image(b, "linux", "amd64"))
		refs = append(refs, tr.host+"/"+r)
	}
	tr.set(func(r *testRegistry) { r.delay = 20 * time.Millisecond })
	for _, c := range []int{0, 8, 16, 32, 64} {
		label := fmt.Sprint(c)
		if c == 0 {
			label = fmt.Sprintf("default(%d)", New(Options{NoDockerConfig: true}).opts.Concurrency)
		}
		b.Run("concurrency="+label, func(b *testing.B) {
			tr.requests.Store(0)
			tr.blobs.Store(0)
			tr.maxIn.Store(0)
			cpu0 := cpuSeconds()
			for b.Loop() {
				p := newProber(Options{Concurrency: c, Timeout: 10 * time.Second})
				got := p.Probe(context.Background(), refs, nil)
				if len(got) != n {
					b.Fatalf("%d results for %d references", len(got), n)
				}
				for r, f := range got {
					if f.Status != imageref.OK || len(f.Platforms) == 0 {
						b.Fatalf("%s: %+v", r, f)
					}
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/op")
			// CPU of the whole process (prober and in-process registry): on a loaded
			// machine the wall time is bounded below by it divided by the cores it gets.
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(tr.requests.Load()+tr.blobs.Load())/float64(b.N*n), "req/ref")
			b.ReportMetric(float64(tr.maxIn.Load()), "max-manifest-requests-in-flight")
		})
	}
}

// cpuSeconds is the user and system CPU time this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
