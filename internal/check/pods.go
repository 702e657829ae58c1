package check

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/klog/v2"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// watchedNamespace is where upgrades of the fleet's own machinery run: Rancher's and Fleet's
// agents (cattle-*), system-upgrade-controller (system-upgrade) and kube-system. Application
// namespaces are not unstick's business.
func watchedNamespace(ns string) bool {
	return strings.HasPrefix(ns, "cattle-") || ns == "system-upgrade" || ns == "kube-system" || strings.HasPrefix(ns, "fleet-")
}

// podOwner returns the Deployment (or other top owner) name of a pod, following its ReplicaSet.
func podOwner(c *snapshot.Cluster, p *corev1.Pod) (kind, name string) {
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			if rs, ok := c.Get("ReplicaSet", p.Namespace, o.Name).(*appsv1.ReplicaSet); ok {
				for _, ro := range rs.OwnerReferences {
					if ro.Controller != nil && *ro.Controller {
						return ro.Kind, ro.Name
					}
				}
			}
			// The ReplicaSet was not read: its name is <deployment>-<hash>.
			if i := strings.LastIndex(o.Name, "-"); i > 0 {
				return "Deployment", o.Name[:i]
			}
		}
		return o.Kind, o.Name
	}
	return "", ""
}

// podKeys are the correlation keys of a pod: itself, its workload and, for an agent, the agent.
func podKeys(c *snapshot.Cluster, p *corev1.Pod) []string {
	keys := []string{PodKey(c.Name, p.Namespace, p.Name)}
	if _, owner := podOwner(c, p); owner != "" {
		keys = append(keys, WorkloadKey(c.Name, p.Namespace, owner))
		if isAgentWorkload(p.Namespace, owner) {
			keys = append(keys, agentKeyFor(c))
		}
	} else if isAgentWorkload(p.Namespace, p.Name) {
		keys = append(keys, agentKeyFor(c))
	}
	return keys
}

func podFinding(ctx *Context, c *snapshot.Cluster, p *corev1.Pod, id, summary string) finding.Finding {
	f := ctx.New(id, c, podRef(p), summary)
	f.Keys = podKeys(c, p)
	return f
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func allStatuses(p *corev1.Pod) []corev1.ContainerStatus {
	return append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
}

// eventSummary quotes the newest event of the given reasons with its count.
func eventEvidence(c *snapshot.Cluster, kind, ns, name string, reasons ...string) ([]finding.Evidence, time.Time) {
	var out []finding.Evidence
	var first time.Time
	evs := c.EventsFor(kind, ns, name)
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if !hasReason(e.Reason, reasons) {
			continue
		}
		first = earliest(first, snapshot.EventFirstTime(e))
		if len(out) < 2 {
			src := "event " + e.Reason
			if e.Count > 1 {
				src += fmt.Sprintf(" ×%d", e.Count)
			}
			if t := snapshot.EventTime(e); !t.IsZero() {
				src += " last " + t.UTC().Format(time.RFC3339)
			}
			out = append(out, finding.Evidence{Source: src, Text: firstLine(e.Message)})
		}
	}
	return out, first
}

func hasReason(r string, reasons []string) bool {
	for _, x := range reasons {
		if r == x {
			return true
		}
	}
	return false
}

// podScheduling reports pods the scheduler cannot place, split by why: untolerated taints or
// insufficient resources. The message is the scheduler's FailedScheduling text
// ("0/3 nodes are available: 2 node(s) had untolerated taint {…}, 1 Insufficient cpu …").
var podScheduling = Check{
	Name:  "pod/scheduling",
	Emits: []string{"pod/unschedulable-taints", "pod/unschedulable-resources"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("pod.pendingAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				if !watchedNamespace(p.Namespace) || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
					continue
				}
				cond := podCondition(p, corev1.PodScheduled)
				if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable {
					continue
				}
				evidence, firstEvent := eventEvidence(c, "Pod", p.Namespace, p.Name, "FailedScheduling")
				since := earliest(cond.LastTransitionTime.Time, firstEvent)
				if since.IsZero() || ctx.Age(since) < after {
					continue
				}
				msg := cond.Message
				if msg == "" && len(evidence) > 0 {
					msg = evidence[0].Text
				}
				counts := classify.SchedulingReasons(msg)
				id := "pod/unschedulable-resources"
				if counts["pod/unschedulable-taints"] > 0 && counts["pod/unschedulable-taints"] >= counts["pod/unschedulable-resources"] {
					id = "pod/unschedulable-taints"
				}
				what := "not enough free resources on any node"
				if id == "pod/unschedulable-taints" {
					what = "no node whose taints it tolerates"
				}
				f := podFinding(ctx, c, p, id, fmt.Sprintf("pod %s/%s has been unschedulable for %s: %s", p.Namespace, p.Name, human(ctx.Age(since)), what))
				f.Evidence = append([]finding.Evidence{ev(sourceOf(c, podRef(p)), "PodScheduled=False reason=Unschedulable: %s", msg)}, evidence...)
				if id == "pod/unschedulable-taints" {
					f.Evidence = append(f.Evidence, untoleratedTaints(c, p)...)
				}
				f.Since = timePtr(since)
				f.Signature = id + "|" + classify.Signature(msg)
				out = append(out, f)
			}
		}
		return out, nil
	},
}

