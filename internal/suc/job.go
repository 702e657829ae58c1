package suc

import (
	"sort"
	"strconv"
	"strings"

	"github.com/rancher/wrangler/v3/pkg/name"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/unstick-dev/unstick/internal/imageref"
)

// WithLatestTag is SUC's container.go WithLatestTag: a name-only image (no tag, no digest)
// gets tag appended and is written in its familiar form (reference.FamiliarString); anything
// else, or an unparsable reference, is left as written.
func WithLatestTag(image, tag string) string {
	if tag == "" {
		return image
	}
	r, err := imageref.Parse(image)
	if err != nil || !r.NameOnly() {
		return image
	}
	r.Tag = tag
	return r.Familiar()
}

// JobName is the name the controller gives the Job of plan on node:
// apply-<plan>-on-<short node name>-with-<latestHash>, cut to 63 characters with a hash suffix
// (job.go New: name.SafeConcatName("apply", plan.Name, "on", shortNodeName, "with",
// plan.Status.LatestHash); shortNodeName is the node name up to its first dot).
func JobName(plan, node, hash string) string {
	short := strings.SplitN(node, ".", 2)[0]
	return name.SafeConcatName("apply", plan, "on", short, "with", hash)
}

// Hostname is the node's kubernetes.io/hostname label, else its name (pkg/upgrade/node).
func Hostname(n *corev1.Node) string {
	if h, ok := n.Labels[corev1.LabelHostname]; ok {
		return h
	}
	return n.Name
}

// Selector is the Plan's node selection: spec.nodeSelector plus "kubernetes.io/hostname
// exists" (plan.go NodeSelector). A nil nodeSelector selects nothing, as
// metav1.LabelSelectorAsSelector makes it labels.Nothing().
func (p *Plan) Selector() (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
	if err != nil {
		return nil, err
	}
	req, err := labels.NewRequirement(corev1.LabelHostname, "exists", nil)
	if err != nil {
		return nil, err
	}
	return sel.Add(*req), nil
}

// SelectedNodes are the nodes the Plan applies to, whatever their progress.
func (p *Plan) SelectedNodes(nodes []*corev1.Node) ([]*corev1.Node, error) {
	sel, err := p.Selector()
	if err != nil {
		return nil, err
	}
	var out []*corev1.Node
	for _, n := range nodes {
		if sel.Matches(labels.Set(n.Labels)) {
			out = append(out, n)
		}
	}
	return out, nil
}

// NodeState is where one selected node is with a Plan, read from its plan label.
type NodeState string

const (
	// NodeDone: the label equals status.latestHash; the controller will not select it again.
	NodeDone NodeState = "done"
	// NodeDisabled: the label is "disabled"; the controller skips it.
	NodeDisabled NodeState = "disabled"
	// NodePending: anything else; the controller will run (or is running) a Job for it.
	NodePending NodeState = "pending"
)

// StateOf reads a node's plan label against the Plan's latest hash
// (plan.go SelectConcurrentNodes: plan label NotIn ["disabled", latestHash]).
func (p *Plan) StateOf(n *corev1.Node) NodeState {
	v, ok := n.Labels[LabelPlanName(p.Name)]
	switch {
	case ok && v == Disabled:
		return NodeDisabled
	case ok && p.Status.LatestHash != "" && v == p.Status.LatestHash:
		return NodeDone
	}
	return NodePending
}

