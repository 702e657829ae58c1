package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Taints kube-controller-manager's node lifecycle controller puts on a node whose Ready
// condition is Unknown (the kubelet stopped posting status) or False
// (pkg/controller/nodelifecycle, k8s.io/api core/v1 well_known_taints.go).
const (
	taintUnreachable = "node.kubernetes.io/unreachable"
	taintNotReady    = "node.kubernetes.io/not-ready"
)

// nodeNotReady reports nodes of any cluster that have not been Ready for longer than
// node.notReadyAfter: the kubelet stopped posting status (Ready=Unknown, taint
// node.kubernetes.io/unreachable) or reports itself not ready (Ready=False). Nothing that
// must run on such a node moves: DaemonSet rollouts wait for its pod, the pods evicted from
// it stay Terminating until the kubelet confirms, SUC drains and Rancher's tiers wait. Those
// findings carry the node's key and join its incident. A machine of a Rancher-provisioned
// cluster whose upgrade is under way is rancher/node-not-ready's: one node, one finding.
var nodeNotReady = Check{
	Name:  "node/not-ready",
	Emits: []string{"node/not-ready"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("node.notReadyAfter")
		machines := rancherMachines(ctx)
		for _, c := range ctx.Snap.Clusters {
			for _, n := range c.Nodes {
				since, down := nodeDownSince(n)
				mc, rancherNode := machines[NodeKey(c.Name, n.Name)]
				if !down || ctx.Age(since) < after || rancherNode && mc.underWay {
					continue
				}
				f := notReadyFinding(ctx, c, n, since)
				if rancherNode {
					f.Summary += fmt.Sprintf("; Rancher provisions it as Machine %s/%s", mc.namespace, mc.name)
					f.Evidence = append(f.Evidence, ev(mc.source, "Machine %s/%s status.nodeRef.name=%s", mc.namespace, mc.name, n.Name))
					f.Vars["machine"], f.Vars["rancher-namespace"] = mc.name, mc.namespace
				}
				out = append(out, f)
			}
		}
		return out, nil
	},
}

func notReadyFinding(ctx *Context, c *snapshot.Cluster, n *corev1.Node, since time.Time) finding.Finding {
	obj := ref("v1", "Node", "", n.Name)
	f := ctx.New("node/not-ready", c, obj, fmt.Sprintf("node %s is %s since %s%s", n.Name, nodeDownWord(n), human(ctx.Age(since)), nodeWaiters(c, n.Name)))
	f.Evidence = nodeDownEvidence(c, n)
	f.Keys = []string{NodeKey(c.Name, n.Name)}
	f.Vars = map[string]string{"node": n.Name}
	f.Since = timePtr(since)
	return f
}

// nodeDownSince says whether a node is down — Ready not True, or tainted unreachable/not-ready
// by the node lifecycle controller — and since when.
func nodeDownSince(n *corev1.Node) (time.Time, bool) {
	var since time.Time
	down := false
	if r := nodeReadyCond(n); r != nil && r.Status != corev1.ConditionTrue {
		since, down = r.LastTransitionTime.Time, true
	}
	for _, t := range downTaints(n) {
		if t.TimeAdded != nil {
			since = earliest(since, t.TimeAdded.Time)
		}
		down = true
	}
	return since, down && !since.IsZero()
}

// nodeIsDown is nodeDownSince without the time: pods on such a node are its symptoms.
func nodeIsDown(c *snapshot.Cluster, name string) bool {
	if name == "" {
		return false
	}
	n, ok := c.Get("Node", "", name).(*corev1.Node)
	if !ok {
		return false
	}
	_, down := nodeDownSince(n)
	return down
}

func downTaints(n *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key == taintUnreachable || t.Key == taintNotReady {
			out = append(out, t)
		}
	}
	return out
}

func nodeDownWord(n *corev1.Node) string {
	if r := nodeReadyCond(n); r != nil {
		return readyWord(r.Status)
	}
	return "NotReady"
}

func nodeDownEvidence(c *snapshot.Cluster, n *corev1.Node) []finding.Evidence {
	src := sourceOf(c, ref("v1", "Node", "", n.Name))
	var out []finding.Evidence
	if r := nodeReadyCond(n); r != nil {
		out = append(out, ev(src, "Ready=%s reason=%s since %s: %s", r.Status, orDash(r.Reason), r.LastTransitionTime.UTC().Format(time.RFC3339), orDash(r.Message)))
		if !r.LastHeartbeatTime.IsZero() {
			out = append(out, ev(src, "last heartbeat %s", r.LastHeartbeatTime.UTC().Format(time.RFC3339)))
		}
	}
	for _, t := range downTaints(n) {
		added := "-"
		if t.TimeAdded != nil {
			added = t.TimeAdded.UTC().Format(time.RFC3339)
		}
		out = append(out, ev(src, "taint %s:%s added %s", t.Key, t.Effect, added))
	}
	if ni := n.Status.NodeInfo; ni.KubeletVersion != "" {
		out = append(out, ev(src, "kubelet %s, container runtime %s", ni.KubeletVersion, orDash(ni.ContainerRuntimeVersion)))
	}
	return out
}

// nodeWaiters says what waits on the node: the pods bound to it that are not running (their
// own findings say more) and the DaemonSets whose pod on it is not updated or not available.
func nodeWaiters(c *snapshot.Cluster, node string) string {
	stuck := 0
	for _, p := range c.Pods {
		if podNode(p) == node && (p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodPending || p.Status.Reason == "Evicted") {
			stuck++
		}
	}
	var sets []string
	for _, ds := range c.DaemonSets {
		if w, ok := daemonSetWaitsOn(c, ds); ok && w == node {
			sets = append(sets, ds.Namespace+"/"+ds.Name)
		}
	}
	sort.Strings(sets)
	s := ""
	if stuck > 0 {
		s += fmt.Sprintf("; %d pod(s) on it Terminating, evicted or Pending", stuck)
	}
	if len(sets) > 0 {
		s += fmt.Sprintf("; DaemonSet rollout(s) waiting on it: %s", joinMax(sets, 3))
	}
	return s
}

// podNode is the node a pod is bound to or, for a DaemonSet pod not yet scheduled, the one
// its required node affinity names (the DaemonSet controller pins each pod with a
// matchFields metadata.name term).
func podNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

func joinMax(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}
