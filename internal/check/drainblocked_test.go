package check_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// rancher/drain-blocked names the budget from the pods on the drained node, from the drain
// error, or from both, and says which; without either it names no budget.
func TestDrainBlockedMatchesThePodsOnTheNode(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		keepError, keepPod bool
		want               []string // in the finding's text
		not                []string
	}{
		{"pod on the node, no drain error", false, true,
			[]string{"is blocked by PodDisruptionBudget shop/checkout", "pod shop/checkout-0 runs on the node (spec.nodeName prod-eu-2-worker-6mq2r), selected by app=checkout"},
			[]string{"drain error"}},
		{"pod on the node and a drain error", true, true,
			[]string{"is blocked by PodDisruptionBudget shop/checkout", "runs on the node (spec.nodeName prod-eu-2-worker-6mq2r) and is named by the drain error"},
			nil},
		{"drain error only", true, false,
			[]string{"is blocked by PodDisruptionBudget shop/checkout", "shop/checkout-0 (named by the drain error; the pod itself was not read)"},
			[]string{"spec.nodeName"}},
		{"neither", false, false,
			[]string{"does not finish"},
			[]string{"shop/checkout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := (&source.Offline{Path: filepath.Join("..", "..", "testdata", "scenarios", "rancher", "drain-blocked-positive")}).Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			strip(snap, tc.keepError, tc.keepPod)
			ctx := &check.Context{Snap: snap, Now: time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC), Thresholds: check.NewThresholds(cat), Catalog: cat}
			_, fs, _ := check.Evaluate(ctx, check.Filter{})
			var got *finding.Finding
			for i := range fs {
				if fs[i].ID == "rancher/drain-blocked" {
					got = &fs[i]
				}
			}
			if got == nil {
				t.Fatalf("no rancher/drain-blocked; got %v", ids(fs))
			}
			text := got.Summary + "\n"
			for _, e := range got.Evidence {
				text += e.Source + ": " + e.Text + "\n"
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the finding does not say %q:\n%s", w, text)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(text, w) {
					t.Errorf("the finding says %q:\n%s", w, text)
				}
			}
		})
	}
}

// strip takes the drain error out of the machine-plan Secret and the pods out of shop, as
// a read that did not see them.
func strip(snap *snapshot.Snapshot, keepError, keepPod bool) {
	for _, c := range snap.Clusters {
		if !keepError {
			for _, p := range c.MachinePlans {
				delete(p.Annotations, rancher.AnnotationDrainError)
			}
		}
		if !keepPod {
			var pods []*corev1.Pod
			for _, p := range c.Pods {
				if p.Namespace != "shop" {
					pods = append(pods, p)
				}
			}
			c.Pods = pods
		}
	}
}
