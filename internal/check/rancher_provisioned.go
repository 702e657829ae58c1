package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// rancherProvisioned judges the Kubernetes upgrades Rancher drives on the RKE2/K3s clusters
// it provisions ("v2prov"). Raising a provisioning.cattle.io Cluster's spec.kubernetesVersion
// makes Rancher's planner (rancher/rancher pkg/capr/planner) rewrite one machine-plan Secret
// per CAPI Machine, tier by tier; rancher-system-agent on each node applies it and writes
// applied-checksum, failure-count, probe-statuses and its output back (rancher/system-agent
// pkg/k8splan/watcher.go, applyinator). The planner reports where it waits in the
// RKEControlPlane's conditions ("draining worker node(s) …", "configuring control plane
// node(s) …", "waiting for probes: …") and on each Machine's Reconciled condition. The
// root symptom is rancher/upgrade-stuck; the machine-level findings say why.
var rancherProvisioned = Check{
	Name: "rancher/provisioned-upgrade",
	Emits: []string{"rancher/upgrade-stuck", "rancher/plan-not-applied", "rancher/plan-failing", "rancher/probes-failing",
		"rancher/drain-blocked", "rancher/node-not-ready", "rancher/kubelet-version-stale",
		"rancher/cluster-agent-disconnected", "rancher/etcd-snapshot-failing", "rancher/status-stale"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, m := range ctx.Snap.Clusters {
			for _, pc := range m.OtherOf(rancher.GroupProvisioning, "Cluster") {
				out = append(out, judgeProvisioned(ctx, m, pc)...)
			}
		}
		return out, nil
	},
}

// plannerMessage matches the planner's per-tier waiting messages (planner.go reconcile:
// "draining %s node(s) ", "configuring %s node(s) ", "uncordoning %s node(s) ", errIgnore's
// "failing %s machine(s) " and "non-ready %s machine(s) ").
var plannerMessage = lazyre.New(`\b(configuring|draining|uncordoning|failing|non-ready) (bootstrap|etcd|control plane|worker) (?:node|machine)\(s\) ([^:]+?)(?::|$)`)

// provisioned is one provisioned cluster as the check sees it.
type provisioned struct {
	m          *snapshot.Cluster
	pc         *snapshot.Unstructured
	cp         *snapshot.Unstructured // RKEControlPlane, may be nil
	want       string                 // spec.kubernetesVersion
	applied    string                 // RKEControlPlane status.appliedSpec.kubernetesVersion
	message    string                 // the planner's current message
	msgTime    time.Time
	tier       string
	downstream *snapshot.Cluster // the cluster itself, when the input holds it
	name       string            // how reports name the downstream cluster
	key        string
}

// loadProvisioned reads what the check needs of one provisioning Cluster; nil for an imported
// or hosted cluster (no rkeConfig, nothing the planner drives).
func loadProvisioned(ctx *Context, m *snapshot.Cluster, pc *snapshot.Unstructured) *provisioned {
	p := &provisioned{m: m, pc: pc, want: rancher.String(pc.Object, "spec", "kubernetesVersion")}
	if p.want == "" {
		return nil
	}
	if cp, ok := m.GetRef("rke.cattle.io/v1", rancher.KindRKEControlPlane, pc.Namespace, pc.Name).(*snapshot.Unstructured); ok {
		p.cp = cp
		p.applied = rancher.String(cp.Object, "status", "appliedSpec", "kubernetesVersion")
	}
	p.downstream, p.name = rancherDownstream(ctx.Snap, pc.Namespace, pc.Name, rancher.String(pc.Object, "status", "clusterName"))
	p.key = "rancher:" + m.Name + "/" + pc.Namespace + "/" + pc.Name
	p.message, p.msgTime = plannerStatus(p)
	if mm := plannerMessage().FindStringSubmatch(p.message); mm != nil {
		p.tier = mm[2]
	}
	return p
}

// underWay reports whether the planner is moving the cluster: a new version not yet applied,
// or a planner message saying where it waits.
func (p *provisioned) underWay() bool {
	return p.applied != "" && p.applied != p.want || p.message != ""
}

// rancherMachine is the CAPI Machine behind a node of a cluster Rancher provisions.
type rancherMachine struct {
	source    string // where it was read, on the management cluster
	namespace string
	name      string
	underWay  bool // the provisioned cluster's upgrade is under way
}

