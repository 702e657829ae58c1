package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/klog/v2"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// watchedNamespace is where upgrades of the fleet's own machinery run: Rancher's and Fleet's
// agents (cattle-*), system-upgrade-controller (system-upgrade) and kube-system. Application
// namespaces are not unstick's business.
func watchedNamespace(ns string) bool {
	return strings.HasPrefix(ns, "cattle-") || ns == "system-upgrade" || ns == "kube-system" || strings.HasPrefix(ns, "fleet-")
}

// watchedPod reports whether a pod is part of the upgrade machinery: it runs in a watched
// namespace, or it is a system-upgrade-controller Job pod (labelled with its Plan) wherever the
// Plan put it.
func watchedPod(p *corev1.Pod) bool {
	return watchedNamespace(p.Namespace) || p.Labels[sucPlanLabel] != ""
}

// sucPlanLabel is the label system-upgrade-controller puts on its Jobs and their pods.
const sucPlanLabel = "upgrade.cattle.io/plan"

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
	// A pod that cannot run, stop or start because its node is down is the node's symptom.
	if n := podNode(p); nodeIsDown(c, n) {
		keys = append(keys, NodeKey(c.Name, n))
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

// eventEvidence quotes the newest event of the given reasons with its count.
func eventEvidence(c *snapshot.Cluster, group, kind, ns, name string, reasons ...string) ([]finding.Evidence, time.Time) {
	var out []finding.Evidence
	var first time.Time
	evs := c.EventsFor(group, kind, ns, name)
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if !hasReason(e.Reason, reasons) {
			continue
		}
		first = earliest(first, snapshot.EventFirstTime(e))
		if len(out) < 2 {
			out = append(out, finding.Evidence{Source: eventSource(e), Text: firstLine(e.Message)})
		}
	}
	return out, first
}

// eventSource names an event as evidence: its reason, how often it was seen and when last.
func eventSource(e *corev1.Event) string {
	src := "event " + e.Reason
	if e.Count > 1 {
		src += fmt.Sprintf(" ×%d", e.Count)
	}
	if t := snapshot.EventTime(e); !t.IsZero() {
		src += " last " + t.UTC().Format(time.RFC3339)
	}
	return src
}

// eventsOf returns the events of the given reasons about one object, newest first. Unlike
// eventEvidence it returns all of them: the kubelet interleaves the event that carries the cause
// ("Failed to pull image ...: <error>") with ones that do not ("Error: ImagePullBackOff",
// "Back-off pulling image ..."), and the latter are the newest while a pull backs off.
func eventsOf(c *snapshot.Cluster, group, kind, ns, name string, reasons ...string) []*corev1.Event {
	var out []*corev1.Event
	evs := c.EventsFor(group, kind, ns, name)
	for i := len(evs) - 1; i >= 0; i-- {
		if hasReason(evs[i].Reason, reasons) {
			out = append(out, evs[i])
		}
	}
	return out
}

func hasReason(r string, reasons []string) bool {
	for _, x := range reasons {
		if r == x {
			return true
		}
	}
	return false
}

