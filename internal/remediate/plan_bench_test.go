package remediate_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/fleetgen"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/source"
)

// Planning is a pass over the incidents; it must stay negligible next to loading and judging.
// go test ./internal/remediate -run '^$' -bench Plan -benchmem
func BenchmarkPlanExampleFleet(b *testing.B) {
	benchPlan(b, filepath.Join("..", "..", "examples", "fleet-upgrade-stuck"))
}

func BenchmarkPlanGeneratedFleet2000(b *testing.B) {
	dir := b.TempDir()
	if err := fleetgen.Write(dir, 2000, 0.02, 1); err != nil {
		b.Fatal(err)
	}
	benchPlan(b, dir)
}

func benchPlan(b *testing.B, dir string) {
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		b.Fatal(err)
	}
	ctx := &check.Context{Snap: snap, Now: snap.CollectedAt, Thresholds: check.NewThresholds(cat), Catalog: cat}
	incidents, _, _ := check.Evaluate(ctx, check.Filter{})
	steps := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: remediate.Options{MaxRisk: remediate.Medium}})
		steps = len(p.Steps())
	}
	b.ReportMetric(float64(len(incidents)), "incidents")
	b.ReportMetric(float64(steps), "steps")
}
