package check

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// clusterHeadroom reports clusters with too little unrequested CPU or memory on their
// schedulable, Ready nodes: a rolling agent upgrade needs room for the new pod before the old
// one goes, and a SUC drain needs room for what it evicts (the scheduler places by requests,
// so free capacity is allocatable minus the requests of the pods bound to the node — what
// `kubectl describe node` shows as "Allocated resources").
//
// Only the pods in the snapshot count: a live scan reads the upgrade namespaces' pods only,
// so its free capacity is an upper bound; an offline bundle of every namespace is exact.
var clusterHeadroom = Check{
	Name:  "cluster/headroom",
	Emits: []string{"cluster/headroom-low"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		min := ctx.Thresholds.Float("cluster.headroomMinPercent")
		for _, c := range ctx.Snap.Clusters {
			if f, ok := headroom(ctx, c, min); ok {
				out = append(out, f)
			}
		}
		return out, nil
	},
}

type nodeUse struct {
	name                 string
	allocCPU, allocMem   int64 // millicores, bytes
	reqCPU, reqMem       int64
	pods                 int
	freeCPUPct, freeMemP float64
}

func headroom(ctx *Context, c *snapshot.Cluster, minPct float64) (finding.Finding, bool) {
	usable := map[string]*nodeUse{}
	var order []string
	for _, n := range c.Nodes {
		if n.Spec.Unschedulable || !nodeReady(n) {
			continue
		}
		cpu, mem := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Allocatable[corev1.ResourceMemory]
		if cpu.IsZero() && mem.IsZero() {
			continue
		}
		usable[n.Name] = &nodeUse{name: n.Name, allocCPU: cpu.MilliValue(), allocMem: mem.Value()}
		order = append(order, n.Name)
	}
	if len(usable) == 0 {
		return finding.Finding{}, false
	}
	pods := 0
	for _, p := range c.Pods {
		u := usable[p.Spec.NodeName]
		if u == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu, mem := podRequests(p)
		u.reqCPU += cpu
		u.reqMem += mem
		u.pods++
		pods++
	}
	var alloc, req nodeUse
	for _, name := range order {
		u := usable[name]
		alloc.allocCPU += u.allocCPU
		alloc.allocMem += u.allocMem
		req.reqCPU += u.reqCPU
		req.reqMem += u.reqMem
		u.freeCPUPct = freePct(u.allocCPU, u.reqCPU)
		u.freeMemP = freePct(u.allocMem, u.reqMem)
	}
	freeCPU := freePct(alloc.allocCPU, req.reqCPU)
	freeMem := freePct(alloc.allocMem, req.reqMem)
	if freeCPU >= minPct && freeMem >= minPct {
		return finding.Finding{}, false
	}
	var low []string
	if freeCPU < minPct {
		low = append(low, fmt.Sprintf("CPU %.0f%% free", freeCPU))
	}
	if freeMem < minPct {
		low = append(low, fmt.Sprintf("memory %.0f%% free", freeMem))
	}
	// The fullest node names the finding; the summary and evidence speak for the cluster.
	sort.SliceStable(order, func(i, j int) bool {
		a, b := usable[order[i]], usable[order[j]]
		return min(a.freeCPUPct, a.freeMemP) < min(b.freeCPUPct, b.freeMemP)
	})
	f := ctx.New("cluster/headroom-low", c, nodeRef(order[0]),
		fmt.Sprintf("cluster %s has little room for upgrade pods: %s of its %d schedulable nodes' allocatable (want at least %.0f%%)", c.Name, joinAnd(low), len(usable), minPct))
	f.Evidence = []finding.Evidence{
		ev("nodes of "+c.Name, "allocatable CPU %s, requested %s; allocatable memory %s, requested %s (requests of %d pods)",
			milli(alloc.allocCPU), milli(req.reqCPU), bytesHuman(alloc.allocMem), bytesHuman(req.reqMem), pods),
	}
	for i, name := range order {
		if i == 3 {
			break
		}
		u := usable[name]
		f.Evidence = append(f.Evidence, ev(sourceOf(c, nodeRef(name)), "node %s: CPU %.0f%% free, memory %.0f%% free (%s)", name, u.freeCPUPct, u.freeMemP, plural.Of(u.pods, "pod")))
	}
	f.Keys = []string{"headroom:" + c.Name}
	return f, true
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podRequests is what the scheduler reserves for a pod: the larger of the sum of its
// containers' requests and its largest init container's, plus the pod overhead.
func podRequests(p *corev1.Pod) (cpu, mem int64) {
	for _, c := range p.Spec.Containers {
		cpu += quantity(c.Resources.Requests, corev1.ResourceCPU, true)
		mem += quantity(c.Resources.Requests, corev1.ResourceMemory, false)
	}
	for _, c := range p.Spec.InitContainers {
		cpu = max(cpu, quantity(c.Resources.Requests, corev1.ResourceCPU, true))
		mem = max(mem, quantity(c.Resources.Requests, corev1.ResourceMemory, false))
	}
	cpu += quantity(p.Spec.Overhead, corev1.ResourceCPU, true)
	mem += quantity(p.Spec.Overhead, corev1.ResourceMemory, false)
	return cpu, mem
}

func quantity(l corev1.ResourceList, name corev1.ResourceName, milliUnits bool) int64 {
	q, ok := l[name]
	if !ok {
		return 0
	}
	if milliUnits {
		return q.MilliValue()
	}
	return q.Value()
}

func freePct(alloc, req int64) float64 {
	if alloc <= 0 {
		return 100
	}
	return 100 * float64(alloc-req) / float64(alloc)
}

func milli(m int64) string { return resource.NewMilliQuantity(m, resource.DecimalSI).String() }

func bytesHuman(b int64) string { return resource.NewQuantity(b, resource.BinarySI).String() }

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return xs[0] + " and " + xs[1]
}