// podScheduling reports pods the scheduler cannot place, split by why: no node it may run on
// (untolerated taints, cordoned nodes, a node selector or affinity nothing matches) or not enough
// free resources. The message is the scheduler's FitError ("0/3 nodes are available: 2 node(s)
// had untolerated taint {…}, 1 Insufficient cpu. preemption: …"), kept in the PodScheduled
// condition and the FailedScheduling events.
var podScheduling = Check{
	Name:  "pod/scheduling",
	Emits: []string{"pod/unschedulable-taints", "pod/unschedulable-resources"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("pod.pendingAfter")
		waited := waitedWorkloads(ctx.Snap)
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				if !judgedPod(c, p, waited) || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
					continue
				}
				cond := podCondition(p, corev1.PodScheduled)
				if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable {
					continue
				}
				evidence, firstEvent := eventEvidence(c, "", "Pod", p.Namespace, p.Name, "FailedScheduling")
				since := earliest(cond.LastTransitionTime.Time, firstEvent)
				if since.IsZero() || ctx.Age(since) < after {
					continue
				}
				msg := cond.Message
				if msg == "" && len(evidence) > 0 {
					msg = evidence[0].Text
				}
				id := schedulingID(msg)
				if id == "" {
					continue // e.g. an unbound PersistentVolumeClaim: neither placement nor capacity
				}
				what := "not enough free resources on any node"
				if id == "pod/unschedulable-taints" {
					what = "no node it is allowed to run on (taints, cordons, node selector or affinity)"
				}
				f := podFinding(ctx, c, p, id, fmt.Sprintf("pod %s/%s has been unschedulable for %s: %s", p.Namespace, p.Name, human(ctx.Age(since)), what))
				f.Evidence = append([]finding.Evidence{ev(sourceOf(c, podRef(p)), "PodScheduled=False reason=Unschedulable: %s", msg)}, evidence...)
				if id == "pod/unschedulable-taints" {
					f.Evidence = append(f.Evidence, untoleratedTaints(c, p)...)
					if k := untoleratedTaintKey(c, p); k != "" {
						f.Vars = map[string]string{"key": k}
					}
				}
				f.Vars = notAgentVars(c, p, f.Vars)
				f.Since = timePtr(since)
				f.Signature = id + "|" + classify.Signature(msg)
				out = append(out, f)
			}
		}
		return out, nil
	},
}

// notAgentVars marks a pod that is not the Fleet agent's, naming its workload, so its fix
// text leaves out the Fleet Cluster's agent settings (notFleetAgent).
func notAgentVars(c *snapshot.Cluster, p *corev1.Pod, vars map[string]string) map[string]string {
	kind, owner := podOwner(c, p)
	if isAgentWorkload(p.Namespace, owner) || owner == "" && isAgentWorkload(p.Namespace, p.Name) {
		return vars
	}
	if vars == nil {
		vars = map[string]string{}
	}
	vars[notFleetAgent] = fmt.Sprintf("pod %s/%s", p.Namespace, p.Name)
	if owner != "" {
		vars[notFleetAgent] = fmt.Sprintf("%s %s/%s", kind, p.Namespace, owner)
	}
	return vars
}

// schedulingID picks the catalogue ID of a scheduler message by the reason most nodes gave:
// the taint share of "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: },
// 2 Insufficient cpu" is the control plane, tainted by design, and the workers are full. A
// node selector or required affinity that no node matches ("3 node(s) didn't match Pod's node
// affinity/selector") is a placement problem like a taint, and the catalogue files it there.
// Reasons that are neither (volume binding, topology spread, ...) give "".
func schedulingID(msg string) string {
	counts := classify.SchedulingReasons(msg)
	if counts == nil {
		// Not a FitError (e.g. the kubelet's "Node didn't have enough resource: ..."): one reason.
		if m, ok := classify.Classify(msg, classify.Status); ok && strings.HasPrefix(m.ID, "pod/unschedulable-") {
			return m.ID
		}
		return ""
	}
	taints, resources := counts["pod/unschedulable-taints"], counts["pod/unschedulable-resources"]
	switch {
	case taints == 0 && resources == 0:
		if strings.Contains(strings.ToLower(msg), "didn't match pod's node affinity/selector") {
			return "pod/unschedulable-taints"
		}
		return ""
	case taints >= resources:
		return "pod/unschedulable-taints"
	}
	return "pod/unschedulable-resources"
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

// untoleratedTaintKey is the key of the first scheduling taint the pod does not tolerate,
// the one a toleration must name.
func untoleratedTaintKey(c *snapshot.Cluster, p *corev1.Pod) string {
	for _, n := range c.Nodes {
		for _, t := range n.Spec.Taints {
			if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
				continue
			}
			if !slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &t, false) }) {
				return t.Key
			}
		}
	}
	return ""
}

