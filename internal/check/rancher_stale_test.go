package check_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// scanRancher judges a rancher scenario as scan does, after edit changes the loaded snapshot.
func scanRancher(t *testing.T, scenario string, edit func(*snapshot.Snapshot)) []finding.Finding {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: filepath.Join("..", "..", "testdata", "scenarios", "rancher", scenario)}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(snap)
	}
	ctx := &check.Context{Snap: snap, Now: time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), Thresholds: check.NewThresholds(cat), Catalog: cat}
	_, fs, _ := check.Evaluate(ctx, check.Filter{})
	return fs
}

// A Ready cattle-cluster-agent contradicts "waiting for cluster agent to connect" only when
// the downstream cluster was read through Rancher's proxy, whose answers go through the
// agent's tunnel; read with its own kubeconfig, the pod's readiness says nothing of the
// tunnel and the agent is reported disconnected.
func TestAgentStatusStaleNeedsTheProxy(t *testing.T) {
	fs := scanRancher(t, "status-stale-agent-connected-positive", nil)
	if !slices.Contains(ids(fs), "rancher/status-stale") || slices.Contains(ids(fs), "rancher/cluster-agent-disconnected") {
		t.Errorf("through the proxy: %v, want rancher/status-stale alone", ids(fs))
	}
	fs = scanRancher(t, "status-stale-agent-connected-positive", func(s *snapshot.Snapshot) {
		s.Cluster("prod-eu-2").Server = "https://10.0.1.10:6443"
	})
	if slices.Contains(ids(fs), "rancher/status-stale") || !slices.Contains(ids(fs), "rancher/cluster-agent-disconnected") {
		t.Errorf("read directly: %v, want rancher/cluster-agent-disconnected, not rancher/status-stale", ids(fs))
	}
}

// The plan Secret is compared, never quoted: no checksum of the plan (the SHA-256 of a body
// holding the cluster's join token) appears in what the finding says.
func TestPlanStatusStaleQuotesNoChecksum(t *testing.T) {
	var got *finding.Finding
	fs := scanRancher(t, "status-stale-plan-applied-positive", nil)
	for i := range fs {
		if fs[i].ID == "rancher/status-stale" {
			got = &fs[i]
		}
	}
	if got == nil {
		t.Fatalf("rancher/status-stale not reported: %v", ids(fs))
	}
	b, _ := json.Marshal(got)
	if !strings.Contains(string(b), "applied-checksum equals the plan's checksum") {
		t.Errorf("finding does not say what the Secret shows:\n%s", b)
	}
	for _, sum := range planChecksums(t, "status-stale-plan-applied-positive") {
		if len(sum) >= 12 && strings.Contains(string(b), sum[:12]) {
			t.Errorf("finding quotes a plan checksum %s…:\n%s", sum[:12], b)
		}
	}
}

// planChecksums are the plan checksums the loader computed for a scenario's machine plans.
func planChecksums(t *testing.T, scenario string) []string {
	t.Helper()
	snap, err := (&source.Offline{Path: filepath.Join("..", "..", "testdata", "scenarios", "rancher", scenario)}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range snap.Clusters {
		for _, mp := range c.MachinePlans {
			out = append(out, mp.PlanChecksum, mp.AppliedChecksum)
		}
	}
	return out
}

// An applied plan whose probes fail under Rancher's stale "waiting for plan to be applied" is
// held by its probes: rancher/probes-failing is reported beside the stale status and outranks
// it as the root cause.
func TestPlanStatusStaleWithFailingProbes(t *testing.T) {
	fs := scanRancher(t, "status-stale-plan-applied-positive", func(s *snapshot.Snapshot) {
		for _, mp := range s.Cluster("local").MachinePlans {
			if mp.Machine() == "prod-eu-2-worker-6mq2r" {
				mp.Probes = map[string]rancher.ProbeStatus{"kubelet": {Healthy: false, FailureCount: 41}}
			}
		}
	})
	if !slices.Contains(ids(fs), "rancher/status-stale") || !slices.Contains(ids(fs), "rancher/probes-failing") {
		t.Errorf("got %v, want rancher/status-stale and rancher/probes-failing", ids(fs))
	}
	for _, f := range fs {
		if f.ID == "rancher/status-stale" && !strings.Contains(f.Summary, "failing probes: kubelet") {
			t.Errorf("summary does not name the probes that hold the machine: %s", f.Summary)
		}
	}
}
