package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// Correlation keys of system-upgrade-controller findings.

// PlanKey ties everything about one SUC Plan together: its image findings, its stuck state,
// its Jobs and the nodes they left behind.
func PlanKey(cluster, ns, name string) string { return "plan:" + cluster + "/" + ns + "/" + name }

// ImageKey ties the findings about one image reference on one cluster together (the pod
// checks use the same key for pull failures).
func ImageKey(cluster, ref string) string { return "image:" + cluster + "/" + ref }

// NodeKey ties findings about one node together.
func NodeKey(cluster, node string) string { return "node:" + cluster + "/" + node }

func planRef(p *suc.Plan) finding.ObjectRef {
	return ref(suc.APIVersion, suc.Kind, p.Namespace, p.Name)
}
func jobRef(j *batchv1.Job) finding.ObjectRef {
	return ref("batch/v1", "Job", j.Namespace, j.Name)
}
func nodeRef(n string) finding.ObjectRef { return ref("v1", "Node", "", n) }

// planKeys are a Plan's own key and its Jobs' workload keys.
func planKeys(c *snapshot.Cluster, p *suc.Plan, jobs []*batchv1.Job) []string {
	keys := []string{PlanKey(c.Name, p.Namespace, p.Name)}
	for _, j := range jobs {
		keys = append(keys, WorkloadKey(c.Name, j.Namespace, j.Name))
	}
	return keys
}

// currentJobs are the Plan's Jobs for its latest hash (older ones are being cleaned up by the
// controller and say nothing about the Plan as it is now).
func currentJobs(p *suc.Plan, jobs []*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range p.JobsOf(jobs) {
		if p.Status.LatestHash == "" || j.Labels[suc.LabelPlanName(p.Name)] == "" || j.Labels[suc.LabelPlanName(p.Name)] == p.Status.LatestHash {
			out = append(out, j)
		}
	}
	return out
}

// jobPods are the pods a Job created, by owner reference or the job-name labels.
func jobPods(c *snapshot.Cluster, j *batchv1.Job) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range c.Pods {
		if p.Namespace != j.Namespace {
			continue
		}
		owned := p.Labels["batch.kubernetes.io/job-name"] == j.Name || p.Labels["job-name"] == j.Name
		for _, o := range p.OwnerReferences {
			if o.Kind == "Job" && o.Name == j.Name {
				owned = true
			}
		}
		if owned {
			out = append(out, p)
		}
	}
	return out
}

// containerStatus returns the status of the named (init) container.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// pullFailure is a container that cannot pull its image, and why.
type pullFailure struct {
	pod    *corev1.Pod
	status *corev1.ContainerStatus
	id     string // image/pull-not-found, image/pull-auth, image/pull-network, image/arch-mismatch
	text   string
	source string
	since  time.Time
}

// pullFailureOf classifies a waiting container's pull error from its waiting message and the
// kubelet's Failed events (the message carries the cause only on the first failure and,
// since Kubernetes 1.32, during the back-off; the events always do).
func pullFailureOf(c *snapshot.Cluster, p *corev1.Pod, cs *corev1.ContainerStatus) (pullFailure, bool) {
	w := cs.State.Waiting
	if w == nil || (w.Reason != "ErrImagePull" && w.Reason != "ImagePullBackOff") {
		return pullFailure{}, false
	}
	pf := pullFailure{pod: p, status: cs}
	if m, ok := classify.Classify(w.Message, classify.Status); ok && strings.HasPrefix(m.ID, "image/") {
		pf.id, pf.text, pf.source = m.ID, w.Message, sourceOf(c, podRef(p))+" state.waiting.message"
	}
	for _, e := range eventsOf(c, "", "Pod", p.Namespace, p.Name, "Failed", "BackOff") {
		pf.since = earliest(pf.since, snapshot.EventFirstTime(e))
		if pf.id != "" || !strings.Contains(e.Message, cs.Image) && !strings.Contains(e.Message, cs.Name) {
			continue
		}
		if m, ok := classify.Classify(e.Message, classify.Event); ok && strings.HasPrefix(m.ID, "image/") {
			pf.id, pf.text, pf.source = m.ID, e.Message, eventSource(e)
		}
	}
	return pf, pf.id != ""
}

// execFormatError finds "exec format error" for a container: its last termination message,
// its terminated state, or its logs (runc writes it when the binary is for another CPU).
func execFormatError(c *snapshot.Cluster, p *corev1.Pod, cs *corev1.ContainerStatus) (text, source string, ok bool) {
	for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if t != nil && t.Message != "" {
			if m, ok := classify.Classify(t.Message, classify.Status); ok && m.ID == "image/arch-mismatch" {
				return t.Message, sourceOf(c, podRef(p)), true
			}
		}
	}
	if l := c.Logs[snapshot.LogKey(p.Namespace, p.Name, cs.Name)]; l != nil {
		for _, part := range []struct {
			lines []string
			file  string
		}{{l.Current, l.CurrentFile}, {l.Previous, l.PreviousFile}} {
			for _, line := range part.lines {
				if m, ok := classify.Classify(line, classify.Log); ok && m.ID == "image/arch-mismatch" {
					return line, part.file, true
				}
			}
		}
	}
	return "", "", false
}

// nodePlatform is a node's os/arch as "linux/arm64".
func nodePlatform(n inventory.Node) string { return orDash(n.OS) + "/" + orDash(n.Arch) }

// registryEvidence quotes what the registry said about a reference.
func registryEvidence(f imageref.Facts) finding.Evidence {
	text := fmt.Sprintf("%s: %s", f.Canonical, f.Status)
	switch {
	case f.Status == imageref.OK:
		text += " digest " + f.Digest
		if p := f.PlatformList(); p != "" {
			text += ", platforms " + p
		}
	case f.Error != "":
		text += " (" + f.Error + ")"
	}
	return finding.Evidence{Source: "registry", Text: text}
}

// nodeNames lists node names, sorted, at most n of them with a count of the rest.
func nodeNames(ns []inventory.Node, n int) string {
	var names []string
	for _, x := range ns {
		names = append(names, x.Name)
	}
	sort.Strings(names)
	if len(names) > n {
		return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

// selectedNodes are the Plan's nodes that are not opted out, with their platforms.
func selectedNodes(c *snapshot.Cluster, p *suc.Plan) []inventory.Node {
	nodes, _ := p.SelectedNodes(c.Nodes)
	var out []inventory.Node
	for _, n := range nodes {
		if p.StateOf(n) != suc.NodeDisabled {
			out = append(out, inventory.NodeOf(n))
		}
	}
	return out
}