// podContainers reports containers that cannot run: crash loops, OOM kills, image pulls that
// fail (classified from the kubelet's events and waiting message), binaries built for another
// architecture, and missing ConfigMaps or Secrets (CreateContainerConfigError, FailedMount).
var podContainers = Check{
	Name:  "pod/containers",
	Emits: []string{"pod/crashloop", "pod/oom-killed", "pod/config-ref-missing", "image/pull-auth", "image/pull-not-found", "image/pull-network", "image/arch-mismatch"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		minRestarts := int32(ctx.Thresholds.Int("pod.crashloopMinRestarts"))
		pendingAfter := ctx.Thresholds.Duration("pod.pendingAfter")
		waited := waitedWorkloads(ctx.Snap)
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				if !judgedPod(c, p, waited) || p.DeletionTimestamp != nil {
					continue
				}
				perPod := map[string]bool{} // a missing volume source blocks every container at once
				for _, cs := range allStatuses(p) {
					for _, f := range judgeContainer(ctx, c, p, cs, minRestarts, pendingAfter) {
						if f.ID == "pod/config-ref-missing" {
							if perPod[f.ID] {
								continue
							}
							perPod[f.ID] = true
						}
						out = append(out, f)
					}
				}
			}
		}
		return out, nil
	},
}

// oomRecent is how long ago an OOM kill still counts for a container that is running again:
// a kill within a day of a container that keeps restarting is a pattern; one twelve days ago,
// followed by twelve quiet days, is history.
const oomRecent = 24 * time.Hour

