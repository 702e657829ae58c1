package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/fleetconfig"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// agentState is what the management cluster says of one cluster's agent.
type agentState struct {
	mgmt    *snapshot.Cluster
	fc      *fleetv1.Cluster
	agentBD *snapshot.BundleDeployment // the fleet-agent-<cluster> BundleDeployment, if read
}

func agentStates(s *snapshot.Snapshot) []agentState {
	var out []agentState
	for _, m := range s.Management() {
		ix := newFleetIndex(m)
		byCluster := map[*fleetv1.Cluster]*snapshot.BundleDeployment{}
		for _, bd := range m.BundleDeployments {
			if fleet.IsAgentBundle(fleet.BundleName(bd)) {
				if fc := ix.forBD(m, bd); fc != nil {
					byCluster[fc] = bd
				}
			}
		}
		for _, fc := range m.FleetClusters {
			out = append(out, agentState{mgmt: m, fc: fc, agentBD: byCluster[fc]})
		}
	}
	return out
}

func (a agentState) finding(ctx *Context, id, summary string) finding.Finding {
	f := ctx.New(id, a.mgmt, fleetClusterRef(a.fc), summary)
	f.Keys = []string{AgentKey(a.fc.Namespace + "/" + a.fc.Name)}
	f.Affects = clusterName(ctx.Snap, a.fc)
	f.Vars = agentVars(a.fc)
	return f
}

// agentVars fill the placeholders of an agent's remediation: its Fleet Cluster and the next
// redeploy generation.
func agentVars(fc *fleetv1.Cluster) map[string]string {
	v := redeployVars(fc)
	v["fleet-namespace"], v["cluster"] = fc.Namespace, fc.Name
	return v
}

// redeployVars fill the next redeployAgentGeneration of a Fleet Cluster whose agent the
// Fleet controller deploys, and otherwise mark the cluster as self-registered: the
// controller acts on redeployAgentGeneration only for the agents it deployed itself
// (rancher/fleet agentmanagement import.go returns early when spec.kubeConfigSecret is
// empty), so the bump would be written and nothing would happen.
func redeployVars(fc *fleetv1.Cluster) map[string]string {
	if !fleet.ManagerDeploysAgent(fc) {
		return map[string]string{selfRegistered: fc.Namespace + "/" + fc.Name}
	}
	return map[string]string{"n+1@redeployAgentGeneration": strconv.FormatInt(fc.Spec.RedeployAgentGeneration+1, 10)}
}

// conditionSince is when a generic condition last changed.
func bdConditionTime(bd *snapshot.BundleDeployment, typ string) time.Time {
	if c := fleet.Condition(bd.Status.Conditions, typ); c != nil {
		return earliest(snapshot.ParseTime(c.LastTransitionTime), snapshot.ParseTime(c.LastUpdateTime))
	}
	return time.Time{}
}

func clusterConditionTime(fc *fleetv1.Cluster, typ, status string) time.Time {
	if c := fleet.Condition(fc.Status.Conditions, typ); c != nil && string(c.Status) == status {
		return earliest(snapshot.ParseTime(c.LastTransitionTime), snapshot.ParseTime(c.LastUpdateTime))
	}
	return time.Time{}
}

