package check

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// sucPlanProgress reports Plans that stopped moving: invalid or unresolvable, a Job that
// failed or has been running far longer than any upgrade takes, or nothing happening while
// nodes are left. SUC records a failed Job in the Plan's Complete condition (reason JobFailed,
// "Job <ns>/<name> failed on Node <node>: <reason>: <message>", handle_batch.go) and keeps
// it until its TTL; Validated and LatestResolved go False with reason Error for a bad spec or
// a channel that does not resolve (handle_upgrade.go).
var sucPlanProgress = Check{
	Name:  "suc/plan-progress",
	Emits: []string{"suc/plan-stuck", "suc/job-deadline"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("suc.planStuckAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Plans {
				jobs := currentJobs(p, c.Jobs)
				if f, ok := planStuck(ctx, c, p, jobs, after); ok {
					out = append(out, f)
				}
				out = append(out, jobDeadlines(ctx, c, p, jobs)...)
			}
		}
		return out, nil
	},
}

func planStuck(ctx *Context, c *snapshot.Cluster, p *suc.Plan, jobs []*batchv1.Job, after time.Duration) (finding.Finding, bool) {
	src := sourceOf(c, planRef(p))
	for _, typ := range []string{suc.CondValidated, suc.CondLatestResolved} {
		cond := p.Condition(typ)
		if cond == nil || cond.Status != corev1.ConditionFalse {
			continue
		}
		since := suc.ConditionTime(cond)
		if since.IsZero() || ctx.Age(since) < after {
			continue
		}
		what := "its spec is invalid"
		if typ == suc.CondLatestResolved {
			what = "its version cannot be resolved"
		}
		f := ctx.New("suc/plan-stuck", c, planRef(p), fmt.Sprintf("Plan %s/%s has not started for %s: %s", p.Namespace, p.Name, human(ctx.Age(since)), what))
		f.Evidence = []finding.Evidence{ev(src, "condition %s=%s reason=%s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)}
		f.Since = timePtr(since)
		f.Keys = planKeys(c, p, jobs)
		return f, true
	}
	if p.IsTrue(suc.CondComplete) {
		return finding.Finding{}, false
	}
	selected, err := p.SelectedNodes(c.Nodes)
	if err != nil {
		return finding.Finding{}, false
	}
	var pending []*corev1.Node
	for _, n := range selected {
		if p.StateOf(n) == suc.NodePending {
			pending = append(pending, n)
		}
	}
	if len(pending) == 0 {
		return finding.Finding{}, false
	}
	var why []finding.Evidence
	var since time.Time
	// Nodes in status.applying, measured from their first attempt at the current hash: the
	// Job in the snapshot may be the latest of several generations (suc_applying.go).
	for _, n := range pending {
		if !slices.Contains(p.Status.Applying, suc.Hostname(n)) && !slices.Contains(p.Status.Applying, n.Name) {
			continue
		}
		if s, ok := applyingSince(c, p, n); ok && ctx.Age(s.at) >= after {
			since = earliest(since, s.at)
			why = append(why, applyingEvidence(ctx, n.Name, s))
		}
	}
	// A failed Job: the Plan stops there until the Job is gone and the node retried.
	for _, j := range jobs {
		if fc := suc.JobFailed(j); fc != nil {
			since = earliest(since, fc.LastTransitionTime.Time)
			why = append(why, ev(sourceOf(c, jobRef(j)), "%s", suc.FailureMessage(j)))
		}
	}
	// A Job that runs far longer than an upgrade takes: pods that cannot pull, a drain that
	// cannot evict, a node that never comes back.
	for _, j := range jobs {
		if !suc.JobActive(j) {
			continue
		}
		start := j.CreationTimestamp.Time
		if j.Status.StartTime != nil {
			start = j.Status.StartTime.Time
		}
		if !start.IsZero() && ctx.Age(start) >= after {
			since = earliest(since, start)
			why = append(why, ev(sourceOf(c, jobRef(j)), "Job %s on node %s has been running for %s (active=%d, failed=%d)", j.Name, orDash(j.Labels[suc.LabelNode]), human(ctx.Age(start)), j.Status.Active, j.Status.Failed))
		}
	}
	complete := p.Condition(suc.CondComplete)
	if len(why) == 0 {
		// Nothing failing and nothing running: is anything happening at all?
		if p.Spec.Window != nil {
			return finding.Finding{}, false // Jobs are only created inside the Plan's window
		}
		var last time.Time
		for _, j := range p.JobsOf(c.Jobs) {
			last = latest(last, j.CreationTimestamp.Time)
			if cc := suc.JobComplete(j); cc != nil {
				last = latest(last, cc.LastTransitionTime.Time)
			}
			if suc.JobActive(j) {
				return finding.Finding{}, false // running, and not for long
			}
		}
		last = latest(last, suc.ConditionUpdated(complete))
		if last.IsZero() && p.Status.LatestHash == "" {
			last = p.CreationTimestamp.Time // never processed: no status at all
		}
		if last.IsZero() || ctx.Age(last) < after {
			return finding.Finding{}, false
		}
		since = last
		msg := "no Job was created or finished since"
		if p.Status.LatestHash == "" {
			msg = "the controller never wrote its status (is system-upgrade-controller running?)"
		}
		why = append(why, ev(src, "%s %s; status.applying=%v", msg, last.UTC().Format(time.RFC3339), p.Status.Applying))
	}
	if ctx.Age(since) < after {
		return finding.Finding{}, false
	}
	var names []string
	for _, n := range pending {
		names = append(names, n.Name)
	}
	f := ctx.New("suc/plan-stuck", c, planRef(p), fmt.Sprintf("Plan %s/%s has made no progress for %s: %d of %d selected nodes not upgraded", p.Namespace, p.Name, human(ctx.Age(since)), len(pending), len(selected)))
	if complete != nil {
		f.Evidence = append(f.Evidence, ev(src, "condition Complete=%s reason=%s: %s", complete.Status, orDash(complete.Reason), firstLine(complete.Message)))
	}
	f.Evidence = append(f.Evidence, why...)
	if len(f.Evidence) > 5 {
		f.Evidence = f.Evidence[:5]
	}
	f.Evidence = append(f.Evidence, ev(src, "nodes left: %s", nodeList(names, 6)))
	f.Since = timePtr(since)
	f.Keys = planKeys(c, p, jobs)
	for _, a := range p.Status.Applying {
		f.Keys = append(f.Keys, NodeKey(c.Name, a))
	}
	f.Signature = "suc-plan-stuck|" + p.Name
	return f, true
}

func nodeList(names []string, n int) string {
	if len(names) > n {
		return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
	}
	return strings.Join(names, ", ")
}

// jobDeadlines reports the Plan's Jobs that Kubernetes failed for running past
// activeDeadlineSeconds (Job condition Failed, reason DeadlineExceeded: "Job was active
// longer than specified deadline", kubernetes pkg/controller/job).
func jobDeadlines(ctx *Context, c *snapshot.Cluster, p *suc.Plan, jobs []*batchv1.Job) []finding.Finding {
	var out []finding.Finding
	for _, j := range jobs {
		fc := suc.JobFailed(j)
		if fc == nil {
			continue
		}
		m, ok := classify.Classify(suc.FailureMessage(j), classify.Status)
		if fc.Reason != string(batchv1.JobReasonDeadlineExceeded) && (!ok || m.ID != "suc/job-deadline") {
			continue
		}
		deadline := "unset"
		if j.Spec.ActiveDeadlineSeconds != nil {
			deadline = fmt.Sprintf("%ds", *j.Spec.ActiveDeadlineSeconds)
		}
		node := j.Labels[suc.LabelNode]
		f := ctx.New("suc/job-deadline", c, jobRef(j), fmt.Sprintf("upgrade Job %s/%s of Plan %s on node %s ran past its deadline (%s) and failed", j.Namespace, j.Name, p.Name, orDash(node), deadline))
		f.Evidence = []finding.Evidence{ev(sourceOf(c, jobRef(j)), "%s", suc.FailureMessage(j))}
		if d := p.Spec.Drain; d != nil && d.Timeout != nil {
			f.Evidence = append(f.Evidence, ev(sourceOf(c, planRef(p)), "spec.drain.timeout=%s (activeDeadlineSeconds=%s)", d.Timeout.D, deadline))
		}
		f.Since = timePtr(fc.LastTransitionTime.Time)
		f.Keys = []string{PlanKey(c.Name, p.Namespace, p.Name), WorkloadKey(c.Name, j.Namespace, j.Name), NodeKey(c.Name, node)}
		out = append(out, f)
	}
	return out
}

// sucJobs reports Jobs that no longer match their Plan and the identities SUC runs as being
// forbidden. A Job keeps the pod template it was created with; the Plan's hash (in the Job's
// name and the node label) covers the version, service account and secrets but not the
// images, so fixing a Plan's image leaves the old Job — and its old image — in place until the
// controller replaces it (plan.go DigestStatus).
var sucJobs = Check{
	Name:  "suc/jobs",
	Emits: []string{"suc/job-stale-spec", "suc/rbac"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("suc.planStuckAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Plans {
				out = append(out, staleJobs(ctx, c, p, after)...)
			}
			out = append(out, sucForbidden(ctx, c)...)
		}
		return out, nil
	},
}

func staleJobs(ctx *Context, c *snapshot.Cluster, p *suc.Plan, after time.Duration) []finding.Finding {
	var out []finding.Finding
	ctrl := inventory.ControllerFor(c, p.Namespace)
	kubectl, _ := ctrl.KubectlImage()
	want := map[suc.Stage]string{}
	for _, si := range p.Images(kubectl) {
		want[si.Stage] = si.Image
	}
	var changed time.Time
	for _, cond := range p.Status.Conditions {
		changed = latest(changed, suc.ConditionUpdated(&cond))
	}
	for _, j := range currentJobs(p, c.Jobs) {
		if !suc.JobActive(j) && suc.JobFailed(j) == nil {
			continue // completed: it did its work
		}
		node := j.Labels[suc.LabelNode]
		var diffs []string
		for _, ctr := range suc.JobContainers(j) {
			w, ok := want[ctr.Stage]
			switch {
			case !ok && ctr.Stage != suc.StageDrain && ctr.Stage != suc.StageCordon:
				diffs = append(diffs, fmt.Sprintf("%s container %s is no longer in the Plan", ctr.Stage, ctr.Image))
			case (ctr.Stage == suc.StageDrain || ctr.Stage == suc.StageCordon) && ctrl == nil:
				// The controller's setting was not read: its kubectl image cannot be compared.
			case ok && !sameImage(ctr.Image, w):
				diffs = append(diffs, fmt.Sprintf("%s image %s, the Plan now says %s", ctr.Stage, ctr.Image, w))
			}
			if ctr.Stage == suc.StageDrain && p.Spec.Drain != nil {
				if wa := p.DrainArgs(node); !slices.Equal(ctr.Args, wa) {
					diffs = append(diffs, fmt.Sprintf("drain args %q, the Plan now gives %q", strings.Join(ctr.Args, " "), strings.Join(wa, " ")))
				}
			}
		}
		if len(diffs) == 0 {
			continue
		}
		since := changed
		if since.IsZero() {
			since = j.CreationTimestamp.Time
		}
		if since.IsZero() || ctx.Age(since) < after {
			continue
		}
		f := ctx.New("suc/job-stale-spec", c, jobRef(j), fmt.Sprintf("Job %s/%s still runs an older spec of Plan %s: %s", j.Namespace, j.Name, p.Name, diffs[0]))
		for _, d := range diffs {
			f.Evidence = append(f.Evidence, ev(sourceOf(c, jobRef(j)), "%s", d))
		}
		f.Since = timePtr(since)
		f.Keys = []string{PlanKey(c.Name, p.Namespace, p.Name), WorkloadKey(c.Name, j.Namespace, j.Name), NodeKey(c.Name, node)}
		out = append(out, f)
	}
	return out
}

func sameImage(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := imageref.Parse(a)
	rb, err2 := imageref.Parse(b)
	return err1 == nil && err2 == nil && ra.String() == rb.String()
}

// saLookupRE is the service account admission plugin's error when a pod names a service
// account that does not exist (kubernetes plugin/pkg/admission/serviceaccount/admission.go:
// "error looking up service account %s/%s: %w"), carried by the Job controller's
// FailedCreate event.
var saLookupRE = lazyre.New(`error looking up service account [^:]+: serviceaccount "[^"]+" not found`)

// jobRefusals are the Job's FailedCreate events while it still has no pod: once it got one
// (a pod of it is collected, or it completed), those events, kept for an hour, tell a refusal
// that is over.
func jobRefusals(c *snapshot.Cluster, j *batchv1.Job) []*corev1.Event {
	if jobCompleted(j) || j.Status.Succeeded > 0 || len(jobPods(c, j)) > 0 {
		return nil
	}
	return eventsOf(c, "batch", "Job", j.Namespace, j.Name, "FailedCreate")
}

func jobCompleted(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// sucForbidden finds the controller and the Plans' Jobs being refused by RBAC: forbidden
// lines in the controller's and the drain containers' logs and events, and Jobs that cannot
// create pods because the Plan's service account is missing.
func sucForbidden(ctx *Context, c *snapshot.Cluster) []finding.Finding {
	var out []finding.Finding
	plans := map[string]*suc.Plan{}
	for _, p := range c.Plans {
		plans[p.Namespace+"/"+p.Name] = p
	}
	// The Plans' Jobs: FailedCreate events and their pods' logs.
	for _, j := range c.Jobs {
		planName := j.Labels[suc.LabelPlan]
		if planName == "" {
			continue
		}
		var evidence []finding.Evidence
		var since time.Time
		for _, e := range jobRefusals(c, j) {
			m, ok := classify.Classify(e.Message, classify.Event)
			if saLookupRE().MatchString(e.Message) || ok && (m.ID == "suc/rbac" || m.ID == "agent/rbac-forbidden") {
				evidence = append(evidence, finding.Evidence{Source: eventSource(e), Text: firstLine(e.Message)})
				since = earliest(since, snapshot.EventFirstTime(e))
			}
		}
		for _, pod := range jobPods(c, j) {
			for _, l := range c.LogsFor(pod.Namespace, pod.Name) {
				if m := forbiddenLine(l); m != "" {
					evidence = append(evidence, ev(l.CurrentFile+l.PreviousFile, "%s", firstLine(m)))
				}
			}
		}
		if len(evidence) == 0 {
			continue
		}
		keys := []string{WorkloadKey(c.Name, j.Namespace, j.Name), NodeKey(c.Name, j.Labels[suc.LabelNode])}
		sa := "the Plan's service account"
		if p := plans[j.Namespace+"/"+planName]; p != nil {
			keys = append(keys, PlanKey(c.Name, p.Namespace, p.Name))
			sa = fmt.Sprintf("service account %s/%s", p.Namespace, orDash(p.Spec.ServiceAccountName))
		} else {
			keys = append(keys, PlanKey(c.Name, j.Namespace, planName))
		}
		f := ctx.New("suc/rbac", c, jobRef(j), fmt.Sprintf("upgrade Job %s/%s of Plan %s is refused: %s lacks the permissions (or does not exist)", j.Namespace, j.Name, planName, sa))
		f.Evidence = evidence
		if len(f.Evidence) > 4 {
			f.Evidence = f.Evidence[:4]
		}
		f.Since = timePtr(since)
		f.Keys = keys
		out = append(out, f)
	}
	// The controller itself.
	for _, ctrl := range inventory.Controllers(c) {
		d := ctrl.Deployment
		var evidence []finding.Evidence
		for _, pod := range c.Pods {
			if pod.Namespace != d.Namespace {
				continue
			}
			if _, owner := podOwner(c, pod); owner != d.Name {
				continue
			}
			for _, l := range c.LogsFor(pod.Namespace, pod.Name) {
				if m := forbiddenLine(l); m != "" {
					evidence = append(evidence, ev(l.CurrentFile+l.PreviousFile, "%s", firstLine(m)))
				}
			}
		}
		if len(evidence) == 0 {
			continue
		}
		f := ctx.New("suc/rbac", c, deploymentRef(d), fmt.Sprintf("system-upgrade-controller %s/%s is forbidden to do its work: Plans are not processed", d.Namespace, d.Name))
		f.Evidence = evidence
		keys := []string{WorkloadKey(c.Name, d.Namespace, d.Name)}
		for _, p := range c.Plans {
			keys = append(keys, PlanKey(c.Name, p.Namespace, p.Name))
		}
		f.Keys = keys
		out = append(out, f)
	}
	return out
}

// forbiddenLine returns the newest log line classified as a SUC (or generic) RBAC denial.
func forbiddenLine(l *snapshot.Log) string {
	for _, lines := range [][]string{l.Current, l.Previous} {
		for i := len(lines) - 1; i >= 0; i-- {
			if m, ok := classify.Classify(lines[i], classify.Log); ok && (m.ID == "suc/rbac" || m.ID == "agent/rbac-forbidden") {
				return lines[i]
			}
		}
	}
	return ""
}

// sucNodes reports nodes a Plan left behind: cordoned with no upgrade Job running on them
// (SUC uncordons only when the node's Job completes; recovery after a failure is left to the
// operator, rancher/system-upgrade-controller#71), and nodes whose plan label says "done"
// although they are not (the label stops the controller from ever selecting them again).
var sucNodes = Check{
	Name:  "suc/nodes",
	Emits: []string{"suc/node-left-cordoned", "suc/node-label-blocks-rerun"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("suc.nodeCordonedAfter")
		for _, c := range ctx.Snap.Clusters {
			out = append(out, cordonedNodes(ctx, c, after)...)
			for _, p := range c.Plans {
				out = append(out, blockingLabels(ctx, c, p)...)
			}
		}
		return out, nil
	},
}

func cordonedNodes(ctx *Context, c *snapshot.Cluster, after time.Duration) []finding.Finding {
	var out []finding.Finding
	for _, n := range c.Nodes {
		if !n.Spec.Unschedulable {
			continue
		}
		var jobs []*batchv1.Job
		active := false
		for _, j := range c.Jobs {
			if j.Labels[suc.LabelPlan] != "" && j.Labels[suc.LabelNode] == n.Name {
				jobs = append(jobs, j)
				active = active || suc.JobActive(j)
			}
		}
		var applying []*suc.Plan
		for _, p := range c.Plans {
			if slices.Contains(p.Status.Applying, suc.Hostname(n)) || slices.Contains(p.Status.Applying, n.Name) {
				applying = append(applying, p)
			}
		}
		deleted := deletedPlanLabels(c, n)
		if active || (len(jobs) == 0 && len(applying) == 0 && len(deleted) == 0) {
			continue // upgrading now, or cordoned by someone else
		}
		since := cordonedSince(c, n)
		var evidence []finding.Evidence
		keys := []string{NodeKey(c.Name, n.Name)}
		for _, j := range jobs {
			switch {
			case suc.JobFailed(j) != nil:
				fc := suc.JobFailed(j)
				if since.IsZero() {
					since = earliest(since, fc.LastTransitionTime.Time)
				}
				evidence = append(evidence, ev(sourceOf(c, jobRef(j)), "%s", suc.FailureMessage(j)))
			case suc.JobComplete(j) != nil:
				evidence = append(evidence, ev(sourceOf(c, jobRef(j)), "Job %s completed, yet the node is still cordoned", j.Name))
			}
			keys = append(keys, WorkloadKey(c.Name, j.Namespace, j.Name), PlanKey(c.Name, j.Namespace, j.Labels[suc.LabelPlan]))
		}
		for _, p := range applying {
			evidence = append(evidence, ev(sourceOf(c, planRef(p)), "Plan %s/%s lists the node in status.applying but no Job is running for it", p.Namespace, p.Name))
			keys = append(keys, PlanKey(c.Name, p.Namespace, p.Name))
		}
		for _, name := range deleted {
			evidence = append(evidence, ev(sourceOf(c, nodeRef(n.Name)), "label %s=%s names Plan %s, which no longer exists", suc.LabelPlanName(name), n.Labels[suc.LabelPlanName(name)], name))
		}
		if since.IsZero() || ctx.Age(since) < after {
			continue
		}
		summary := fmt.Sprintf("node %s has been cordoned for %s with no upgrade Job running on it", n.Name, human(ctx.Age(since)))
		if len(deleted) > 0 && len(jobs) == 0 && len(applying) == 0 {
			summary = fmt.Sprintf("node %s has been cordoned for %s by an upgrade of Plan %s, which was deleted: nothing will uncordon it", n.Name, human(ctx.Age(since)), strings.Join(deleted, ", "))
		}
		f := ctx.New("suc/node-left-cordoned", c, nodeRef(n.Name), summary)
		f.Evidence = append([]finding.Evidence{ev(sourceOf(c, nodeRef(n.Name)), "spec.unschedulable=true since %s", since.UTC().Format(time.RFC3339))}, evidence...)
		if len(f.Evidence) > 5 {
			f.Evidence = f.Evidence[:5]
		}
		f.Since = timePtr(since)
		f.Keys = keys
		out = append(out, f)
	}
	return out
}

// cordonedSince is when the node was cordoned: the unschedulable taint's timeAdded, else the
// first NodeNotSchedulable event the kubelet recorded for it.
func cordonedSince(c *snapshot.Cluster, n *corev1.Node) time.Time {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnschedulable && t.TimeAdded != nil {
			return t.TimeAdded.Time
		}
	}
	var since time.Time
	for _, e := range eventsOf(c, "", "Node", "", n.Name, "NodeNotSchedulable") {
		since = earliest(since, snapshot.EventFirstTime(e))
	}
	return since
}

// deletedPlanLabels are the Plans a node's plan.upgrade.cattle.io/<plan> labels name that the
// cluster no longer has. SUC cordons before upgrading and uncordons only when the Job
// completes; a Plan deleted in between leaves the node cordoned for good
// (rancher/system-upgrade-controller#71). Only judged when Plans were read at all.
func deletedPlanLabels(c *snapshot.Cluster, n *corev1.Node) []string {
	if len(c.Plans) == 0 && !c.HasCRD("plans.upgrade.cattle.io") {
		return nil
	}
	exists := map[string]bool{}
	for _, p := range c.Plans {
		exists[p.Name] = true
	}
	var out []string
	for k := range n.Labels {
		if name, ok := strings.CutPrefix(k, suc.LabelPlanPrefix); ok && name != "" && !exists[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// blockingLabels finds selected nodes the controller will not retry although they did not get
// the Plan: labelled with the current hash while their Job failed, or — for Kubernetes
// upgrade Plans — labelled done (or disabled) while their kubelet still runs another version.
func blockingLabels(ctx *Context, c *snapshot.Cluster, p *suc.Plan) []finding.Finding {
	var out []finding.Finding
	nodes, err := p.SelectedNodes(c.Nodes)
	if err != nil {
		return nil
	}
	label := suc.LabelPlanName(p.Name)
	kube := p.UpgradesKubernetes() && suc.IsKubernetesVersion(p.Status.LatestVersion)
	doneElsewhere := 0
	for _, n := range nodes {
		if p.StateOf(n) == suc.NodeDone {
			doneElsewhere++
		}
	}
	for _, n := range nodes {
		state := p.StateOf(n)
		if state == suc.NodePending {
			continue
		}
		var evidence []finding.Evidence
		var since time.Time
		keys := []string{NodeKey(c.Name, n.Name), PlanKey(c.Name, p.Namespace, p.Name)}
		for _, j := range p.JobsOf(c.Jobs) {
			if j.Labels[suc.LabelNode] != n.Name {
				continue
			}
			if fc := suc.JobFailed(j); fc != nil && j.Labels[label] == p.Status.LatestHash && state == suc.NodeDone {
				evidence = append(evidence, ev(sourceOf(c, jobRef(j)), "%s", suc.FailureMessage(j)))
				since = earliest(since, fc.LastTransitionTime.Time)
				keys = append(keys, WorkloadKey(c.Name, j.Namespace, j.Name))
			}
		}
		kubelet := n.Status.NodeInfo.KubeletVersion
		behind := kube && kubelet != "" && suc.MungeVersion(kubelet) != p.Status.LatestVersion
		if behind && (state == suc.NodeDone || doneElsewhere > 0) {
			evidence = append(evidence, ev(sourceOf(c, nodeRef(n.Name)), "kubelet %s, the Plan's version is %s", kubelet, p.Status.LatestVersion))
		}
		if len(evidence) == 0 || state == suc.NodeDisabled && !behind {
			continue
		}
		var summary string
		if state == suc.NodeDone {
			summary = fmt.Sprintf("node %s is labelled %s=%s (done) but did not get Plan %s/%s: the controller will not retry it", n.Name, label, p.Status.LatestHash, p.Namespace, p.Name)
		} else {
			summary = fmt.Sprintf("node %s is labelled %s=disabled and stays on kubelet %s while Plan %s/%s moved %d other nodes to %s", n.Name, label, kubelet, p.Namespace, p.Name, doneElsewhere, p.Status.LatestVersion)
		}
		f := ctx.New("suc/node-label-blocks-rerun", c, nodeRef(n.Name), summary)
		f.Evidence = append([]finding.Evidence{ev(sourceOf(c, nodeRef(n.Name)), "label %s=%s; Plan status.latestHash=%s", label, n.Labels[label], p.Status.LatestHash)}, evidence...)
		f.Since = timePtr(since)
		f.Keys = keys
		out = append(out, f)
	}
	return out
}