func judgeContainer(ctx *Context, c *snapshot.Cluster, p *corev1.Pod, cs corev1.ContainerStatus, minRestarts int32, pendingAfter time.Duration) []finding.Finding {
	var out []finding.Finding
	src := sourceOf(c, podRef(p))
	w := cs.State.Waiting
	last := cs.LastTerminationState.Terminated
	readySince := readyFalseSince(p)
	// An OOM kill matters while it keeps the container down (it waits to be restarted) or keeps
	// recurring (several restarts, the latest a recent OOM kill). lastState only exists after a
	// restart, so a restartCount of 0 never shows one.
	if last != nil && last.Reason == "OOMKilled" &&
		(w != nil || (cs.RestartCount >= minRestarts && ctx.Age(last.FinishedAt.Time) < oomRecent)) {
		f := podFinding(ctx, c, p, "pod/oom-killed", fmt.Sprintf("container %s of pod %s/%s was OOM-killed (restarted %s): its memory limit is too low", cs.Name, p.Namespace, p.Name, plural.Of(int(cs.RestartCount), "time")))
		f.Evidence = []finding.Evidence{ev(src, "lastState.terminated: reason=OOMKilled exitCode=%d finishedAt=%s; limits.memory=%s", last.ExitCode, last.FinishedAt.UTC().Format(time.RFC3339), memLimit(p, cs.Name))}
		f.Since = timePtr(earliest(readySince, last.FinishedAt.Time))
		out = append(out, f)
	}
	if w == nil {
		return out
	}
	switch w.Reason {
	case "CrashLoopBackOff":
		// A binary for another architecture dies at exec ("exec /usr/bin/fleetagent: exec format
		// error", written by runc into the container's log): no restart count needed to be sure.
		if a, ok := archMismatch(ctx, c, p, cs); ok {
			out = append(out, a)
		}
		// A pod replaced in the middle of a crash loop starts counting restarts again; its
		// workload's earlier pods that crash-looped the same container say it is no new failure.
		run := failureRunOf(c, p, crashBackOff(cs.Name), "BackOff")
		if cs.RestartCount < minRestarts && run.pods < 2 {
			return out
		}
		summary := fmt.Sprintf("container %s of pod %s/%s is crash-looping (%d restarts)", cs.Name, p.Namespace, p.Name, cs.RestartCount)
		if run.pods > 1 {
			summary = fmt.Sprintf("container %s of pod %s/%s is crash-looping (%d restarts): its workload's pods have crash-looped for %s, across %d pods", cs.Name, p.Namespace, p.Name, cs.RestartCount, human(ctx.Age(run.start)), run.pods)
		}
		f := podFinding(ctx, c, p, "pod/crashloop", summary)
		f.Evidence = []finding.Evidence{ev(src, "state.waiting: reason=CrashLoopBackOff message=%q", w.Message)}
		if run.pods > 1 {
			f.Evidence = append(f.Evidence, ev(run.firstSrc, "first failure of the run, pod %s: %s", run.firstPod, run.firstText))
		}
		if last != nil {
			f.Evidence = append(f.Evidence, ev(src, "lastState.terminated: reason=%s exitCode=%d finishedAt=%s", last.Reason, last.ExitCode, last.FinishedAt.UTC().Format(time.RFC3339)))
		}
		if l := c.Logs[snapshot.LogKey(p.Namespace, p.Name, cs.Name)]; l != nil {
			for _, t := range lastNonEmpty(l.Previous, 2) {
				f.Evidence = append(f.Evidence, ev(l.PreviousFile, "%s", firstLine(t)))
			}
		}
		_, firstBackOff := eventEvidence(c, "", "Pod", p.Namespace, p.Name, "BackOff")
		f.Since = timePtr(earliest(earliest(readySince, firstBackOff), run.start))
		f.Signature = "crashloop|" + cs.Name
		out = append(out, f)
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		_, first := eventEvidence(c, "", "Pod", p.Namespace, p.Name, "Failed", "BackOff")
		// Measured from the first failed pull of this image by the workload's pods, not from
		// this pod's: a replaced pod (or a re-created Job's) starts the clock again.
		run := failureRunOf(c, p, pullFailureOfImage(cs.Image, specImage(p, cs.Name)), "Failed", "BackOff")
		since := earliest(earliest(first, readySince), run.start)
		if !since.IsZero() && ctx.Age(since) < pendingAfter {
			return out
		}
		// The waiting message names the cause only on the first failure and, since Kubernetes
		// 1.32, during the back-off ("Back-off pulling image \"x\": ErrImagePull: ..."); before
		// that it is just "Back-off pulling image \"x\"", and the cause is in the kubelet's
		// "Failed to pull image" events, however many "Error: ImagePullBackOff" came after them.
		id, why, whySrc := "", "", ""
		if m, ok := classify.Classify(w.Message, classify.Status); ok && strings.HasPrefix(m.ID, "image/") {
			id, why, whySrc = m.ID, w.Message, src+" state.waiting.message"
		}
		var backOff *corev1.Event
		for _, e := range eventsOf(c, "", "Pod", p.Namespace, p.Name, "Failed", "BackOff") {
			if e.Reason == "BackOff" && backOff == nil {
				backOff = e
			}
			if id != "" {
				continue
			}
			if m, ok := classify.Classify(e.Message, classify.Event); ok && strings.HasPrefix(m.ID, "image/") {
				id, why, whySrc = m.ID, e.Message, eventSource(e)
			}
		}
		if id == "" {
			return out // no cause told; rollout-stalled and the events say the rest
		}
		summary := fmt.Sprintf("pod %s/%s cannot pull %s: %s", p.Namespace, p.Name, cs.Image, pullCause(id))
		if run.pods > 1 {
			summary += fmt.Sprintf(" (failing for %s, across %d pods of its workload)", human(ctx.Age(since)), run.pods)
		}
		f := podFinding(ctx, c, p, id, summary)
		f.Evidence = []finding.Evidence{ev(src, "state.waiting: reason=%s", w.Reason), {Source: whySrc, Text: firstLine(why)}}
		if run.pods > 1 {
			f.Evidence = append(f.Evidence, ev(run.firstSrc, "first failure of the run, pod %s: %s", run.firstPod, run.firstText))
		}
		if backOff != nil {
			f.Evidence = append(f.Evidence, finding.Evidence{Source: eventSource(backOff), Text: firstLine(backOff.Message)})
		}
		f.Keys = append(f.Keys, "image:"+c.Name+"/"+cs.Image)
		f.Since = timePtr(since)
		f.Signature = id + "|" + cs.Image
		out = append(out, f)
	case "CreateContainerConfigError", "CreateContainerError", "ContainerCreating":
		// CreateContainerConfigError carries the kubelet's reason (`configmap "x" not found`,
		// `couldn't find key k in Secret ns/x`); a missing volume source leaves the pod in
		// ContainerCreating and only the FailedMount events say why (`MountVolume.SetUp failed
		// for volume "v" : secret "x" not found`).
		evs := eventsOf(c, "", "Pod", p.Namespace, p.Name, "Failed", "FailedMount")
		var why, whySrc string
		if m, ok := classify.Classify(w.Message, classify.Status); ok && m.ID == "pod/config-ref-missing" {
			why = w.Message
		}
		var first time.Time
		for _, e := range evs {
			first = earliest(first, snapshot.EventFirstTime(e))
			// The kubelet retries a mount every two minutes at most and re-emits the event, so
			// one not seen lately is about a mount that has since succeeded; the pod may now be
			// pulling its image.
			if why != "" || ctx.Age(snapshot.EventTime(e)) > pendingAfter {
				continue
			}
			if m, ok := classify.Classify(e.Message, classify.Event); ok && m.ID == "pod/config-ref-missing" {
				why, whySrc = e.Message, eventSource(e)
			}
		}
		if why == "" {
			return out
		}
		// Charts that create the object right after the pod (or an operator that writes the
		// Secret on start) leave a pod in this state for seconds: only a lasting one is stuck.
		since := earliest(first, readySince)
		if !since.IsZero() && ctx.Age(since) < pendingAfter {
			return out
		}
		f := podFinding(ctx, c, p, "pod/config-ref-missing", fmt.Sprintf("pod %s/%s cannot start container %s: %s", p.Namespace, p.Name, cs.Name, strings.TrimPrefix(firstLine(why), "Error: ")))
		f.Evidence = []finding.Evidence{ev(src, "state.waiting: reason=%s message=%q", w.Reason, w.Message)}
		if whySrc != "" {
			f.Evidence = append(f.Evidence, finding.Evidence{Source: whySrc, Text: firstLine(why)})
		}
		f.Since = timePtr(since)
		f.Signature = "config-ref-missing|" + classify.Signature(why)
		out = append(out, f)
	}
	return out
}

