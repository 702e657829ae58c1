package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// sucDrainReadiness judges the drains a system-upgrade-controller Plan with spec.drain will
// run: its Job's drain container runs `kubectl drain` on each node still to upgrade, and an
// eviction a PodDisruptionBudget refuses makes the drain retry until its timeout, the Job
// fail and the Plan stop on that node (system-upgrade-controller#78). A budget that allows
// no disruption and covers a pod on such a node is found before the drain reaches it.
var sucDrainReadiness = Check{
	Name:  "suc/drain-readiness",
	Emits: []string{"suc/drain-would-block"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			if len(c.PodDisruptionBudgets) == 0 || len(c.Nodes) == 0 {
				continue
			}
			for _, p := range c.Plans {
				out = append(out, planDrainWouldBlock(ctx, c, p)...)
			}
		}
		return out, nil
	},
}

// planDrainWouldBlock reports, per budget, the pods a Plan's drain will have to evict and
// the budget will not let go. Evictions are what budgets refuse: a drain with
// disableEviction deletes pods instead and is not held.
func planDrainWouldBlock(ctx *Context, c *snapshot.Cluster, p *suc.Plan) []finding.Finding {
	if p.Spec.Drain == nil || p.Spec.Drain.DisableEviction {
		return nil
	}
	drained, err := p.DrainPodSelector()
	if err != nil {
		return nil // suc/plan-invalid reports a selector that does not parse
	}
	nodes := nextDrained(ctx, c, p)
	if len(nodes) == 0 {
		return nil
	}
	var out []finding.Finding
	for _, pdb := range c.PodDisruptionBudgets {
		if !allowsNoDisruption(pdb) {
			continue
		}
		covered := evictedPods(c, pdb, drained, nodes)
		if len(covered) == 0 {
			continue
		}
		out = append(out, sucDrainFinding(ctx, c, p, pdb, covered))
	}
	return out
}

// nextDrained are the nodes the Plan will drain next: selected, not disabled, and not
// labelled done with its latest hash. Preflight, before a version change rewrites the Plan,
// counts every selected node when none is left to do: the next version drains them all.
func nextDrained(ctx *Context, c *snapshot.Cluster, p *suc.Plan) map[string]bool {
	selected, err := p.SelectedNodes(c.Nodes)
	if err != nil {
		return nil
	}
	pending, all := map[string]bool{}, map[string]bool{}
	for _, n := range selected {
		switch p.StateOf(n) {
		case suc.NodePending:
			pending[n.Name], all[n.Name] = true, true
		case suc.NodeDone:
			all[n.Name] = true
		}
	}
	if len(pending) == 0 && ctx.Preflight {
		return all
	}
	return pending
}

// allowsNoDisruption is a budget that refuses every eviction of pods it expects.
func allowsNoDisruption(pdb *policyv1.PodDisruptionBudget) bool {
	return pdb.Spec.Selector != nil && pdb.Status.DisruptionsAllowed == 0 && pdb.Status.ExpectedPods > 0
}

// evictedPods are the pods of the budget's namespace it selects, that run on a node to be
// drained and that the drain evicts: matched by the drain's pod selector, not a DaemonSet's
// (--ignore-daemonsets leaves them), not finished.
func evictedPods(c *snapshot.Cluster, pdb *policyv1.PodDisruptionBudget, drained labels.Selector, nodes map[string]bool) []*corev1.Pod {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, pod := range c.Pods {
		if pod.Namespace != pdb.Namespace || !nodes[pod.Spec.NodeName] || !sel.Matches(labels.Set(pod.Labels)) ||
			!drained.Matches(labels.Set(pod.Labels)) || ownedByDaemonSet(pod) ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, pod)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// sucDrainFinding names the budget, the pods it holds and their nodes, and the Plan.
func sucDrainFinding(ctx *Context, c *snapshot.Cluster, p *suc.Plan, pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) finding.Finding {
	pref := ref("policy/v1", "PodDisruptionBudget", pdb.Namespace, pdb.Name)
	var where, nodes []string
	for _, pod := range pods {
		where = append(where, pod.Namespace+"/"+pod.Name+" on "+pod.Spec.NodeName)
		if !slices.Contains(nodes, pod.Spec.NodeName) {
			nodes = append(nodes, pod.Spec.NodeName)
		}
	}
	f := ctx.New("suc/drain-would-block", c, pref, fmt.Sprintf(
		"PodDisruptionBudget %s/%s allows no disruption: Plan %s/%s's drain of %s will not finish",
		pdb.Namespace, pdb.Name, p.Namespace, p.Name, strings.Join(where, ", ")))
	f.Evidence = []finding.Evidence{
		ev(sourceOf(c, pref), "disruptionsAllowed 0 (currentHealthy %d, desiredHealthy %d, expectedPods %d), selector %s",
			pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods, metav1.FormatLabelSelector(pdb.Spec.Selector)),
		ev(sourceOf(c, planRef(p)), "spec.drain set (kubectl %s); node(s) %s not labelled %s=%s",
			strings.Join(p.DrainArgs(nodes[0]), " "), strings.Join(nodes, ", "), suc.LabelPlanName(p.Name), orDash(p.Status.LatestHash)),
	}
	for _, pod := range pods {
		f.Evidence = append(f.Evidence, ev(sourceOf(c, podRef(pod)), "pod %s/%s runs on node %s (phase %s)", pod.Namespace, pod.Name, pod.Spec.NodeName, pod.Status.Phase))
	}
	f.Keys = []string{PlanKey(c.Name, p.Namespace, p.Name), "pdb:" + c.Name + "/" + pdb.Namespace + "/" + pdb.Name}
	f.Vars = map[string]string{"pdb": pdb.Name, "pdb-namespace": pdb.Namespace, "plan": p.Name, "namespace": p.Namespace, "node": nodes[0]}
	f.Signature = "suc-drain-would-block|" + pdb.Namespace + "/" + pdb.Name
	return f
}
