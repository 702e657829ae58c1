package check_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/source"
)

// preflightRancher judges a rancher scenario as preflight does, with the registry's answers.
func preflightRancher(t *testing.T, scenario string, images map[string]imageref.Facts) []finding.Finding {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: filepath.Join("..", "..", "testdata", "scenarios", "rancher", scenario)}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := &check.Context{Snap: snap, Now: time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), Thresholds: check.NewThresholds(cat),
		Catalog: cat, Preflight: true, Images: images}
	_, fs, _ := check.Evaluate(ctx, check.Filter{})
	return fs
}

// Before an upgrade, the planned version's installer image is probed like any other: missing
// in the registry, or without a build for a node's architecture, is a gate.
func TestPreflightInstallerImage(t *testing.T) {
	const installer = "rancher/system-agent-installer-rke2:v1.31.4-rke2r1"
	const runtime = "rancher/rke2-runtime:v1.31.4-rke2r1"
	amd64 := []imageref.Platform{{OS: "linux", Architecture: "amd64"}}
	arm64 := []imageref.Platform{{OS: "linux", Architecture: "arm64"}}
	for _, tc := range []struct {
		name   string
		images map[string]imageref.Facts
		want   string // "" : not reported
	}{
		{"missing", map[string]imageref.Facts{installer: {Ref: installer, Status: imageref.Missing, Error: "MANIFEST_UNKNOWN"}, runtime: {Ref: runtime, Status: imageref.OK, Platforms: amd64}}, "does not exist"},
		{"wrong arch", map[string]imageref.Facts{installer: {Ref: installer, Status: imageref.OK, Platforms: arm64}, runtime: {Ref: runtime, Status: imageref.OK, Platforms: amd64}}, "has no build for prod-eu-2-cp-7k2xq (linux/amd64)"},
		{"present", map[string]imageref.Facts{installer: {Ref: installer, Status: imageref.OK, Platforms: amd64}, runtime: {Ref: runtime, Status: imageref.OK, Platforms: amd64}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := preflightRancher(t, "plan-not-applied-healthy", tc.images)
			var got *finding.Finding
			for i := range fs {
				if fs[i].ID == "rancher/installer-image-missing" {
					got = &fs[i]
				}
			}
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("reported: %s", got.Summary)
			case tc.want != "" && got == nil:
				t.Errorf("not reported; got %v", ids(fs))
			case got != nil && !strings.Contains(got.Summary, tc.want):
				t.Errorf("summary %q, want it to say %q", got.Summary, tc.want)
			}
		})
	}
}

// A cluster at rest whose probes fail now, and a budget that would refuse the drains, are
// reported by preflight although no upgrade is under way.
func TestPreflightProbesAndBudgets(t *testing.T) {
	fs := preflightRancher(t, "probes-failing-healthy", nil)
	if slices.Contains(ids(fs), "rancher/probes-failing") {
		t.Errorf("healthy probes reported: %v", ids(fs))
	}
	fs = preflightRancher(t, "probes-failing-at-rest-lookalike", nil)
	if !slices.Contains(ids(fs), "rancher/probes-failing") {
		t.Errorf("failing probes of a cluster at rest not reported by preflight: %v", ids(fs))
	}
	// drain-would-block-positive with the upgrade's progress aside: preflight judges the budget.
	fs = preflightRancher(t, "drain-would-block-positive", nil)
	if !slices.Contains(ids(fs), "rancher/drain-would-block") {
		t.Errorf("budget not reported by preflight: %v", ids(fs))
	}
	fs = preflightRancher(t, "drain-would-block-healthy", nil)
	if slices.Contains(ids(fs), "rancher/drain-would-block") {
		t.Errorf("a budget allowing one disruption reported: %v", ids(fs))
	}
}
