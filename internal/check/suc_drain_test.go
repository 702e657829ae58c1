package check_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// judgeSUCScenario judges a suc scenario as scan or preflight does; edit may change the
// loaded snapshot first.
func judgeSUCScenario(t *testing.T, scenario string, preflight bool, edit func(*snapshot.Snapshot)) []finding.Finding {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: filepath.Join("..", "..", "testdata", "scenarios", "suc", scenario)}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(snap)
	}
	ctx := &check.Context{Snap: snap, Now: time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), Thresholds: check.NewThresholds(cat),
		Catalog: cat, Preflight: preflight}
	_, fs, _ := check.Evaluate(ctx, check.Filter{})
	return fs
}

// A budget that allows no disruption over a pod on a node a Plan with a drain will upgrade is
// a preflight gate, before the next version makes the Plan drain every node again; a drain
// that deletes instead of evicting (disableEviction) is not held by it.
func TestSUCDrainWouldBlock(t *testing.T) {
	for _, tc := range []struct {
		name, scenario string
		preflight      bool
		edit           func(*snapshot.Snapshot)
		want           bool
	}{
		{"scan, next node holds the pod", "drain-would-block-positive", false, nil, true},
		{"preflight, Plan at rest", "drain-would-block-at-rest-lookalike", true, nil, true},
		{"scan, Plan at rest", "drain-would-block-at-rest-lookalike", false, nil, false},
		{"preflight, pod on a done node, budget allowing one", "drain-would-block-healthy", true, nil, false},
		{"disableEviction", "drain-would-block-positive", true, func(s *snapshot.Snapshot) {
			s.Clusters[0].Plans[0].Spec.Drain.DisableEviction = true
		}, false},
		{"pod outside the drain's podSelector", "drain-would-block-positive", true, func(s *snapshot.Snapshot) {
			s.Clusters[0].Plans[0].Spec.Drain.PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "system"}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := judgeSUCScenario(t, tc.scenario, tc.preflight, tc.edit)
			if got := slices.Contains(ids(fs), "suc/drain-would-block"); got != tc.want {
				t.Errorf("suc/drain-would-block reported=%v, want %v: %v", got, tc.want, ids(fs))
			}
		})
	}
}
