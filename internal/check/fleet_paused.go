package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// fleetClusterPaused tells an operator whose rollout "does nothing" that the Fleet Cluster is
// paused: with spec.paused the controller marks every BundleDeployment of the cluster paused
// and stages new content (spec.stagedDeploymentID) without moving spec.deploymentID, so the
// agent keeps the old release and reports nothing wrong. Nothing is broken, so it is info
// and never an incident's cause of an error.
var fleetClusterPaused = Check{
	Name:  "fleet/cluster-paused",
	Emits: []string{"fleet/cluster-paused"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, m := range ctx.Snap.Management() {
			ix := newFleetIndex(m)
			waiting := map[*fleetv1.Cluster][]*snapshot.BundleDeployment{}
			for _, bd := range m.BundleDeployments {
				if fc := ix.forBD(m, bd); fc != nil && bdWaitsForUnpause(bd) {
					waiting[fc] = append(waiting[fc], bd)
				}
			}
			for _, fc := range m.FleetClusters {
				if fc.Spec.Paused {
					out = append(out, clusterPaused(ctx, m, fc, waiting[fc]))
				}
			}
		}
		return out, nil
	},
}

// bdWaitsForUnpause: content staged but not deployed, or the deployment itself paused.
func bdWaitsForUnpause(bd *snapshot.BundleDeployment) bool {
	return bd.Spec.Paused || bd.Spec.StagedDeploymentID != "" && bd.Spec.StagedDeploymentID != bd.Spec.DeploymentID
}

func clusterPaused(ctx *Context, m *snapshot.Cluster, fc *fleetv1.Cluster, bds []*snapshot.BundleDeployment) finding.Finding {
	sort.Slice(bds, func(i, j int) bool { return bds[i].Name < bds[j].Name })
	var names []string
	for _, bd := range bds {
		names = append(names, fleet.BundleName(bd))
	}
	waits := "no bundle is waiting"
	if len(names) > 0 {
		waits = fmt.Sprintf("%d bundle(s) wait for it to be unpaused: %s", len(names), strings.Join(firstN(names, 8), ", "))
	}
	target := clusterName(ctx.Snap, fc)
	f := ctx.New("fleet/cluster-paused", m, fleetClusterRef(fc), fmt.Sprintf("Fleet cluster %s is paused (spec.paused): Fleet deploys nothing new to it; %s", target, waits))
	f.Affects = target
	f.Evidence = []finding.Evidence{ev(sourceOf(m, fleetClusterRef(fc)), "spec.paused: true%s", pausedSince(fc))}
	for _, bd := range firstN(bds, 8) {
		f.Evidence = append(f.Evidence, ev(sourceOf(m, bdRef(bd)), "spec.paused=%t, deploymentID %s, stagedDeploymentID %s", bd.Spec.Paused, orDash(bd.Spec.DeploymentID), orDash(bd.Spec.StagedDeploymentID)))
	}
	if t := pausedAt(fc); !t.IsZero() {
		f.Since = timePtr(t)
	}
	f.Keys = []string{"fleetcluster:" + fc.Namespace + "/" + fc.Name}
	f.Vars = agentVars(fc)
	return f
}

// pausedEntry is the managedFields entry owning spec.paused: its manager paused the cluster,
// at or before its time (the manager's last write). Nil when the source kept none.
func pausedEntry(fc *fleetv1.Cluster) *metav1.ManagedFieldsEntry {
	for i, mf := range fc.ManagedFields {
		if mf.FieldsV1 != nil && mf.Time != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:paused"`) {
			return &fc.ManagedFields[i]
		}
	}
	return nil
}

func pausedAt(fc *fleetv1.Cluster) time.Time {
	if mf := pausedEntry(fc); mf != nil {
		return mf.Time.Time
	}
	return time.Time{}
}

func pausedSince(fc *fleetv1.Cluster) string {
	if mf := pausedEntry(fc); mf != nil {
		return fmt.Sprintf(" (owned by field manager %q, whose last write was %s)", mf.Manager, mf.Time.UTC().Format(time.RFC3339))
	}
	return " (no managedFields: the time it was set is not recorded)"
}

func firstN[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}