// archMismatch reads a crashing container's logs for the exec failure of a binary built for
// another CPU architecture and quotes the node's architecture beside it. When runc cannot even
// start the process, the same error is the last terminated state's message instead (reason
// StartError: "... unable to start container process: exec: \"/bin/sh\": exec format error").
func archMismatch(ctx *Context, c *snapshot.Cluster, p *corev1.Pod, cs corev1.ContainerStatus) (finding.Finding, bool) {
	type text struct {
		lines []string
		file  string
	}
	var texts []text
	if t := cs.LastTerminationState.Terminated; t != nil && t.Message != "" {
		texts = append(texts, text{[]string{t.Message}, sourceOf(c, podRef(p))})
	}
	if l := c.Logs[snapshot.LogKey(p.Namespace, p.Name, cs.Name)]; l != nil {
		texts = append(texts, text{l.Previous, l.PreviousFile}, text{l.Current, l.CurrentFile})
	}
	for _, part := range texts {
		for _, line := range part.lines {
			m, ok := classify.Classify(line, classify.Log)
			if !ok || m.ID != "image/arch-mismatch" {
				continue
			}
			a := podFinding(ctx, c, p, "image/arch-mismatch", fmt.Sprintf("container %s of pod %s/%s runs an image built for another CPU architecture (%s)", cs.Name, p.Namespace, p.Name, cs.Image))
			a.Evidence = []finding.Evidence{ev(part.file, "%s", firstLine(line))}
			if n, ok := c.Get("Node", "", p.Spec.NodeName).(*corev1.Node); ok {
				arch := n.Labels[corev1.LabelArchStable]
				if arch == "" {
					arch = n.Status.NodeInfo.Architecture
				}
				a.Evidence = append(a.Evidence, ev(sourceOf(c, ref("v1", "Node", "", n.Name)), "node %s is %s/%s", n.Name, orDash(n.Status.NodeInfo.OperatingSystem), orDash(arch)))
			}
			a.Keys = append(a.Keys, "image:"+c.Name+"/"+cs.Image)
			a.Since = timePtr(readyFalseSince(p))
			a.Signature = "arch|" + cs.Image
			return a, true
		}
	}
	return finding.Finding{}, false
}

func readyFalseSince(p *corev1.Pod) time.Time {
	if cond := podCondition(p, corev1.PodReady); cond != nil && cond.Status == corev1.ConditionFalse {
		return cond.LastTransitionTime.Time
	}
	return time.Time{}
}

func pullCause(id string) string {
	switch id {
	case "image/pull-not-found":
		return "the registry does not have that tag or digest"
	case "image/pull-auth":
		return "the registry refused the credentials (or none were given)"
	case "image/pull-network":
		return "the registry cannot be reached from the node, or refuses to serve it now (rate limit, outage)"
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
				if !watchedPod(p) || p.DeletionTimestamp == nil {
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
