package remediate

import (
	"fmt"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

const fleetAPIVersion = "fleet.cattle.io/v1alpha1"

// agent plans an agent that will not move, report or start: redeploy it from its Fleet
// Cluster (resync) and restart its Deployment (restart), as its ladder offers them.
func (pl *planner) agent(inc finding.Incident) []Attempt {
	root := inc.RootCause
	m, fc, down := pl.agentTargets(root)
	why := pl.reasonsAbout(inc, func(finding.Finding) bool { return true })
	var out []Attempt
	if r, risk, ok := rung(root, RungResync, sigRedeploy); ok && fc != nil {
		out = append(out, single(checksIn(inc, m, fc, pl.redeployStep(m, fc, RungResync, risk, r.Action, why))))
	}
	if r, risk, ok := rung(root, RungRestart, sigRestartAgent); ok {
		if d := agentDeployment(down, fc); d != nil {
			out = append(out, single(checksIn(inc, m, fc, pl.restartStep(down, d, risk, r.Action, why))))
		}
	}
	return out
}

// checksIn makes an agent step of an incident whose agent stopped checking in (its root
// cause or a symptom is fleet/agent-heartbeat-stale) wait for the agent's next check-in
// before it verifies (Step.ChecksIn).
func checksIn(inc finding.Incident, m *snapshot.Cluster, fc *fleetv1.Cluster, s Step) Step {
	if m == nil || fc == nil {
		return s
	}
	stale := inc.RootCause.ID == heartbeatStale
	for _, f := range inc.Symptoms {
		stale = stale || f.ID == heartbeatStale
	}
	if !stale {
		return s
	}
	s.ChecksIn = &FleetClusterRef{Cluster: m.Name, Namespace: fc.Namespace, Name: fc.Name}
	s.Verify += fmt.Sprintf("; and the agent of Fleet Cluster %s/%s checks in after the step began (status.agent.lastSeen): the agent itself is back", fc.Namespace, fc.Name)
	return s
}

const heartbeatStale = "fleet/agent-heartbeat-stale"

// agentTargets finds, for a finding about an agent, the management cluster and Fleet Cluster
// that deploy it and the downstream cluster it runs on (each nil when not in the snapshot).
func (pl *planner) agentTargets(f finding.Finding) (*snapshot.Cluster, *fleetv1.Cluster, *snapshot.Cluster) {
	c := pl.snap.Cluster(f.Cluster)
	if c == nil {
		return nil, nil, nil
	}
	if f.Object.Kind == "Cluster" && f.Object.APIVersion == fleetAPIVersion {
		fc, _ := c.Get("Cluster", f.Object.Namespace, f.Object.Name).(*fleetv1.Cluster)
		if fc == nil {
			return nil, nil, nil
		}
		return c, fc, pl.snap.ClusterForFleet(fc.Namespace + "/" + fc.Name)
	}
	if c.FleetCluster == "" {
		return nil, nil, c
	}
	m, fc := pl.fleetCluster(c.FleetCluster)
	return m, fc, c
}

// fleetCluster finds a Fleet Cluster (namespace/name) on a management cluster.
func (pl *planner) fleetCluster(ref string) (*snapshot.Cluster, *fleetv1.Cluster) {
	for _, m := range pl.snap.Management() {
		for _, fc := range m.FleetClusters {
			if fc.Namespace+"/"+fc.Name == ref {
				return m, fc
			}
		}
	}
	return nil, nil
}

// fleetClusterNamed finds the Fleet Cluster an agent release names (fleet-agent-<name>),
// preferring the one matched to the release's own cluster.
func (pl *planner) fleetClusterNamed(c *snapshot.Cluster, name string) (*snapshot.Cluster, *fleetv1.Cluster) {
	if c.FleetCluster != "" {
		if m, fc := pl.fleetCluster(c.FleetCluster); fc != nil && fc.Name == name {
			return m, fc
		}
	}
	var found []*fleetv1.Cluster
	var where *snapshot.Cluster
	for _, m := range pl.snap.Management() {
		for _, fc := range m.FleetClusters {
			if fc.Name == name {
				found, where = append(found, fc), m
			}
		}
	}
	if len(found) != 1 {
		return nil, nil // absent, or ambiguous across workspaces: no guessing
	}
	return where, found[0]
}

// agentDeployment is the fleet-agent Deployment on a downstream cluster.
func agentDeployment(down *snapshot.Cluster, fc *fleetv1.Cluster) *appsv1.Deployment {
	if down == nil {
		return nil
	}
	if fc != nil {
		if d, ok := down.Get("Deployment", fleet.AgentNamespace(fc), "fleet-agent").(*appsv1.Deployment); ok {
			return d
		}
	}
	for _, ns := range []string{fleet.DefaultAgentNamespace, fleet.LocalAgentNamespace} {
		if d, ok := down.Get("Deployment", ns, "fleet-agent").(*appsv1.Deployment); ok {
			return d
		}
	}
	return nil
}

// bundle plans a BundleDeployment that does not deploy: force a new deployment of its bundle
// (the agent's own bundle is redeployed from its Fleet Cluster instead), restart the agent
// or the controller, and — only where a ladder offers it, as repair — delete the
// BundleDeployment so the controller re-creates it.
func (pl *planner) bundle(inc finding.Incident) []Attempt {
	root := inc.RootCause
	m := pl.snap.Cluster(root.Cluster)
	if m == nil || root.Object.Kind != "BundleDeployment" {
		return nil
	}
	bd, _ := m.Get("BundleDeployment", root.Object.Namespace, root.Object.Name).(*snapshot.BundleDeployment)
	if bd == nil {
		return nil
	}
	name := fleet.BundleName(bd)
	fcRef := bd.Labels.Get(fleet.LabelClusterNS) + "/" + bd.Labels.Get(fleet.LabelClusterName)
	_, fc := pl.fleetCluster(fcRef)
	down := pl.snap.ClusterForFleet(fcRef)
	why := pl.reasonsAbout(inc, func(finding.Finding) bool { return true })
	var out []Attempt
	if r, risk, ok := rung(root, RungResync, sigResync); ok {
		if fleet.IsAgentBundle(name) {
			if fc != nil {
				out = append(out, single(deploys(checksIn(inc, m, fc, pl.redeployStep(m, fc, RungResync, risk, r.Action, why)), m, bd, false)))
			}
		} else if b := pl.bundleTarget(m, bd.Labels.Get(fleet.LabelBundleNamespace), name); b != nil {
			out = append(out, single(deploys(pl.forceSyncStep(m, b, RungResync, risk, r.Action, why), m, bd, true)))
		}
	}
	if r, risk, ok := rung(root, RungRestart, sigRestartAgent); ok {
		if d := agentDeployment(down, fc); d != nil {
			out = append(out, single(deploys(checksIn(inc, m, fc, pl.restartStep(down, d, risk, r.Action, why)), m, bd, false)))
		}
	}
	if r, risk, ok := rung(root, RungRestart, sigRestartFleetC); ok {
		if d, ok := m.Get("Deployment", fleet.DefaultAgentNamespace, "fleet-controller").(*appsv1.Deployment); ok {
			out = append(out, single(deploys(pl.restartStep(m, d, risk, r.Action, why), m, bd, false)))
		}
	}
	if r, risk, ok := rung(root, RungRepair, sigDeleteBD); ok && !fleet.IsAgentBundle(name) {
		out = append(out, single(deploys(pl.deleteBDStep(m, bd, risk, r.Action, why), m, bd, false)))
	}
	return out
}

// deploys makes a step of a BundleDeployment incident verify only once that BundleDeployment
// is Ready (Step.Deploys): at a new deploymentID after a force-sync (fresh), as another object
// after a delete, else at whatever deploymentID the controller gives it.
func deploys(s Step, m *snapshot.Cluster, bd *snapshot.BundleDeployment, fresh bool) Step {
	ref := &BundleDeploymentRef{Cluster: m.Name, Namespace: bd.Namespace, Name: bd.Name, UID: string(bd.UID),
		DeploymentID: bd.Spec.DeploymentID, NewDeployment: fresh, NewObject: s.Action == DeleteBundleDeployment}
	s.Deploys = ref
	at := "its deploymentID"
	switch {
	case ref.NewDeployment:
		at = "a new deploymentID (not " + orDash(ref.DeploymentID) + ")"
	case ref.NewObject:
		at = "its deploymentID, re-created by the controller (a UID other than " + orDash(ref.UID) + ")"
	}
	s.Verify += fmt.Sprintf("; and BundleDeployment %s/%s is Ready at %s: status.appliedDeploymentID equals spec.deploymentID and no condition is False or in error — the deployment succeeded, not only the request",
		bd.Namespace, bd.Name, at)
	return s
}

// bundleRef is what a force-sync bumps: the GitRepo a Bundle comes from when the snapshot
// holds it, else the Bundle itself.
type bundleRef struct {
	obj      Object
	resource string
	current  int64
	note     string
}

func (pl *planner) bundleTarget(m *snapshot.Cluster, ns, name string) *bundleRef {
	var b *fleetv1.Bundle
	for _, x := range m.Bundles {
		if x.Name == name && (ns == "" || x.Namespace == ns) {
			b = x
			break
		}
	}
	if b == nil {
		return nil
	}
	if repo := b.Labels["fleet.cattle.io/repo-name"]; repo != "" {
		for _, g := range m.GitRepos {
			if g.Namespace == b.Namespace && g.Name == repo {
				return &bundleRef{obj: pl.object(m.Name, fleetAPIVersion, "GitRepo", g.Namespace, g.Name), resource: "gitrepos.fleet.cattle.io", current: g.Spec.ForceSyncGeneration}
			}
		}
		return &bundleRef{obj: metaObject(m.Name, fleetAPIVersion, "Bundle", b), resource: "bundles.fleet.cattle.io", current: b.Spec.ForceSyncGeneration,
			note: fmt.Sprintf("Bundle %s/%s comes from GitRepo %s, which was not read: the Bundle itself is bumped, and the GitRepo's next sync writes its own value back (harmless)", b.Namespace, b.Name, repo)}
	}
	return &bundleRef{obj: metaObject(m.Name, fleetAPIVersion, "Bundle", b), resource: "bundles.fleet.cattle.io", current: b.Spec.ForceSyncGeneration}
}

func (pl *planner) redeployStep(m *snapshot.Cluster, fc *fleetv1.Cluster, rungName string, risk Risk, rationale string, why []Reason) Step {
	n := fc.Spec.RedeployAgentGeneration
	obj := metaObject(m.Name, fleetAPIVersion, "Cluster", fc)
	return Step{
		ID:           stepID(RedeployAgent, m.Name, fc.Namespace, fc.Name, string(fc.UID)),
		Action:       RedeployAgent,
		Rung:         rungName,
		Risk:         risk,
		Cluster:      m.Name,
		Target:       obj,
		Touches:      []Object{obj},
		Change:       fmt.Sprintf("bump spec.redeployAgentGeneration of Fleet Cluster %s/%s from %d to %d: the Fleet controller redeploys the cluster's agent (the documented way to force it)", fc.Namespace, fc.Name, n, n+1),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("Fleet Cluster %s/%s unchanged since planning (resourceVersion %s)", fc.Namespace, fc.Name, orDash(obj.ResourceVersion)),
		Verify:       fmt.Sprintf("status.agentDeployedGeneration reaches %d: the controller redeployed the agent", n+1),
		Commands: []string{shellcmd.Sprintf(`%s -n %s patch clusters.fleet.cattle.io %s --type merge -p '{"spec":{"redeployAgentGeneration":%s}}'`,
			kubectl(m), namespaceArg(fc.Namespace), nameArg(fc.Name), shellcmd.Int(n+1))},
		Generation: n + 1,
		Previous:   n,
	}
}

func (pl *planner) forceSyncStep(m *snapshot.Cluster, b *bundleRef, rungName string, risk Risk, rationale string, why []Reason) Step {
	n := b.current
	s := Step{
		ID:           stepID(ForceSync, m.Name, b.obj.Kind, b.obj.Namespace, b.obj.Name, b.obj.UID),
		Action:       ForceSync,
		Rung:         rungName,
		Risk:         risk,
		Cluster:      m.Name,
		Target:       b.obj,
		Touches:      []Object{b.obj},
		Change:       fmt.Sprintf("bump spec.forceSyncGeneration of %s %s/%s from %d to %d: Fleet deploys the bundle again", b.obj.Kind, b.obj.Namespace, b.obj.Name, n, n+1),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("%s %s/%s unchanged since planning (resourceVersion %s)", b.obj.Kind, b.obj.Namespace, b.obj.Name, orDash(b.obj.ResourceVersion)),
		Verify:       "status.observedGeneration reaches the generation the bump gives it: the controller reconciled it",
		Commands: []string{shellcmd.Sprintf(`%s -n %s patch %s %s --type merge -p '{"spec":{"forceSyncGeneration":%s}}'`,
			kubectl(m), namespaceArg(b.obj.Namespace), shellcmd.Value(shellcmd.Name, "resource", b.resource), nameArg(b.obj.Name), shellcmd.Int(n+1))},
		Generation: n + 1,
		Previous:   n,
	}
	if b.note != "" {
		s.Notes = append(s.Notes, b.note)
	}
	return s
}

// restartStep restarts a Deployment the way `kubectl rollout restart` does.
func (pl *planner) restartStep(c *snapshot.Cluster, d *appsv1.Deployment, risk Risk, rationale string, why []Reason) Step {
	obj := metaObject(c.Name, "apps/v1", "Deployment", d)
	return Step{
		ID:      stepID(RolloutRestart, c.Name, d.Namespace, d.Name, string(d.UID)),
		Action:  RolloutRestart,
		Rung:    RungRestart,
		Risk:    risk,
		Cluster: c.Name,
		Target:  obj,
		Touches: []Object{obj},
		Change: fmt.Sprintf("restart Deployment %s/%s as `kubectl rollout restart` does: set the pod template annotation kubectl.kubernetes.io/restartedAt to the time of the write, so a new ReplicaSet rolls out",
			d.Namespace, d.Name),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("Deployment %s/%s unchanged since planning (resourceVersion %s)", d.Namespace, d.Name, orDash(obj.ResourceVersion)),
		Verify:       "the rollout completes: status.observedGeneration catches up and every replica is updated and available",
		Commands:     []string{shellcmd.Sprintf("%s -n %s rollout restart deployment/%s", kubectl(c), namespaceArg(d.Namespace), nameArg(d.Name))},
	}
}

func (pl *planner) deleteBDStep(m *snapshot.Cluster, bd *snapshot.BundleDeployment, risk Risk, rationale string, why []Reason) Step {
	obj := metaObject(m.Name, fleetAPIVersion, "BundleDeployment", bd)
	return Step{
		ID:      stepID(DeleteBundleDeployment, m.Name, bd.Namespace, bd.Name, string(bd.UID)),
		Action:  DeleteBundleDeployment,
		Rung:    RungRepair,
		Risk:    risk,
		Cluster: m.Name,
		Target:  obj,
		Touches: []Object{obj},
		Change: fmt.Sprintf("delete BundleDeployment %s/%s: the Fleet controller creates it again from Bundle %s", bd.Namespace, bd.Name,
			fleet.BundleName(bd)),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("BundleDeployment %s/%s unchanged since planning (uid %s, resourceVersion %s)", bd.Namespace, bd.Name, orDash(obj.UID), orDash(obj.ResourceVersion)),
		Verify:       "the BundleDeployment with that UID is gone (the controller may already have created a new one)",
		Commands:     []string{shellcmd.Sprintf("%s -n %s delete bundledeployments.fleet.cattle.io %s", kubectl(m), namespaceArg(bd.Namespace), nameArg(bd.Name))},
		Notes:        []string{"Unless the bundle sets keepResources, the agent uninstalls what the BundleDeployment deployed before the new one installs it again."},
	}
}