// rancherMachines maps nodes (by NodeKey) to the Machines of the provisioned clusters they
// belong to. rancher/node-not-ready reports the nodes of an upgrade under way, node/not-ready
// the others, naming the Machine.
func rancherMachines(ctx *Context) map[string]rancherMachine {
	out := map[string]rancherMachine{}
	for _, m := range ctx.Snap.Clusters {
		for _, pc := range m.OtherOf(rancher.GroupProvisioning, "Cluster") {
			p := loadProvisioned(ctx, m, pc)
			if p == nil || p.downstream == nil {
				continue
			}
			for _, mc := range machinesOf(m, pc.Namespace, pc.Name) {
				if mc.node != "" {
					out[NodeKey(p.downstream.Name, mc.node)] = rancherMachine{sourceOf(m, p.machineRef(mc)), mc.u.Namespace, mc.u.Name, p.underWay()}
				}
			}
		}
	}
	return out
}

func judgeProvisioned(ctx *Context, m *snapshot.Cluster, pc *snapshot.Unstructured) []finding.Finding {
	p := loadProvisioned(ctx, m, pc)
	if p == nil {
		return nil
	}
	if !p.underWay() {
		if ctx.Preflight {
			return unhealthyProbesBefore(ctx, p)
		}
		return nil
	}
	var out []finding.Finding
	machines := machinesOf(m, pc.Namespace, pc.Name)
	for _, mc := range machines {
		out = append(out, judgeMachine(ctx, p, mc)...)
	}
	if f, ok := agentStatusStale(ctx, p); ok {
		out = append(out, f)
	} else if f, ok := agentDisconnected(ctx, p); ok {
		out = append(out, f)
	}
	if f, ok := snapshotFailing(ctx, p); ok {
		out = append(out, f)
	}
	// The symptom needs a cause found, or a planner message old enough: without a time (no
	// condition recorded one) nothing says how long it has waited.
	if len(out) > 0 || !p.msgTime.IsZero() && ctx.Age(p.msgTime) >= ctx.Thresholds.Duration("rancher.upgradeStuckAfter") {
		out = append(out, upgradeStuck(ctx, p, machines))
	}
	return out
}

// rancherDownstream finds the snapshot cluster Rancher provisioned: by the Fleet Cluster
// Rancher creates with the provisioning Cluster's namespace and name, by that name, or by the
// management cluster ID (c-m-…).
func rancherDownstream(s *snapshot.Snapshot, ns, name, id string) (*snapshot.Cluster, string) {
	if c := s.ClusterForFleet(ns + "/" + name); c != nil {
		return c, c.Name
	}
	for _, n := range []string{name, id} {
		if c := s.Cluster(n); c != nil && n != "" && c.Role != snapshot.Management {
			return c, c.Name
		}
	}
	return nil, name
}

// plannerStatus is the message the planner last left where the cluster waits: the
// RKEControlPlane's Reconciled/Ready conditions (copied to the provisioning Cluster's Updated
// and Provisioned), the first one that is not True with a message.
func plannerStatus(p *provisioned) (string, time.Time) {
	type src struct {
		obj   *snapshot.Unstructured
		types []string
	}
	for _, s := range []src{{p.cp, []string{"Reconciled", "Ready", "Updated"}}, {p.pc, []string{"Updated", "Provisioned", "Ready"}}} {
		if s.obj == nil {
			continue
		}
		for _, t := range s.types {
			if c, ok := rancher.Cond(s.obj.Object, t); ok && c.Status != "True" && c.Message != "" {
				return c.Message, c.Time
			}
		}
	}
	return "", time.Time{}
}

// capiMachine is what the check reads of a CAPI Machine.
type capiMachine struct {
	u                 *snapshot.Unstructured
	node              string
	kubelet           string
	tier              string
	reconciled        rancher.Condition
	planApplied       rancher.Condition
	hasRec, hasPlanAp bool
}

