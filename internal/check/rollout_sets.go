package check

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// setRollout reports DaemonSet and StatefulSet rollouts that stopped: the controller has not
// observed the new generation, or pods still run an old revision (DaemonSet
// updatedNumberScheduled < desiredNumberScheduled; StatefulSet currentRevision !=
// updateRevision or updatedReplicas < replicas), for longer than
// workload.rolloutStalledAfter. Neither kind has a progress condition, so the time is that of
// the oldest pod that holds the rollout back. A DaemonSet's rolling update deletes a node's
// old pod before it creates the new one and counts unavailable pods against maxUnavailable
// (pkg/controller/daemon/update.go), so one node that is down — its old pod Terminating or
// not Ready for ever — stops the rollout on every node: the finding names that node and joins
// its incident.
var setRollout = Check{
	Name:  "workload/set-rollout",
	Emits: []string{"workload/rollout-stalled"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("workload.rolloutStalledAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, ds := range c.DaemonSets {
				if f, ok := daemonSetStalled(ctx, c, ds, after); ok {
					out = append(out, f)
				}
			}
			for _, sts := range c.StatefulSets {
				if f, ok := statefulSetStalled(ctx, c, sts, after); ok {
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

func daemonSetStalled(ctx *Context, c *snapshot.Cluster, ds *appsv1.DaemonSet, after time.Duration) (finding.Finding, bool) {
	st := ds.Status
	behind := st.ObservedGeneration < ds.Generation || st.UpdatedNumberScheduled < st.DesiredNumberScheduled
	if !watchedNamespace(ds.Namespace) || !behind {
		return finding.Finding{}, false
	}
	holders := holdingPods(c, "DaemonSet", ds.Namespace, ds.Name, "")
	since := oldestHold(holders)
	if since.IsZero() || ctx.Age(since) < after {
		return finding.Finding{}, false
	}
	obj := ref("apps/v1", "DaemonSet", ds.Namespace, ds.Name)
	node, _ := daemonSetWaitsOn(c, ds)
	f := ctx.New("workload/rollout-stalled", c, obj, fmt.Sprintf("rollout of DaemonSet %s/%s has stalled for %s: %d/%d pods updated, %d unavailable%s",
		ds.Namespace, ds.Name, human(ctx.Age(since)), st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberUnavailable, waitsOnText(node)))
	f.Evidence = []finding.Evidence{ev(sourceOf(c, obj), "generation %d observedGeneration %d desiredNumberScheduled %d updatedNumberScheduled %d numberAvailable %d numberUnavailable %d",
		ds.Generation, st.ObservedGeneration, st.DesiredNumberScheduled, st.UpdatedNumberScheduled, st.NumberAvailable, st.NumberUnavailable)}
	return setFinding(ctx, c, f, ds.Namespace, ds.Name, node, holders, since), true
}

func statefulSetStalled(ctx *Context, c *snapshot.Cluster, sts *appsv1.StatefulSet, after time.Duration) (finding.Finding, bool) {
	st := sts.Status
	want := int32(1)
	if sts.Spec.Replicas != nil {
		want = *sts.Spec.Replicas
	}
	onDelete := sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType
	behind := st.ObservedGeneration < sts.Generation || !onDelete && (st.UpdatedReplicas < want || st.UpdateRevision != "" && st.CurrentRevision != st.UpdateRevision)
	if !watchedNamespace(sts.Namespace) || !behind {
		return finding.Finding{}, false
	}
	holders := holdingPods(c, "StatefulSet", sts.Namespace, sts.Name, st.UpdateRevision)
	since := oldestHold(holders)
	if since.IsZero() || ctx.Age(since) < after {
		return finding.Finding{}, false
	}
	obj := ref("apps/v1", "StatefulSet", sts.Namespace, sts.Name)
	node := downNodeOf(c, holders)
	f := ctx.New("workload/rollout-stalled", c, obj, fmt.Sprintf("rollout of StatefulSet %s/%s has stalled for %s: %d/%d replicas updated, %d ready%s",
		sts.Namespace, sts.Name, human(ctx.Age(since)), st.UpdatedReplicas, want, st.ReadyReplicas, waitsOnText(node)))
	f.Evidence = []finding.Evidence{ev(sourceOf(c, obj), "generation %d observedGeneration %d currentRevision %s updateRevision %s updatedReplicas %d readyReplicas %d",
		sts.Generation, st.ObservedGeneration, orDash(st.CurrentRevision), orDash(st.UpdateRevision), st.UpdatedReplicas, st.ReadyReplicas)}
	return setFinding(ctx, c, f, sts.Namespace, sts.Name, node, holders, since), true
}

// setFinding adds what DaemonSet and StatefulSet findings share: the pods holding the rollout
// back, the keys of the workload and of the node it waits on.
func setFinding(ctx *Context, c *snapshot.Cluster, f finding.Finding, ns, name, node string, holders []holdingPod, since time.Time) finding.Finding {
	for i, h := range holders {
		if i == 3 {
			f.Evidence = append(f.Evidence, ev(sourceOf(c, f.Object), "and %d more pod(s)", len(holders)-i))
			break
		}
		f.Evidence = append(f.Evidence, ev(sourceOf(c, podRef(h.pod)), "pod %s on node %s: %s", h.pod.Name, orDash(podNode(h.pod)), h.why))
	}
	f.Keys = []string{WorkloadKey(c.Name, ns, name)}
	if node != "" {
		f.Keys = append(f.Keys, NodeKey(c.Name, node))
		f.Vars = map[string]string{"node": node}
	}
	f.Since = timePtr(since)
	return f
}

func waitsOnText(node string) string {
	if node == "" {
		return ""
	}
	return fmt.Sprintf("; waiting on node %s, which is down", node)
}

// holdingPod is a pod of a set that keeps its rollout from finishing, and why.
type holdingPod struct {
	pod   *corev1.Pod
	why   string
	since time.Time
}

// holdingPods are a set's pods that are Terminating, Pending, not Ready, or (StatefulSets)
// still at an old revision, oldest first.
func holdingPods(c *snapshot.Cluster, kind, ns, name, updateRevision string) []holdingPod {
	var out []holdingPod
	for _, p := range c.Pods {
		if p.Namespace != ns || !controlledBy(p, kind, name) {
			continue
		}
		if h, ok := holdOf(p, updateRevision); ok {
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].since.Before(out[j].since) })
	return out
}

func holdOf(p *corev1.Pod, updateRevision string) (holdingPod, bool) {
	switch ready := podCondition(p, corev1.PodReady); {
	case p.DeletionTimestamp != nil:
		return holdingPod{p, "Terminating since " + p.DeletionTimestamp.UTC().Format(time.RFC3339), p.DeletionTimestamp.Time}, true
	case p.Status.Phase == corev1.PodPending:
		return holdingPod{p, "Pending", p.CreationTimestamp.Time}, true
	case ready != nil && ready.Status != corev1.ConditionTrue:
		return holdingPod{p, fmt.Sprintf("Ready=%s %s", ready.Status, orDash(ready.Reason)), ready.LastTransitionTime.Time}, true
	case updateRevision != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] != updateRevision:
		return holdingPod{p, "at old revision " + p.Labels[appsv1.ControllerRevisionHashLabelKey], p.CreationTimestamp.Time}, true
	}
	return holdingPod{}, false
}

func oldestHold(hs []holdingPod) time.Time {
	var t time.Time
	for _, h := range hs {
		t = earliest(t, h.since)
	}
	return t
}

func controlledBy(p *corev1.Pod, kind, name string) bool {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == kind && o.Name == name {
			return true
		}
	}
	return false
}

// downNodeOf is the first down node among the nodes of the holding pods.
func downNodeOf(c *snapshot.Cluster, hs []holdingPod) string {
	for _, h := range hs {
		if n := podNode(h.pod); nodeIsDown(c, n) {
			return n
		}
	}
	return ""
}

// daemonSetWaitsOn is the down node a DaemonSet's rollout waits on, if any.
func daemonSetWaitsOn(c *snapshot.Cluster, ds *appsv1.DaemonSet) (string, bool) {
	st := ds.Status
	if st.ObservedGeneration >= ds.Generation && st.UpdatedNumberScheduled >= st.DesiredNumberScheduled && st.NumberUnavailable == 0 {
		return "", false
	}
	n := downNodeOf(c, holdingPods(c, "DaemonSet", ds.Namespace, ds.Name, ""))
	return n, n != ""
}
