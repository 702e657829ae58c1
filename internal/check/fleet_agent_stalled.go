package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// fleetAgentStalled reports agents that check in but stop applying: the Fleet Cluster's
// status.agent.lastSeen is fresh, yet BundleDeployments given a new deploymentID keep the old
// appliedDeploymentID, with no error of their own (rancher/fleet#3489, #2473). The agent's
// heartbeat runs while its BundleDeployment reconciler does not: a restart helps, looking at
// the network does not. Its BundleDeployments' waits are its symptoms (same bundle keys).
var fleetAgentStalled = Check{
	Name:  "fleet/agent-stalled",
	Emits: []string{"fleet/agent-stalled"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		fresh := ctx.Thresholds.Duration("fleet.heartbeatStaleAfter")
		after := ctx.Thresholds.Duration("fleet.agentStalledAfter")
		for _, m := range ctx.Snap.Management() {
			ix := newFleetIndex(m)
			waiting := map[string][]stalledBD{}
			for _, bd := range m.BundleDeployments {
				fc := ix.forBD(m, bd)
				if fc == nil || fc.Spec.Paused || !unappliedQuietly(bd) {
					continue
				}
				since := waitAppliedSince(m, bd, fc)
				last := fc.Status.Agent.LastSeen.Time
				// Checked in after the revision was handed out, recently, and still not applied.
				if since.IsZero() || ctx.Age(since) < after || last.IsZero() || ctx.Age(last) >= fresh || !last.After(since) {
					continue
				}
				k := fc.Namespace + "/" + fc.Name
				waiting[k] = append(waiting[k], stalledBD{bd, since})
			}
			for _, fc := range m.FleetClusters {
				if ws := waiting[fc.Namespace+"/"+fc.Name]; len(ws) > 0 {
					out = append(out, agentStalledFinding(ctx, m, agentState{mgmt: m, fc: fc}, ws))
				}
			}
		}
		return out, nil
	},
}

type stalledBD struct {
	bd    *snapshot.BundleDeployment
	since time.Time
}

// unappliedQuietly: a deploymentID the agent has not applied, with nothing the agent said
// about it (an agent that reports an error is working on it), not paused or off schedule, and
// not the agent's own bundle (fleet/agent-upgrade-stuck judges that one).
func unappliedQuietly(bd *snapshot.BundleDeployment) bool {
	return fleet.BDState(bd) == fleet.StateWaitApplied && !bd.Spec.Paused && !bd.Spec.OffSchedule &&
		!fleet.IsAgentBundle(fleet.BundleName(bd)) && bdMessage(bd) == ""
}

func agentStalledFinding(ctx *Context, m *snapshot.Cluster, a agentState, ws []stalledBD) finding.Finding {
	since := ws[0].since
	var names []string
	for _, w := range ws {
		since = earliest(since, w.since)
		names = append(names, fleet.BundleName(w.bd))
	}
	last := a.fc.Status.Agent.LastSeen.Time
	f := a.finding(ctx, "fleet/agent-stalled", fmt.Sprintf("Fleet agent of cluster %s checks in (last %s ago) but has not applied %d new revision(s) for %s: %s",
		clusterName(ctx.Snap, a.fc), human(ctx.Age(last)), len(ws), human(ctx.Age(since)), strings.Join(firstN(names, 6), ", ")))
	fleetRef := a.fc.Namespace + "/" + a.fc.Name
	f.Evidence = []finding.Evidence{ev(sourceOf(m, fleetClusterRef(a.fc)), "status.agent.lastSeen=%s, after the revisions were handed out", last.UTC().Format(time.RFC3339))}
	for _, w := range firstN(ws, 6) {
		f.Keys = append(f.Keys, BundleKey(fleetRef, fleet.BundleName(w.bd)))
		f.Evidence = append(f.Evidence, ev(sourceOf(m, bdRef(w.bd)), "%s: deploymentID=%s appliedDeploymentID=%s, waiting since %s", fleet.BundleName(w.bd), shortID(w.bd.Spec.DeploymentID), orDash(shortID(w.bd.Status.AppliedDeploymentID)), w.since.UTC().Format(time.RFC3339)))
	}
	f.Since = timePtr(since)
	f.Signature = "agent-stalled"
	return f
}
