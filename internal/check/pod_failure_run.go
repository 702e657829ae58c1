package check

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A failing pod is often not the first of its kind: an operator deletes it hoping the next one
// does better, a Job that hits its deadline is re-created by system-upgrade-controller under the
// same name, and the new pod's clock starts again while its workload has been failing for hours.
// The kubelet's events outlive the pods they were about ("Back-off restarting failed container
// <c> in pod <pod>", "Failed to pull image \"<image>\": ..."), so the run of failures is
// followed back through the events of the workload's earlier pods.

// failureRunGap is the longest quiet spell inside one run: kube-apiserver drops an event an
// hour after its last update (--event-ttl), so failures that far apart are not known to be one.
const failureRunGap = time.Hour

// failureRun is an unbroken run of one container's failures across a workload's pods.
type failureRun struct {
	start     time.Time
	pods      int    // pods with failures in the run, the current one included
	firstPod  string // the pod the run began with
	firstText string
	firstSrc  string
}

// siblingPods matches the names of pods the same workload created: <deployment>-<rs hash>-<id>
// for a Deployment, <job>-<id> for a Job. Other owners give nothing: a DaemonSet's other pods
// run on other nodes and are not earlier attempts; a StatefulSet's pod keeps its name.
func siblingPods(c *snapshot.Cluster, p *corev1.Pod) func(name string) bool {
	kind, owner := podOwner(c, p)
	segments := 0
	switch kind {
	case "Deployment":
		segments = 2
	case "Job", "ReplicaSet":
		segments = 1
	default:
		return func(name string) bool { return name == p.Name }
	}
	return func(name string) bool {
		rest, ok := strings.CutPrefix(name, owner+"-")
		return name == p.Name || ok && strings.Count(rest, "-") == segments-1 && !strings.HasPrefix(rest, "-")
	}
}

// failureRunOf follows a container's failures (events of the given reasons that match) back
// from the current pod through its workload's earlier pods.
func failureRunOf(c *snapshot.Cluster, p *corev1.Pod, match func(*corev1.Event) bool, reasons ...string) failureRun {
	type episode struct {
		pod         string
		first, last time.Time
		text, src   string
	}
	sibling := siblingPods(c, p)
	by := map[string]*episode{}
	for _, e := range c.Events {
		io := e.InvolvedObject
		if io.Kind != "Pod" || snapshot.EventGroup(e) != "" || io.Namespace != p.Namespace || !hasReason(e.Reason, reasons) || !sibling(io.Name) || !match(e) {
			continue
		}
		first, last := snapshot.EventFirstTime(e), snapshot.EventTime(e)
		if first.IsZero() {
			continue
		}
		ep := by[io.Name]
		if ep == nil {
			ep = &episode{pod: io.Name, first: first, last: last, text: firstLine(e.Message), src: eventSource(e)}
			by[io.Name] = ep
		}
		if first.Before(ep.first) {
			ep.first, ep.text, ep.src = first, firstLine(e.Message), eventSource(e)
		}
		if last.After(ep.last) {
			ep.last = last
		}
	}
	cur := by[p.Name]
	if cur == nil {
		return failureRun{}
	}
	run := failureRun{start: cur.first, pods: 1, firstPod: cur.pod, firstText: cur.text, firstSrc: cur.src}
	var earlier []*episode
	for _, ep := range by {
		if ep != cur && ep.first.Before(cur.first) {
			earlier = append(earlier, ep)
		}
	}
	// Newest first: each earlier pod joins the run when its failures reach to within the gap
	// of where the run begins so far.
	sort.Slice(earlier, func(i, j int) bool { return earlier[i].last.After(earlier[j].last) })
	for _, ep := range earlier {
		if ep.last.Before(run.start.Add(-failureRunGap)) {
			break
		}
		run.pods++
		if ep.first.Before(run.start) {
			run.start, run.firstPod, run.firstText, run.firstSrc = ep.first, ep.pod, ep.text, ep.src
		}
	}
	return run
}

// crashBackOff matches the kubelet's back-off event of one container
// ("Back-off restarting failed container <c> in pod <pod>_<ns>(<uid>)").
func crashBackOff(container string) func(*corev1.Event) bool {
	return func(e *corev1.Event) bool {
		return strings.Contains(e.Message, "restarting failed container "+container+" in pod ")
	}
}

// pullFailureOfImage matches the kubelet's pull events that name one of the images ("Failed to
// pull image \"<image>\": ...", "Back-off pulling image \"<image>\""). The kubelet writes the
// image as the pod spec gives it; the container status may show it normalised.
func pullFailureOfImage(images ...string) func(*corev1.Event) bool {
	return func(e *corev1.Event) bool {
		for _, image := range images {
			if image != "" && strings.Contains(e.Message, "image \""+image+"\"") {
				return true
			}
		}
		return false
	}
}

// specImage is the image the pod spec gives the named (init) container.
func specImage(p *corev1.Pod, container string) string {
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			if c.Name == container {
				return c.Image
			}
		}
	}
	return ""
}