// untoleratedTaints quotes the scheduling taints of the cluster's nodes the pod does not tolerate.
func untoleratedTaints(c *snapshot.Cluster, p *corev1.Pod) []finding.Evidence {
	var out []finding.Evidence
	for _, n := range c.Nodes {
		var bad []string
		for _, t := range n.Spec.Taints {
			if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
				continue
			}
			tolerated := false
			for _, tol := range p.Spec.Tolerations {
				if tol.ToleratesTaint(klog.Background(), &t, false) {
					tolerated = true
					break
				}
			}
			if !tolerated {
				bad = append(bad, t.ToString())
			}
		}
		if len(bad) > 0 {
			out = append(out, ev(sourceOf(c, ref("v1", "Node", "", n.Name)), "node %s: taint %s not tolerated by the pod", n.Name, strings.Join(bad, ", ")))
		}
		if len(out) == 5 {
			break
		}
	}
	return out
}

// podContainers reports containers that cannot run: crash loops, OOM kills, image pulls that
// fail (classified from the kubelet's events and waiting message), and missing ConfigMaps or
// Secrets (CreateContainerConfigError).
var podContainers = Check{
	Name:  "pod/containers",
	Emits: []string{"pod/crashloop", "pod/oom-killed", "pod/config-ref-missing", "image/pull-auth", "image/pull-not-found", "image/pull-network", "image/arch-mismatch"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		minRestarts := int32(ctx.Thresholds.Int("pod.crashloopMinRestarts"))
		pendingAfter := ctx.Thresholds.Duration("pod.pendingAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				if !watchedNamespace(p.Namespace) && p.Labels["upgrade.cattle.io/plan"] == "" {
					continue
				}
				for _, cs := range allStatuses(p) {
					out = append(out, judgeContainer(ctx, c, p, cs, minRestarts, pendingAfter)...)
				}
			}
		}
		return out, nil
	},
}