// fleetAgentUpgrade reports agents the Fleet controller wants changed that have not changed
// — the field reports' "Pending-Upgrade". Fleet counts an agent deployed only when the three
// migration flags are set, agentConfigChanged is false and agentDeployedGeneration equals
// redeployAgentGeneration (rancher/fleet agentmanagement); the new agent itself arrives as the
// fleet-agent-<cluster> BundleDeployment, which must be applied and ready.
var fleetAgentUpgrade = Check{
	Name:  "fleet/agent-upgrade",
	Emits: []string{"fleet/agent-upgrade-stuck"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("fleet.agentUpgradeStuckAfter")
		for _, a := range agentStates(ctx.Snap) {
			var why []string
			if fleet.ManagerDeploysAgent(a.fc) {
				why = fleet.AgentNotDeployedReasons(a.fc)
			}
			var since time.Time
			var evidence []finding.Evidence
			src := sourceOf(a.mgmt, fleetClusterRef(a.fc))
			if len(why) > 0 {
				// The import controller is what (re)deploys a manager-initiated agent; when it
				// fails it sets the Imported condition False (wrangler status handler). Only
				// without that do the cluster's Ready/Processed conditions date the problem.
				since = clusterConditionTime(a.fc, "Imported", "False")
				if since.IsZero() {
					since = earliest(clusterConditionTime(a.fc, "Ready", "False"), clusterConditionTime(a.fc, "Processed", "False"))
				}
				if since.IsZero() {
					// Nothing dates it: at least a cluster younger than the threshold is still
					// being set up, not stuck.
					since = a.fc.CreationTimestamp.Time
				}
				evidence = append(evidence, ev(src, "%s", strings.Join(why, "; ")))
				if c := fleet.Condition(a.fc.Status.Conditions, "Imported"); c != nil && string(c.Status) == "False" && c.Message != "" {
					evidence = append(evidence, ev(src, "condition Imported=False: %s", firstLine(c.Message)))
				}
			}
			if bd := a.agentBD; bd != nil {
				st := fleet.BDState(bd)
				if st == fleet.StateErrApplied || st == fleet.StateWaitApplied || st == fleet.StateNotReady {
					switch st {
					case fleet.StateErrApplied:
						since = earliest(since, bdConditionTime(bd, "Deployed"))
					case fleet.StateWaitApplied:
						w := waitAppliedSince(a.mgmt, bd, a.fc)
						if w.IsZero() && len(why) == 0 {
							// A wait that cannot be timed may have begun a second ago: every
							// agent upgrade passes through WaitApplied.
							continue
						}
						since = earliest(since, w)
					case fleet.StateNotReady:
						since = earliest(since, bdConditionTime(bd, "Ready"))
					}
					msg := bdMessage(bd)
					text := fmt.Sprintf("agent BundleDeployment %s is %s", bd.Name, st)
					if st != fleet.StateNotReady {
						text += fmt.Sprintf(" (deploymentID %s, applied %s)", shortID(bd.Spec.DeploymentID), orDash(shortID(bd.Status.AppliedDeploymentID)))
					}
					if msg != "" {
						text += ": " + msg
					}
					evidence = append(evidence, ev(sourceOf(a.mgmt, bdRef(bd)), "%s", text))
				}
			}
			if len(evidence) == 0 {
				continue
			}
			age := ctx.Age(since)
			if !since.IsZero() && age < after {
				continue
			}
			summary := fmt.Sprintf("Fleet agent of cluster %s has not moved to the version the controller wants", clusterName(ctx.Snap, a.fc))
			if !since.IsZero() {
				summary += " for " + human(age)
			}
			f := a.finding(ctx, "fleet/agent-upgrade-stuck", summary)
			f.Evidence = evidence
			f.Since = timePtr(since)
			if a.agentBD != nil {
				f.Keys = append(f.Keys, BundleKey(a.fc.Namespace+"/"+a.fc.Name, fleet.BundleName(a.agentBD)))
			}
			out = append(out, f)
		}
		return out, nil
	},
}

func shortID(id string) string {
	if len(id) > 14 {
		return id[:14] + "…"
	}
	return id
}

// fleetAgentHeartbeat reports agents that stopped checking in. Agents report into
// status.agent.lastSeen every check-in interval (15 minutes unless Fleet is configured
// otherwise, see checkins); the UI's WaitCheckIn means lastSeen was never set. A heartbeat is
// stale when older than fleet.heartbeatStaleAfter or fleetconfig.StaleFactor intervals,
// whichever is longer, so a fleet configured to check in hourly is not reported every hour.
var fleetAgentHeartbeat = Check{
	Name:  "fleet/agent-heartbeat",
	Emits: []string{"fleet/agent-heartbeat-stale"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("fleet.heartbeatStaleAfter")
		intervals := newCheckins(ctx.Snap)
		for _, a := range agentStates(ctx.Snap) {
			last := a.fc.Status.Agent.LastSeen.Time
			src := sourceOf(a.mgmt, fleetClusterRef(a.fc))
			var f finding.Finding
			switch {
			case last.IsZero():
				// The agent reports once 15s after it starts, whatever its interval
				// (clusterstatus/ticker.go): the threshold alone applies.
				created := a.fc.CreationTimestamp.Time
				if created.IsZero() || ctx.Age(created) < after {
					continue
				}
				f = a.finding(ctx, "fleet/agent-heartbeat-stale", fmt.Sprintf("Fleet agent of cluster %s has never checked in (WaitCheckIn) although the cluster was created %s ago", clusterName(ctx.Snap, a.fc), human(ctx.Age(created))))
				f.Evidence = []finding.Evidence{ev(src, "status.agent.lastSeen is not set; status.display.state=%s", orDash(a.fc.Status.Display.State))}
				f.Since = timePtr(created)
			default:
				in := intervals.of(a.mgmt, a.fc)
				stale := in.staleAfter(after)
				if ctx.Measure {
					stale = after // serve's age gauge measures every heartbeat, however young
				}
				if ctx.Age(last) < stale {
					continue
				}
				summary := fmt.Sprintf("Fleet agent of cluster %s last checked in %s ago (agents check in every 15m)", clusterName(ctx.Snap, a.fc), human(ctx.Age(last)))
				if in.src != "" {
					summary = fmt.Sprintf("Fleet agent of cluster %s last checked in %s ago; it checks in every %s (%s)", clusterName(ctx.Snap, a.fc), human(ctx.Age(last)), human(in.every), in.from)
				}
				f = a.finding(ctx, "fleet/agent-heartbeat-stale", summary)
				inSrc := in.src
				if inSrc == "" {
					inSrc = src
				}
				f.Evidence = []finding.Evidence{
					ev(src, "status.agent.lastSeen=%s", last.UTC().Format(time.RFC3339)),
					ev(inSrc, "check-in interval %s (%s); stale after %s, the larger of fleet.heartbeatStaleAfter %s and %d intervals", human(in.every), in.from, human(stale), human(after), fleetconfig.StaleFactor),
				}
				f.Since = timePtr(last)
			}
			out = append(out, f)
		}
		return out, intervals.err()
	},
}