// JobsOf returns the Jobs labelled for the Plan (same namespace), sorted by name.
func (p *Plan) JobsOf(jobs []*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range jobs {
		if j.Namespace == p.Namespace && j.Labels[LabelPlan] == p.Name {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// JobCondition returns the Job's condition of that type when it is True, or nil.
func JobCondition(j *batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// JobFailed is the Job's Failed condition, or nil.
func JobFailed(j *batchv1.Job) *batchv1.JobCondition { return JobCondition(j, batchv1.JobFailed) }

// JobComplete is the Job's Complete condition, or nil.
func JobComplete(j *batchv1.Job) *batchv1.JobCondition {
	return JobCondition(j, batchv1.JobComplete)
}

// JobActive reports a Job that neither completed nor failed.
func JobActive(j *batchv1.Job) bool { return JobFailed(j) == nil && JobComplete(j) == nil }

// FailureMessage is what the controller writes into the Plan's Complete condition and a
// JobFailed event for a failed Job (handle_batch.go: "Job %s/%s failed on Node %s: %s: %s").
func FailureMessage(j *batchv1.Job) string {
	c := JobFailed(j)
	if c == nil {
		return ""
	}
	return "Job " + j.Namespace + "/" + j.Name + " failed on Node " + j.Labels[LabelNode] + ": " + c.Reason + ": " + c.Message
}

// DrainPodSelector selects the pods the controller's drain evicts: those not labelled
// upgrade.cattle.io/controller, narrowed by spec.drain.podSelector (job.go New, the
// --pod-selector it passes). nil without a drain.
func (p *Plan) DrainPodSelector() (labels.Selector, error) {
	if p.Spec.Drain == nil {
		return nil, nil
	}
	r, err := labels.NewRequirement(LabelController, selection.DoesNotExist, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*r)
	if ps := p.Spec.Drain.PodSelector; ps != nil {
		s, err := metav1.LabelSelectorAsSelector(ps)
		if err != nil {
			return nil, err
		}
		if reqs, ok := s.Requirements(); ok {
			sel = sel.Add(reqs...)
		}
	}
	return sel, nil
}

// DrainArgs are the kubectl arguments the controller gives the drain container of node
// (job.go New): drain <node> --pod-selector <sel> [--ignore-daemonsets]
// [--delete-emptydir-data] [--force] [--timeout D] [--grace-period N]
// [--disable-eviction=true] [--skip-wait-for-delete-timeout N]. nil without a drain.
func (p *Plan) DrainArgs(node string) []string {
	d := p.Spec.Drain
	if d == nil {
		return nil
	}
	sel := "!" + LabelController
	if d.PodSelector != nil {
		if s, err := metav1.LabelSelectorAsSelector(d.PodSelector); err == nil && !s.Empty() {
			// labels.Selector renders requirements sorted by key, as the controller's does.
			if reqs, ok := s.Requirements(); ok {
				ls := labels.NewSelector()
				if r, err := labels.NewRequirement(LabelController, "!", nil); err == nil {
					ls = ls.Add(*r)
				}
				sel = ls.Add(reqs...).String()
			}
		}
	}
	args := []string{"drain", node, "--pod-selector", sel}
	if d.IgnoreDaemonSets == nil || *d.IgnoreDaemonSets {
		args = append(args, "--ignore-daemonsets")
	}
	if (d.DeleteLocalData == nil || *d.DeleteLocalData) && (d.DeleteEmptydirData == nil || *d.DeleteEmptydirData) {
		args = append(args, "--delete-emptydir-data")
	}
	if d.Force {
		args = append(args, "--force")
	}
	if d.Timeout != nil {
		args = append(args, "--timeout", d.Timeout.D.String())
	}
	if d.GracePeriod != nil {
		args = append(args, "--grace-period", strconv.FormatInt(int64(*d.GracePeriod), 10))
	}
	if d.DisableEviction {
		args = append(args, "--disable-eviction=true")
	}
	if d.SkipWaitForDeleteTimeout > 0 {
		args = append(args, "--skip-wait-for-delete-timeout", strconv.Itoa(d.SkipWaitForDeleteTimeout))
	}
	return args
}

// Container is one container of a Job's pod template, by stage.
type Container struct {
	Stage Stage
	Image string
	Args  []string
}

// JobContainers lists a Job's prepare/drain/cordon init containers and upgrade container.
func JobContainers(j *batchv1.Job) []Container {
	var out []Container
	for _, c := range j.Spec.Template.Spec.InitContainers {
		switch Stage(c.Name) {
		case StagePrepare, StageDrain, StageCordon:
			out = append(out, Container{Stage(c.Name), c.Image, c.Args})
		}
	}
	for _, c := range j.Spec.Template.Spec.Containers {
		if Stage(c.Name) == StageUpgrade {
			out = append(out, Container{StageUpgrade, c.Image, c.Args})
		}
	}
	return out
}