func machinesOf(m *snapshot.Cluster, ns, cluster string) []*capiMachine {
	var out []*capiMachine
	for _, u := range m.OtherOf(rancher.GroupCAPI, rancher.KindMachine) {
		labels := rancher.StringMap(u.Object, "metadata", "labels")
		if u.Namespace != ns || (labels["cluster.x-k8s.io/cluster-name"] != cluster && rancher.String(u.Object, "spec", "clusterName") != cluster) {
			continue
		}
		mc := &capiMachine{u: u, node: rancher.String(u.Object, "status", "nodeRef", "name"),
			kubelet: rancher.String(u.Object, "status", "nodeInfo", "kubeletVersion"), tier: rancher.TierOf(labels)}
		for _, c := range machineConditions(u.Object) {
			switch c.Type {
			case "Reconciled":
				mc.reconciled, mc.hasRec = c, true
			case "PlanApplied":
				mc.planApplied, mc.hasPlanAp = c, true
			}
		}
		out = append(out, mc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].u.Name < out[j].u.Name })
	return out
}

// machineConditions reads a Machine's conditions in either CAPI form: v1beta2 keeps them in
// status.conditions (the v1beta1 ones move to status.deprecated.v1beta1.conditions); v1beta1
// in status.conditions with the new ones in status.v1beta2.conditions.
func machineConditions(obj map[string]any) []rancher.Condition {
	out := rancher.Conditions(obj)
	for _, path := range [][]string{{"status", "deprecated", "v1beta1"}, {"status", "v1beta2"}} {
		if sub, ok := rancher.Nested(obj, path...).(map[string]any); ok {
			out = append(out, rancher.Conditions(map[string]any{"status": sub})...)
		}
	}
	return out
}

func (p *provisioned) machineRef(mc *capiMachine) finding.ObjectRef {
	return ref(mc.u.APIVersion, mc.u.Kind, mc.u.Namespace, mc.u.Name)
}

func (p *provisioned) newFinding(ctx *Context, id string, obj finding.ObjectRef, summary string) finding.Finding {
	f := ctx.New(id, p.m, obj, summary)
	if p.downstream != nil && p.downstream != p.m {
		f.Affects = p.downstream.Name
	}
	f.Keys = []string{p.key}
	f.Vars = map[string]string{"rancher-cluster": p.pc.Name, "rancher-namespace": p.pc.Namespace}
	if id := rancher.String(p.pc.Object, "status", "clusterName"); id != "" {
		f.Vars["management-cluster-id"] = id
	}
	return f
}

