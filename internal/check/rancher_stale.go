package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Rancher's planner words (rancher/rancher pkg/capr/planner: store.go
// WaitingPlanStatusMessage, planner.go's tier reconcile).
const (
	msgWaitingPlan  = "waiting for plan to be applied"
	msgWaitingAgent = "waiting for cluster agent to connect"
)

// recreatedAfter is how long after its Machine a machine-plan Secret may be created and still
// be the one Rancher made with the machine's RKEBootstrap: one created later was re-created.
const recreatedAfter = 10 * time.Minute

// planStatusStale reports a machine whose Rancher status says it waits for its plan while the
// plan Secret says otherwise: the plan is applied (the planner's condition is stale:
// rancher#54334), or the Secret was re-created after the machine, so its resourceVersion
// went back and rancher-system-agent refuses it as "older than the last secret operated on"
// until it restarts (rancher#53981). Either way Rancher's message is not the cause.
func planStatusStale(ctx *Context, p *provisioned, mc *capiMachine, plan *rancher.MachinePlan) (finding.Finding, bool) {
	said, since := waitingForPlan(p, mc)
	if said == "" || plan.FailingCurrent() || ctx.Age(since) < ctx.Thresholds.Duration("rancher.planNotAppliedAfter") {
		return finding.Finding{}, false
	}
	psrc := sourceOf(p.m, ref("v1", "Secret", plan.Namespace, plan.Name))
	switch {
	case plan.InSync() && plan.AppliedCurrent():
		f := staleFinding(ctx, p, mc, said, since, fmt.Sprintf(
			"Rancher says machine %s is %q, but its plan Secret shows the plan applied: Rancher's condition is stale, %s",
			mc.u.Name, msgWaitingPlan, afterApplied(plan)))
		f.Evidence = append(f.Evidence, ev(psrc, "appliedPlan equals plan, and applied-checksum equals the plan's checksum"))
		return f, true
	case !plan.AppliedCurrent():
		created, machineCreated, ok := recreatedSecret(p, mc, plan)
		if !ok {
			return finding.Finding{}, false
		}
		f := staleFinding(ctx, p, mc, said, since, fmt.Sprintf(
			"the plan Secret of machine %s was re-created %s after the machine: rancher-system-agent%s still holds the old Secret's resourceVersion and refuses the new one as older, so the plan is never applied",
			mc.u.Name, human(created.Sub(machineCreated)), onNode(mc.node)))
		f.Evidence = append(f.Evidence, ev(psrc, "created %s, Machine created %s; applied-checksum differs from the plan's",
			created.UTC().Format(time.RFC3339), machineCreated.UTC().Format(time.RFC3339)))
		agentRestartFirst(&f, mc)
		return f, true
	}
	return finding.Finding{}, false
}

// waitingForPlan is the Rancher message saying the machine waits for its plan, and since
// when: the Machine's own Reconciled condition, or the planner's message naming it.
func waitingForPlan(p *provisioned, mc *capiMachine) (string, time.Time) {
	if mc.hasRec && mc.reconciled.Status != "True" && strings.Contains(mc.reconciled.Message, msgWaitingPlan) {
		return mc.reconciled.Message, mc.reconciled.Time
	}
	if strings.Contains(p.message, msgWaitingPlan) && strings.Contains(p.message, mc.u.Name) {
		return p.message, p.msgTime
	}
	return "", time.Time{}
}

// afterApplied says what, if anything, holds the machine once its plan is applied.
func afterApplied(plan *rancher.MachinePlan) string {
	if bad := plan.UnhealthyProbes(); len(bad) > 0 {
		return "and what holds it is its failing probes: " + strings.Join(bad, ", ")
	}
	return "and nothing on the machine holds the upgrade: the planner has not reconciled it since"
}

// recreatedSecret says the machine's plan Secret was created well after the Machine.
func recreatedSecret(p *provisioned, mc *capiMachine, plan *rancher.MachinePlan) (created, machine time.Time, ok bool) {
	s, _ := p.m.Get("Secret", plan.Namespace, plan.Name).(*corev1.Secret)
	machine, err := time.Parse(time.RFC3339, rancher.String(mc.u.Object, "metadata", "creationTimestamp"))
	if s == nil || err != nil || s.CreationTimestamp.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	created = s.CreationTimestamp.Time
	return created, machine, created.Sub(machine) > recreatedAfter
}