func judgeContainer(ctx *Context, c *snapshot.Cluster, p *corev1.Pod, cs corev1.ContainerStatus, minRestarts int32, pendingAfter time.Duration) []finding.Finding {
	var out []finding.Finding
	src := sourceOf(c, podRef(p))
	w := cs.State.Waiting
	last := cs.LastTerminationState.Terminated
	readySince := time.Time{}
	if cond := podCondition(p, corev1.PodReady); cond != nil && cond.Status == corev1.ConditionFalse {
		readySince = cond.LastTransitionTime.Time
	}
	if last != nil && last.Reason == "OOMKilled" && (w != nil || cs.RestartCount >= minRestarts) {
		f := podFinding(ctx, c, p, "pod/oom-killed", fmt.Sprintf("container %s of pod %s/%s was OOM-killed (restarted %d times): its memory limit is too low", cs.Name, p.Namespace, p.Name, cs.RestartCount))
		f.Evidence = []finding.Evidence{ev(src, "lastState.terminated: reason=OOMKilled exitCode=%d finishedAt=%s; limits.memory=%s", last.ExitCode, last.FinishedAt.UTC().Format(time.RFC3339), memLimit(p, cs.Name))}
		f.Since = timePtr(readySince)
		out = append(out, f)
	}
	if w == nil {
		return out
	}
	switch w.Reason {
	case "CrashLoopBackOff":
		if cs.RestartCount < minRestarts {
			return out
		}
		f := podFinding(ctx, c, p, "pod/crashloop", fmt.Sprintf("container %s of pod %s/%s is crash-looping (%d restarts)", cs.Name, p.Namespace, p.Name, cs.RestartCount))
		f.Evidence = []finding.Evidence{ev(src, "state.waiting: reason=CrashLoopBackOff message=%q", w.Message)}
		if last != nil {
			f.Evidence = append(f.Evidence, ev(src, "lastState.terminated: reason=%s exitCode=%d finishedAt=%s", last.Reason, last.ExitCode, last.FinishedAt.UTC().Format(time.RFC3339)))
		}
		if l := c.Logs[snapshot.LogKey(p.Namespace, p.Name, cs.Name)]; l != nil {
			if tail := lastNonEmpty(l.Previous, 2); len(tail) > 0 {
				for _, t := range tail {
					f.Evidence = append(f.Evidence, ev(l.PreviousFile, "%s", firstLine(t)))
				}
			}
		}
		_, firstBackOff := eventEvidence(c, "Pod", p.Namespace, p.Name, "BackOff")
		f.Since = timePtr(earliest(readySince, firstBackOff))
		f.Signature = "crashloop|" + cs.Name
		out = append(out, f)
		// A binary for another architecture dies at exec: "exec format error".
		if l := c.Logs[snapshot.LogKey(p.Namespace, p.Name, cs.Name)]; l != nil {
			for _, line := range append(append([]string{}, l.Previous...), l.Current...) {
				if m, ok := classify.Classify(line, classify.Log); ok && m.ID == "image/arch-mismatch" {
					a := podFinding(ctx, c, p, "image/arch-mismatch", fmt.Sprintf("container %s of pod %s/%s runs an image built for another CPU architecture (%s)", cs.Name, p.Namespace, p.Name, cs.Image))
					a.Evidence = []finding.Evidence{ev(l.PreviousFile, "%s", firstLine(line))}
					a.Signature = "arch|" + cs.Image
					out = append(out, a)
					break
				}
			}
		}
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		evs, first := eventEvidence(c, "Pod", p.Namespace, p.Name, "Failed", "BackOff")
		since := earliest(first, readySince)
		if !since.IsZero() && ctx.Age(since) < pendingAfter {
			return out
		}
		texts := []string{w.Message}
		for _, e := range evs {
			texts = append(texts, e.Text)
		}
		id := ""
		var why string
		for _, t := range texts {
			if m, ok := classify.Classify(t, classify.Event|classify.Status); ok && strings.HasPrefix(m.ID, "image/") {
				id, why = m.ID, t
				break
			}
		}
		if id == "" {
			return out // no cause told; rollout-stalled and the events say the rest
		}
		f := podFinding(ctx, c, p, id, fmt.Sprintf("pod %s/%s cannot pull %s: %s", p.Namespace, p.Name, cs.Image, pullCause(id)))
		f.Evidence = append([]finding.Evidence{ev(src, "state.waiting: reason=%s", w.Reason)}, finding.Evidence{Source: "kubelet", Text: firstLine(why)})
		f.Keys = append(f.Keys, "image:"+c.Name+"/"+cs.Image)
		f.Since = timePtr(since)
		f.Signature = id + "|" + cs.Image
		out = append(out, f)
	case "CreateContainerConfigError", "CreateContainerError":
		m, ok := classify.Classify(w.Message, classify.Status)
		if !ok || m.ID != "pod/config-ref-missing" {
			return out
		}
		f := podFinding(ctx, c, p, "pod/config-ref-missing", fmt.Sprintf("container %s of pod %s/%s cannot start: %s", cs.Name, p.Namespace, p.Name, w.Message))
		f.Evidence = []finding.Evidence{ev(src, "state.waiting: reason=%s message=%q", w.Reason, w.Message)}
		f.Since = timePtr(readySince)
		out = append(out, f)
	}
	return out
}

func pullCause(id string) string {
	switch id {
	case "image/pull-not-found":
		return "the registry does not have that tag or digest"
	case "image/pull-auth":
		return "the registry refused the credentials (or none were given)"
	case "image/pull-network":
		return "the registry cannot be reached from the node"
	case "image/arch-mismatch":
		return "the image has no build for this node's architecture"
	}
	return "see evidence"
}

func memLimit(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return q.String()
			}
		}
	}
	return "none"
}

func lastNonEmpty(lines []string, n int) []string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// podTerminating reports pods that were deleted but never went away — the old agent pod that
// blocks the new one, or a node that lost its kubelet.
var podTerminating = Check{
	Name:  "pod/terminating",
	Emits: []string{"pod/terminating-stuck"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("pod.terminatingAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				if !watchedNamespace(p.Namespace) || p.DeletionTimestamp == nil {
					continue
				}
				grace := time.Duration(0)
				if p.DeletionGracePeriodSeconds != nil {
					grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
				}
				// deletionTimestamp is when the grace period ends.
				since := p.DeletionTimestamp.Time.Add(-grace)
				if ctx.Age(p.DeletionTimestamp.Time) < after {
					continue
				}
				f := podFinding(ctx, c, p, "pod/terminating-stuck", fmt.Sprintf("pod %s/%s has been terminating for %s", p.Namespace, p.Name, human(ctx.Age(since))))
				f.Evidence = []finding.Evidence{ev(sourceOf(c, podRef(p)), "metadata.deletionTimestamp=%s finalizers=%v node=%s", p.DeletionTimestamp.UTC().Format(time.RFC3339), p.Finalizers, orDash(p.Spec.NodeName))}
				if n, ok := c.Get("Node", "", p.Spec.NodeName).(*corev1.Node); ok {
					for _, cond := range n.Status.Conditions {
						if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
							f.Evidence = append(f.Evidence, ev(sourceOf(c, ref("v1", "Node", "", n.Name)), "node %s Ready=%s: %s", n.Name, cond.Status, cond.Message))
						}
					}
				}
				f.Since = timePtr(since)
				out = append(out, f)
			}
		}
		return out, nil
	},
}