func judgeMachine(ctx *Context, p *provisioned, mc *capiMachine) []finding.Finding {
	var out []finding.Finding
	plan := p.m.MachinePlanFor(mc.u.Namespace, mc.u.Name)
	mref := p.machineRef(mc)
	vars := func(f *finding.Finding) {
		f.Vars["machine"] = mc.u.Name
		if mc.node != "" {
			f.Vars["node"] = mc.node
		}
		if plan != nil {
			f.Vars["plan-secret"] = plan.Name
		}
	}
	var node *corev1.Node
	if p.downstream != nil && mc.node != "" {
		node, _ = p.downstream.Get("Node", "", mc.node).(*corev1.Node)
	}
	if node != nil {
		if since, down := nodeDownSince(node); down && ctx.Age(since) >= ctx.Thresholds.Duration("rancher.nodeNotReadyAfter") {
			f := p.newFinding(ctx, "rancher/node-not-ready", ref("v1", "Node", "", node.Name),
				fmt.Sprintf("node %s of machine %s is %s since %s: the planner cannot move on while it is down%s", node.Name, mc.u.Name, nodeDownWord(node), human(ctx.Age(since)), nodeWaiters(p.downstream, node.Name)))
			f.Cluster = p.downstream.Name
			f.Affects = ""
			f.Evidence = append(f.Evidence, nodeDownEvidence(p.downstream, node)...)
			f.Since = timePtr(since)
			f.Keys = append(f.Keys, NodeKey(p.downstream.Name, node.Name))
			vars(&f)
			out = append(out, f)
		}
	}
	if plan == nil {
		return out
	}
	if f, ok := planStatusStale(ctx, p, mc, plan); ok {
		// Rancher's word contradicted by the plan Secret: what the Secret says is the finding,
		// and an applied plan whose probes fail is held by them (probes-failing, below).
		vars(&f)
		out = append(out, f)
		if !plan.AppliedCurrent() || len(plan.UnhealthyProbes()) == 0 {
			return out
		}
	}
	psrc := sourceOf(p.m, ref("v1", "Secret", plan.Namespace, plan.Name))
	since := mc.reconciled.Time
	stuckFor := ctx.Age(since)
	patience := ctx.Thresholds.Duration("rancher.planNotAppliedAfter")
	draining := plan.Annotations[rancher.AnnotationDrainOptions] != "" && plan.Annotations[rancher.AnnotationDrainDone] != plan.Annotations[rancher.AnnotationDrainOptions]
	switch {
	case draining:
		if f, ok := drainBlocked(ctx, p, mc, plan, psrc); ok {
			vars(&f)
			out = append(out, f)
		}
	case plan.FailingCurrent() && plan.FailureCount >= max(1, ctx.Thresholds.Int("rancher.planFailuresMin")):
		f := p.newFinding(ctx, "rancher/plan-failing", mref,
			fmt.Sprintf("rancher-system-agent failed to apply the plan of machine %s %d time(s)%s", mc.u.Name, plan.FailureCount, onNode(mc.node)))
		f.Evidence = append(f.Evidence, ev(psrc, "failed-checksum is the current plan's; failure-count %d (failure-threshold %d, max-failures %d)", plan.FailureCount, plan.FailureThreshold, plan.MaxFailures))
		for _, l := range lastN(plan.FailedOutput, 8) {
			f.Evidence = append(f.Evidence, ev(psrc+" failed-output", "%s", l))
		}
		if mc.hasPlanAp && mc.planApplied.Status == "False" {
			f.Evidence = append(f.Evidence, ev(sourceOf(p.m, mref), "PlanApplied=False: %s", mc.planApplied.Message))
		}
		f.Since = timePtr(since)
		vars(&f)
		out = append(out, f)
	case plan.AppliedCurrent() && len(plan.UnhealthyProbes()) > 0 && stuckFor >= patience:
		bad := plan.UnhealthyProbes()
		f := p.newFinding(ctx, "rancher/probes-failing", mref,
			fmt.Sprintf("machine %s applied its plan but its probes fail: %s", mc.u.Name, strings.Join(bad, ", ")))
		for _, n := range bad {
			s := plan.Probes[n]
			f.Evidence = append(f.Evidence, ev(psrc+" probe-statuses", "%s: healthy=false, failureCount=%d, successCount=%d", n, s.FailureCount, s.SuccessCount))
		}
		if mc.hasRec {
			f.Evidence = append(f.Evidence, ev(sourceOf(p.m, mref), "Reconciled=%s %s: %s", mc.reconciled.Status, mc.reconciled.Reason, mc.reconciled.Message))
		}
		f.Since = timePtr(since)
		vars(&f)
		out = append(out, f)
	case plan.HasPlan() && !plan.AppliedCurrent() && !plan.FailingCurrent() && !since.IsZero() && stuckFor >= patience:
		f := p.newFinding(ctx, "rancher/plan-not-applied", mref,
			fmt.Sprintf("the plan of machine %s has not been applied for %s: rancher-system-agent%s is not applying it", mc.u.Name, human(stuckFor), onNode(mc.node)))
		f.Evidence = append(f.Evidence, ev(psrc, "applied-checksum %s is not the current plan's %s", orDash(short(plan.AppliedChecksum)), short(plan.PlanChecksum)))
		if mc.hasRec {
			f.Evidence = append(f.Evidence, ev(sourceOf(p.m, mref), "Reconciled=%s %s: %s", mc.reconciled.Status, mc.reconciled.Reason, mc.reconciled.Message))
		}
		f.Since = timePtr(since)
		vars(&f)
		out = append(out, f)
	case plan.InSync() && len(plan.UnhealthyProbes()) == 0 && mc.kubelet != "" && rancher.VersionTriple(mc.kubelet) != rancher.VersionTriple(p.want) &&
		stuckFor >= patience && (strings.Contains(mc.reconciled.Message, "waiting for kubelet to update") ||
		node != nil && rancher.VersionTriple(node.Status.NodeInfo.KubeletVersion) == rancher.VersionTriple(p.want)):
		// A machine whose old plan is still in sync is only waiting for its turn: the
		// planner's own "waiting for kubelet to update", or a node already at the version,
		// says the plan for the new version was applied.
		f := p.newFinding(ctx, "rancher/kubelet-version-stale", mref,
			fmt.Sprintf("machine %s applied its plan, but its recorded kubelet version %s is not %s", mc.u.Name, mc.kubelet, p.want))
		f.Evidence = append(f.Evidence, ev(sourceOf(p.m, mref), "status.nodeInfo.kubeletVersion %s; spec.kubernetesVersion %s", mc.kubelet, p.want))
		if node != nil {
			f.Evidence = append(f.Evidence, ev(sourceOf(p.downstream, ref("v1", "Node", "", node.Name)), "the node itself reports kubelet %s", node.Status.NodeInfo.KubeletVersion))
			if rancher.VersionTriple(node.Status.NodeInfo.KubeletVersion) == rancher.VersionTriple(p.want) {
				f.Summary += " — the node already runs it: the Machine's nodeInfo is stale (capi-controller-manager lost its watch)"
			}
		}
		f.Since = timePtr(since)
		vars(&f)
		out = append(out, f)
	}
	return out
}

