package check

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// clockSkew reports clocks that disagree with the collection time beyond the threshold: an
// agent check-in recorded in the future (the agent's clock runs ahead), or a node whose
// kubelet heartbeat is stamped in the future. Skewed clocks make certificates look not yet
// valid and heartbeats look stale (field reports' pitfall). Log evidence ("x509: certificate
// has expired or is not yet valid: current time … is before …") is judged by agent/logs.
var clockSkew = Check{
	Name:  "cluster/clock",
	Emits: []string{"cluster/clock-skew"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		maxSkew := ctx.Thresholds.Duration("cluster.clockSkewMax")
		// Clocks are compared with when a bundle's objects were collected: judging it --now at
		// an earlier time must not make every heartbeat look stamped in the future. (Live,
		// --now is a deliberate replay of another time and wins.)
		at := ctx.Now
		if c := ctx.Snap.CollectedAt; c.After(at) && ctx.Snap.ClockSource != snapshot.ClockLive {
			at = c
		}
		for _, a := range agentStates(ctx.Snap) {
			last := a.fc.Status.Agent.LastSeen.Time
			if last.IsZero() || last.Sub(at) <= maxSkew {
				continue
			}
			f := a.finding(ctx, "cluster/clock-skew", fmt.Sprintf("cluster %s's agent reports check-ins %s in the future: its clock (or the management cluster's) is off", clusterName(ctx.Snap, a.fc), human(last.Sub(at))))
			f.Evidence = []finding.Evidence{ev(sourceOf(a.mgmt, fleetClusterRef(a.fc)), "status.agent.lastSeen=%s, evaluated at %s", last.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))}
			out = append(out, f)
		}
		for _, c := range ctx.Snap.Clusters {
			for _, n := range c.Nodes {
				for _, cond := range n.Status.Conditions {
					if cond.Type != corev1.NodeReady {
						continue
					}
					hb := cond.LastHeartbeatTime.Time
					if hb.IsZero() || hb.Sub(at) <= maxSkew {
						continue
					}
					obj := ref("v1", "Node", "", n.Name)
					f := ctx.New("cluster/clock-skew", c, obj, fmt.Sprintf("node %s stamps its heartbeat %s in the future: its clock runs ahead", n.Name, human(hb.Sub(at))))
					f.Evidence = []finding.Evidence{ev(sourceOf(c, obj), "Ready lastHeartbeatTime=%s, evaluated at %s", hb.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))}
					f.Keys = []string{NodeKey(c.Name, n.Name)}
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}