// fleetRegistration reports clusters whose agent cannot (re-)register: several Fleet Clusters
// claiming one client ID, or an agent with no granted ClusterRegistration that is not
// checking in. Never suggests deleting registration objects (field reports' pitfall).
var fleetRegistration = Check{
	Name:  "fleet/registration",
	Emits: []string{"fleet/registration-broken"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		stale := ctx.Thresholds.Duration("fleet.heartbeatStaleAfter")
		// Warnings about the intervals are the heartbeat check's to give, once.
		intervals := newCheckins(ctx.Snap)
		states := agentStates(ctx.Snap)
		// Registrations by client ID, indexed once per management cluster: a scan of all of
		// them per agent was quadratic in the fleet's size.
		regs := map[*snapshot.Cluster]map[string][]*fleetv1.ClusterRegistration{}
		registrations := func(m *snapshot.Cluster, id string) []*fleetv1.ClusterRegistration {
			ix, ok := regs[m]
			if !ok {
				ix = map[string][]*fleetv1.ClusterRegistration{}
				for _, r := range m.ClusterRegistrations {
					ix[r.Spec.ClientID] = append(ix[r.Spec.ClientID], r)
				}
				regs[m] = ix
			}
			return ix[id]
		}
		byClient := map[string][]agentState{}
		for _, a := range states {
			if id := a.fc.Spec.ClientID; id != "" {
				byClient[id] = append(byClient[id], a)
			}
		}
		for _, a := range states {
			id := a.fc.Spec.ClientID
			if same := byClient[id]; len(same) > 1 {
				var names []string
				for _, o := range same {
					names = append(names, o.fc.Namespace+"/"+o.fc.Name)
				}
				f := a.finding(ctx, "fleet/registration-broken", fmt.Sprintf("client ID %s is claimed by %d Fleet Clusters (%s): the agent's registration is ambiguous", id, len(same), strings.Join(names, ", ")))
				f.Evidence = []finding.Evidence{ev(sourceOf(a.mgmt, fleetClusterRef(a.fc)), "spec.clientID=%s", id)}
				out = append(out, f)
				continue
			}
			if len(a.mgmt.ClusterRegistrations) == 0 || id == "" {
				continue // registrations not collected: nothing to judge
			}
			var granted, pending []*fleetv1.ClusterRegistration
			for _, r := range registrations(a.mgmt, id) {
				if r.Status.Granted {
					granted = append(granted, r)
				} else {
					pending = append(pending, r)
				}
			}
			last := a.fc.Status.Agent.LastSeen.Time
			if len(granted) > 0 || (!last.IsZero() && ctx.Age(last) < intervals.of(a.mgmt, a.fc).staleAfter(stale)) {
				continue
			}
			var f finding.Finding
			if len(pending) > 0 {
				// The controller grants a request within seconds once the cluster's namespace
				// exists, and deletes older requests only after granting a newer one; so the
				// oldest ungranted request dates the failure. One younger than the threshold is
				// an agent (re-)registering right now.
				oldest := pending[0]
				for _, r := range pending[1:] {
					if r.CreationTimestamp.Before(&oldest.CreationTimestamp) {
						oldest = r
					}
				}
				if created := oldest.CreationTimestamp.Time; !created.IsZero() && ctx.Age(created) < stale {
					continue
				}
				summary := fmt.Sprintf("agent of cluster %s is trying to register but its ClusterRegistration %s/%s was never granted", clusterName(ctx.Snap, a.fc), oldest.Namespace, oldest.Name)
				if len(pending) > 1 {
					summary = fmt.Sprintf("agent of cluster %s is trying to register but none of its %d ClusterRegistrations was granted", clusterName(ctx.Snap, a.fc), len(pending))
				}
				if !oldest.CreationTimestamp.IsZero() {
					summary += fmt.Sprintf(" (the first %s ago)", human(ctx.Age(oldest.CreationTimestamp.Time)))
				}
				f = a.finding(ctx, "fleet/registration-broken", summary)
				for i, r := range pending {
					if i == 3 {
						break
					}
					f.Evidence = append(f.Evidence, ev(sourceOf(a.mgmt, ref("fleet.cattle.io/v1alpha1", "ClusterRegistration", r.Namespace, r.Name)),
						"%s/%s: status.granted=false clientID=%s created=%s", r.Namespace, r.Name, id, lastSeenText(r.CreationTimestamp.Time)))
				}
				f.Since = timePtr(oldest.CreationTimestamp.Time)
			} else {
				f = a.finding(ctx, "fleet/registration-broken", fmt.Sprintf("agent of cluster %s has no granted ClusterRegistration for client ID %s and is not checking in", clusterName(ctx.Snap, a.fc), id))
				f.Evidence = []finding.Evidence{ev(sourceOf(a.mgmt, fleetClusterRef(a.fc)), "spec.clientID=%s; no ClusterRegistration with status.granted=true; status.agent.lastSeen=%s", id, lastSeenText(last))}
			}
			out = append(out, f)
		}
		return out, nil
	},
}

func lastSeenText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}