func onNode(node string) string {
	if node == "" {
		return ""
	}
	return " on node " + node
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

func lastN(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

func nodeReadyCond(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func readyWord(s corev1.ConditionStatus) string {
	if s == corev1.ConditionUnknown {
		return "NotReady (kubelet stopped posting status)"
	}
	return "NotReady"
}

// evictionBlocked matches kubectl drain's eviction error (k8s.io/kubectl pkg/drain):
// error when evicting pods/"web-0" -n "shop" (will retry after 5s): Cannot evict pod as it
// would violate the pod's disruption budget.
var evictionBlocked = lazyre.New(`evicting pods?/"?([a-z0-9.-]+)"? -n "?([a-z0-9-]+)"?`)

// drainBlocked reports a machine whose drain has not finished (drain-options set, drain-done
// not equal to it), naming the downstream PodDisruptionBudget that allows no disruption and
// covers a pod on the node.
func drainBlocked(ctx *Context, p *provisioned, mc *capiMachine, plan *rancher.MachinePlan, psrc string) (finding.Finding, bool) {
	drainErr := plan.Annotations[rancher.AnnotationDrainError]
	age := ctx.Age(mc.reconciled.Time)
	if drainErr == "" && (mc.reconciled.Time.IsZero() || age < ctx.Thresholds.Duration("rancher.drainStuckAfter")) {
		return finding.Finding{}, false
	}
	f := p.newFinding(ctx, "rancher/drain-blocked", p.machineRef(mc), fmt.Sprintf("the drain of machine %s%s does not finish", mc.u.Name, onNode(mc.node)))
	f.Evidence = append(f.Evidence, ev(psrc, "%s set, %s not equal to it", rancher.AnnotationDrainOptions, rancher.AnnotationDrainDone))
	if drainErr != "" {
		f.Evidence = append(f.Evidence, ev(psrc, "%s: %s", rancher.AnnotationDrainError, drainErr))
	}
	f.Since = timePtr(mc.reconciled.Time)
	if d := p.downstream; d != nil {
		var blockers []string
		for _, pdb := range d.PodDisruptionBudgets {
			if pdb.Status.DisruptionsAllowed > 0 || pdb.Spec.Selector == nil {
				continue
			}
			covered := coveredPods(d, pdb.Namespace, pdb.Spec.Selector, mc.node, drainErr)
			if len(covered) == 0 {
				continue
			}
			pref := ref("policy/v1", "PodDisruptionBudget", pdb.Namespace, pdb.Name)
			blockers = append(blockers, pdb.Namespace+"/"+pdb.Name)
			names := make([]string, len(covered))
			for i, c := range covered {
				names[i] = c.name
			}
			f.Evidence = append(f.Evidence, ev(sourceOf(d, pref), "PodDisruptionBudget %s/%s allows 0 disruptions (currentHealthy %d, desiredHealthy %d, expectedPods %d) and covers %s on the node",
				pdb.Namespace, pdb.Name, pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods, strings.Join(names, ", ")))
			// Where each match came from: the pod read with its node, or only the drain error.
			for _, c := range covered {
				if c.pod != nil {
					f.Evidence = append(f.Evidence, ev(sourceOf(d, podRef(c.pod)), "pod %s %s, selected by %s", c.name, c.how, metav1.FormatLabelSelector(pdb.Spec.Selector)))
				}
			}
			f.Keys = append(f.Keys, "pdb:"+d.Name+"/"+pdb.Namespace+"/"+pdb.Name)
			if f.Vars["pdb"] == "" {
				f.Vars["pdb"], f.Vars["pdb-namespace"] = pdb.Name, pdb.Namespace
			}
		}
		if len(blockers) > 0 {
			f.Summary = fmt.Sprintf("the drain of machine %s%s is blocked by PodDisruptionBudget %s (0 disruptions allowed)", mc.u.Name, onNode(mc.node), strings.Join(blockers, ", "))
		}
		if mc.node != "" {
			f.Keys = append(f.Keys, NodeKey(d.Name, mc.node))
		}
	}
	return f, true
}

// coveredPod is a pod a budget covers on the drained node, and how it was matched.
type coveredPod struct {
	name string      // namespace/name
	how  string      // what ties it to the drain
	pod  *corev1.Pod // nil: named by the drain error only
}

const notReadNote = " (named by the drain error; the pod itself was not read)"

// coveredPods lists the pods in ns matched by sel that run on node, or that the drain error
// names. A live read lists the pods of a cordoned node in every namespace, so the pods are
// there even when no drain error was recorded.
func coveredPods(c *snapshot.Cluster, ns string, sel *metav1.LabelSelector, node, drainErr string) []coveredPod {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil
	}
	named := map[string]bool{}
	for _, m := range evictionBlocked().FindAllStringSubmatch(drainErr, -1) {
		named[m[2]+"/"+m[1]] = true
	}
	var out []coveredPod
	read := false // any pod of ns read: without a cordoned node, a live scan reads only the upgrade namespaces' pods
	for _, p := range c.Pods {
		if p.Namespace != ns {
			continue
		}
		read = true
		if !s.Matches(labels.Set(p.Labels)) {
			continue
		}
		k := p.Namespace + "/" + p.Name
		switch {
		case node != "" && p.Spec.NodeName == node && named[k]:
			out = append(out, coveredPod{k, "runs on the node (spec.nodeName " + node + ") and is named by the drain error", p})
		case node != "" && p.Spec.NodeName == node:
			out = append(out, coveredPod{k, "runs on the node (spec.nodeName " + node + ")", p})
		case named[k]:
			out = append(out, coveredPod{k, "is named by the drain error", p})
		}
	}
	if len(out) == 0 && !read {
		// The pod itself was not read: the budget of its namespace that allows nothing is the
		// one the eviction error is about.
		for k := range named {
			if strings.HasPrefix(k, ns+"/") {
				out = append(out, coveredPod{name: k + notReadNote})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	}
	return out
}

func agentDisconnected(ctx *Context, p *provisioned) (finding.Finding, bool) {
	if p.cp == nil {
		return finding.Finding{}, false
	}
	connected, set := rancher.Bool(p.cp.Object, "status", "agentConnected")
	waiting := strings.Contains(p.message, "waiting for cluster agent to connect")
	if (!set || connected) && !waiting {
		return finding.Finding{}, false
	}
	cref := ref(p.cp.APIVersion, p.cp.Kind, p.cp.Namespace, p.cp.Name)
	f := p.newFinding(ctx, "rancher/cluster-agent-disconnected", cref,
		fmt.Sprintf("cattle-cluster-agent of %s is not connected to Rancher: the planner cannot finish the upgrade without it", p.name))
	if set && !connected {
		f.Evidence = append(f.Evidence, ev(sourceOf(p.m, cref), "status.agentConnected is false"))
	}
	if waiting {
		f.Evidence = append(f.Evidence, ev(sourceOf(p.m, cref), "%s", p.message))
	}
	if d := p.downstream; d != nil {
		for _, pod := range d.Pods {
			if pod.Namespace == "cattle-system" && strings.HasPrefix(pod.Name, "cattle-cluster-agent") {
				f.Keys = append(f.Keys, PodKey(d.Name, pod.Namespace, pod.Name))
			}
		}
	}
	f.Since = timePtr(p.msgTime)
	return f, true
}

// snapshotFailing reports a provisioned cluster whose planner, during an upgrade, says a
// snapshot operation is what it waits on, while no snapshot record shows the failure (the
// records' own failures are judged by etcdBackups, upgrade or not): Rancher's planner stops on
// a failing snapshot operation (rancher#37700, #36794).
func snapshotFailing(ctx *Context, p *provisioned) (finding.Finding, bool) {
	var newest *snapshot.EtcdSnapshot
	for _, s := range p.m.EtcdSnapshots {
		if s.Kind == "ETCDSnapshot" && s.Namespace == p.pc.Namespace && s.Cluster == p.pc.Name && (newest == nil || s.CreatedAt.After(newest.CreatedAt)) {
			newest = s
		}
	}
	if newest != nil && !newest.Ready || !strings.Contains(strings.ToLower(p.message), "snapshot") {
		return finding.Finding{}, false
	}
	obj := ref(p.pc.APIVersion, p.pc.Kind, p.pc.Namespace, p.pc.Name)
	f := p.newFinding(ctx, "rancher/etcd-snapshot-failing", obj, fmt.Sprintf("etcd snapshots of %s are failing during its upgrade", p.name))
	f.Evidence = append(f.Evidence, ev(sourceOf(p.m, obj), "%s", p.message))
	f.Keys = append(f.Keys, "etcd:"+p.name)
	return f, true
}

// upgradeStuck is the root symptom: the version Rancher was asked for is not the one applied,
// and the planner's message says where it waits (tier and machines).
func upgradeStuck(ctx *Context, p *provisioned, machines []*capiMachine) finding.Finding {
	obj := ref(p.pc.APIVersion, p.pc.Kind, p.pc.Namespace, p.pc.Name)
	var where string
	if mm := plannerMessage().FindStringSubmatch(p.message); mm != nil {
		where = fmt.Sprintf(" — %s %s machine(s) %s", mm[1], mm[2], strings.TrimSpace(mm[3]))
	}
	from := p.applied
	if from == "" {
		from = "?"
	}
	summary := fmt.Sprintf("Rancher's upgrade of %s to %s (applied: %s) is not finishing%s", p.name, p.want, from, where)
	if p.applied == p.want {
		summary = fmt.Sprintf("Rancher's planner is not done reconciling %s at %s%s", p.name, p.want, where)
	}
	f := p.newFinding(ctx, "rancher/upgrade-stuck", obj, summary)
	f.Evidence = append(f.Evidence, ev(sourceOf(p.m, obj), "spec.kubernetesVersion %s; RKEControlPlane status.appliedSpec.kubernetesVersion %s", p.want, orDash(p.applied)))
	if p.message != "" {
		f.Evidence = append(f.Evidence, ev(sourceOf(p.m, obj), "planner: %s", p.message))
	}
	for _, mc := range machines {
		if mc.hasRec && mc.reconciled.Status != "True" && mc.reconciled.Message != "" {
			f.Evidence = append(f.Evidence, ev(sourceOf(p.m, p.machineRef(mc)), "machine %s Reconciled=%s: %s", mc.u.Name, mc.reconciled.Status, mc.reconciled.Message))
		}
	}
	for _, cm := range p.m.ConfigMaps {
		if rancher.IsProvisioningLog(cm.Namespace, cm.Name) && cm.Namespace == rancher.String(p.pc.Object, "status", "clusterName") {
			lines := strings.Split(cm.Data[rancher.ProvisioningLogKey], "\n")
			for _, l := range lastN(lines, 3) {
				if strings.TrimSpace(l) != "" {
					f.Evidence = append(f.Evidence, ev(sourceOf(p.m, ref("v1", "ConfigMap", cm.Namespace, cm.Name)), "%s", l))
				}
			}
		}
	}
	f.Since = timePtr(p.msgTime)
	return f
}

// unhealthyProbesBefore is preflight's view of a cluster at rest: a machine whose probes fail
// now will hold the planner at "waiting for probes" as soon as its new plan is applied.
func unhealthyProbesBefore(ctx *Context, p *provisioned) []finding.Finding {
	var out []finding.Finding
	for _, mc := range machinesOf(p.m, p.pc.Namespace, p.pc.Name) {
		plan := p.m.MachinePlanFor(mc.u.Namespace, mc.u.Name)
		if plan == nil || len(plan.UnhealthyProbes()) == 0 {
			continue
		}
		bad := plan.UnhealthyProbes()
		f := p.newFinding(ctx, "rancher/probes-failing", p.machineRef(mc),
			fmt.Sprintf("machine %s's probes fail before the upgrade starts: %s", mc.u.Name, strings.Join(bad, ", ")))
		psrc := sourceOf(p.m, ref("v1", "Secret", plan.Namespace, plan.Name))
		for _, n := range bad {
			s := plan.Probes[n]
			f.Evidence = append(f.Evidence, ev(psrc+" probe-statuses", "%s: healthy=false, failureCount=%d, successCount=%d", n, s.FailureCount, s.SuccessCount))
		}
		f.Vars["machine"], f.Vars["plan-secret"], f.Vars["node"] = mc.u.Name, plan.Name, mc.node
		out = append(out, f)
	}
	return out
}