// staleFinding starts a rancher/status-stale finding on a machine, quoting Rancher's word.
func staleFinding(ctx *Context, p *provisioned, mc *capiMachine, said string, since time.Time, summary string) finding.Finding {
	mref := p.machineRef(mc)
	f := p.newFinding(ctx, "rancher/status-stale", mref, summary)
	f.Evidence = append(f.Evidence, ev(sourceOf(p.m, mref), "Rancher: %s", said))
	f.Since = timePtr(since)
	f.Vars["machine"] = mc.u.Name
	if mc.node != "" {
		f.Vars["node"] = mc.node
		if p.downstream != nil {
			f.Keys = append(f.Keys, NodeKey(p.downstream.Name, mc.node))
		}
	}
	return f
}

// agentStatusStale reports Rancher's "waiting for cluster agent to connect" (or
// status.agentConnected false) while the downstream cluster, read through Rancher's own
// /k8s/clusters/<id> proxy, shows cattle-cluster-agent Ready: the proxy answering is the
// tunnel the agent holds, so the control plane's status is stale (rancher#48141). Read
// directly, a Ready pod proves nothing about the tunnel, and cluster-agent-disconnected stays.
func agentStatusStale(ctx *Context, p *provisioned) (finding.Finding, bool) {
	if p.cp == nil || p.downstream == nil {
		return finding.Finding{}, false
	}
	connected, set := rancher.Bool(p.cp.Object, "status", "agentConnected")
	waiting := strings.Contains(p.message, msgWaitingAgent)
	if (!set || connected) && !waiting {
		return finding.Finding{}, false
	}
	// A Ready pod alone does not say the agent reached Rancher (its readiness is local): the
	// proxy answering does, for the tunnel it goes through is the agent's.
	ready := readyClusterAgents(p.downstream)
	if len(ready) == 0 || !strings.Contains(p.downstream.Server, "/k8s/clusters/") {
		return finding.Finding{}, false
	}
	cref := ref(p.cp.APIVersion, p.cp.Kind, p.cp.Namespace, p.cp.Name)
	f := p.newFinding(ctx, "rancher/status-stale", cref, fmt.Sprintf(
		"Rancher says %s is %q, but the downstream cluster, read through Rancher's proxy (which answers only through the agent's tunnel), shows cattle-cluster-agent Ready: the RKEControlPlane's agent status is stale",
		p.name, msgWaitingAgent))
	if set && !connected {
		f.Evidence = append(f.Evidence, ev(sourceOf(p.m, cref), "status.agentConnected is false"))
	}
	if waiting {
		f.Evidence = append(f.Evidence, ev(sourceOf(p.m, cref), "Rancher: %s", p.message))
	}
	for _, pod := range ready {
		f.Evidence = append(f.Evidence, ev(sourceOf(p.downstream, podRef(pod)), "pod %s/%s Ready=True on node %s", pod.Namespace, pod.Name, orDash(pod.Spec.NodeName)))
		f.Keys = append(f.Keys, PodKey(p.downstream.Name, pod.Namespace, pod.Name))
	}
	f.Since = timePtr(p.msgTime)
	dropCommandsAbout(&f, "<machine>", "<plan-secret>")
	return f, true
}

// dropCommandsAbout removes the ladder's commands about objects the finding is not about (a
// machine's plan Secret, for the control plane's agent status).
func dropCommandsAbout(f *finding.Finding, placeholders ...string) {
	for i, st := range f.Remediation {
		var kept []string
		for _, c := range st.Commands {
			if !slices.ContainsFunc(placeholders, func(ph string) bool { return strings.Contains(c, ph) }) {
				kept = append(kept, c)
			}
		}
		f.Remediation[i].Commands = kept
	}
}

// readyClusterAgents are the downstream cattle-cluster-agent pods that are Ready.
func readyClusterAgents(d *snapshot.Cluster) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range d.Pods {
		if pod.Namespace != "cattle-system" || !strings.HasPrefix(pod.Name, "cattle-cluster-agent-") || pod.DeletionTimestamp != nil {
			continue
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, pod)
			}
		}
	}
	return out
}

// agentRestartFirst makes restarting rancher-system-agent on the machine's node the guided
// step of a re-created plan Secret: the stale record is the agent's, and restarting Rancher
// does not clear it.
func agentRestartFirst(f *finding.Finding, mc *capiMachine) {
	var kept []finding.Step
	for _, st := range f.Remediation {
		if st.Rung == "observe" {
			kept = append(kept, st)
		}
	}
	node := mc.node
	if node == "" {
		node = "the machine " + mc.u.Name
	}
	f.Remediation = append(kept, finding.Step{Rung: "restart", Risk: "low", Action: fmt.Sprintf(
		"On %s (and on every node whose plan Secret was re-created with it), run `systemctl restart rancher-system-agent`: it forgets the resourceVersion of the Secret it last processed and applies the current plan.", node)})
}
