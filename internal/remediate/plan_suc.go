package remediate

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// sucImage plans a Plan whose image is missing, lacks an architecture or floats: patch the
// image to the verified reference the operator chose (realign), then — because the Plan's
// hash ignores images, so the controller keeps the old Jobs and node labels — delete the
// Plan's stuck Jobs, clear the labels that stop a rerun and uncordon nodes left behind. One
// chain: each part is useless without the one before.
func (pl *planner) sucImage(inc finding.Incident) []Attempt {
	root := inc.RootCause
	c := pl.snap.Cluster(root.Cluster)
	if c == nil {
		return nil
	}
	p, _ := c.Get(suc.Kind, root.Object.Namespace, root.Object.Name).(*suc.Plan)
	r, risk, ok := rung(root, RungRealign, sigPatchImage)
	if p == nil || !ok {
		return nil
	}
	why := pl.reasonsAbout(inc, func(finding.Finding) bool { return true })
	planObj := metaObject(c.Name, suc.APIVersion, suc.Kind, p)
	var chain []Step
	blocked := ""
	choices := pl.choicesFor(p)
	if len(choices) == 0 {
		stage := "upgrade"
		if strings.Contains(root.Summary, "prepare image") {
			stage = "prepare"
		}
		blocked = fmt.Sprintf("needs the image to patch in, checked against its registry: rerun with --image %s/%s:%s=IMAGE (a tag or digest that exists for %s)",
			p.Namespace, p.Name, stage, platformList(pl.planPlatforms(c, p)))
		chain = append(chain, pl.patchImageStep(c, p, planObj, stage, "", "", risk, r.Action, why))
	}
	for _, ch := range choices {
		verdict, err := pl.verifyImage(c, p, ch)
		if err != nil && blocked == "" {
			blocked = err.Error()
		}
		chain = append(chain, pl.patchImageStep(c, p, planObj, ch.Stage, ch.Ref, verdict, risk, r.Action, why))
	}
	if root.ID != "suc/image-floating" {
		chain = append(chain, pl.sucRepairs(inc, c, p, true)...)
	}
	chain = awaitUpgrade(c, p, chain)
	return []Attempt{{Rung: RungRealign, Risk: maxRisk(chain), Steps: chain, Blocked: blocked}}
}

// sucJob plans a Job that is stale or ran past its deadline: restart the controller (it
// replaces a Job whose pod template differs from the Plan on its next sync), else delete the
// Job so the controller creates it again, with the symptoms' state repairs.
func (pl *planner) sucJob(inc finding.Incident) []Attempt {
	root := inc.RootCause
	c := pl.snap.Cluster(root.Cluster)
	if c == nil {
		return nil
	}
	j, _ := c.Get("Job", root.Object.Namespace, root.Object.Name).(*batchv1.Job)
	if j == nil {
		return nil
	}
	p, _ := c.Get(suc.Kind, j.Namespace, j.Labels[suc.LabelPlan]).(*suc.Plan)
	why := pl.reasonsAbout(inc, func(finding.Finding) bool { return true })
	var out []Attempt
	if r, risk, ok := rung(root, RungRestart, sigRestartSUC); ok {
		if d := sucController(c, j.Namespace); d != nil {
			out = append(out, single(pl.restartStep(c, d, risk, r.Action, why)))
		}
	}
	if chain := awaitUpgrade(c, p, pl.sucRepairs(inc, c, p, false)); len(chain) > 0 {
		out = append(out, Attempt{Rung: RungRepair, Risk: maxRisk(chain), Steps: chain})
	}
	return out
}

// sucState plans a Plan that stopped moving or a node it left behind: restart the controller
// when the Plan is stuck, and the state repairs the findings name (delete the failed Job,
// remove the node's plan label, uncordon).
func (pl *planner) sucState(inc finding.Incident) []Attempt {
	root := inc.RootCause
	c := pl.snap.Cluster(root.Cluster)
	if c == nil {
		return nil
	}
	var p *suc.Plan
	if root.Object.Kind == suc.Kind {
		p, _ = c.Get(suc.Kind, root.Object.Namespace, root.Object.Name).(*suc.Plan)
	} else {
		p = pl.planOfKeys(c, root.Keys)
	}
	why := pl.reasonsAbout(inc, func(finding.Finding) bool { return true })
	var out []Attempt
	if r, risk, ok := rung(root, RungRestart, sigRestartSUC); ok && p != nil {
		if d := sucController(c, p.Namespace); d != nil {
			out = append(out, single(pl.restartStep(c, d, risk, r.Action, why)))
		}
	}
	if chain := awaitUpgrade(c, p, pl.sucRepairs(inc, c, p, false)); len(chain) > 0 {
		out = append(out, Attempt{Rung: RungRepair, Risk: maxRisk(chain), Steps: chain})
	}
	return out
}

// sucRepairs are the state repairs of an incident, in the order the controller needs them:
// delete Jobs (with stuckJobs, every current Job of the Plan that did not complete: after an
// image fix they all run the old image), remove the plan labels that say "done", uncordon
// nodes left cordoned. Each is offered only where the ladder of the finding that names it (or
// of the root cause) has that repair, at that rung's risk.
func (pl *planner) sucRepairs(inc finding.Incident, c *snapshot.Cluster, p *suc.Plan, stuckJobs bool) []Step {
	root := inc.RootCause
	all := append([]finding.Finding{root}, inc.Symptoms...)
	var steps []Step
	seen := map[string]bool{}
	add := func(s Step) {
		if !seen[s.ID] {
			seen[s.ID] = true
			steps = append(steps, s)
		}
	}
	why := func(f finding.Finding) []Reason {
		if f.ID == root.ID && f.Object == root.Object {
			return []Reason{reasonOf(root)}
		}
		return []Reason{reasonOf(f), reasonOf(root)}
	}
	// Jobs.
	if stuckJobs && p != nil {
		if r, risk, ok := rung(root, RungRepair, sigDeleteJob); ok {
			for _, j := range currentJobs(p, c.Jobs) {
				if suc.JobComplete(j) == nil {
					add(pl.deleteJobStep(c, j, risk, r.Action, why(root)))
				}
			}
		}
	}
	for _, f := range all {
		if f.Object.Kind != "Job" || (f.ID != "suc/job-deadline" && f.ID != "suc/job-stale-spec") {
			continue
		}
		j, _ := c.Get("Job", f.Object.Namespace, f.Object.Name).(*batchv1.Job)
		if j == nil || (p != nil && j.Labels[suc.LabelPlan] != p.Name) {
			continue
		}
		if r, risk, ok := rung(f, RungRepair, sigDeleteJob); ok {
			add(pl.deleteJobStep(c, j, risk, r.Action, why(f)))
		}
	}
	// Node labels.
	for _, f := range all {
		if f.ID != "suc/node-label-blocks-rerun" || f.Object.Kind != "Node" {
			continue
		}
		n, _ := c.Get("Node", "", f.Object.Name).(*corev1.Node)
		fp := p
		if fp == nil {
			fp = pl.planOfKeys(c, f.Keys)
		}
		if n == nil || fp == nil {
			continue
		}
		key := suc.LabelPlanName(fp.Name)
		if _, has := n.Labels[key]; !has {
			continue
		}
		if r, risk, ok := rung(f, RungRepair, sigRemoveLabel); ok {
			add(pl.removeLabelStep(c, n, key, risk, r.Action, why(f)))
		}
	}
	// Cordoned nodes.
	for _, f := range all {
		if f.Object.Kind != "Node" || f.ID != "suc/node-left-cordoned" {
			continue
		}
		n, _ := c.Get("Node", "", f.Object.Name).(*corev1.Node)
		if n == nil || !n.Spec.Unschedulable {
			continue
		}
		if r, risk, ok := rung(f, RungRepair, sigUncordon); ok {
			add(pl.uncordonStep(c, n, risk, r.Action, why(f)))
		}
	}
	return steps
}

// awaitUpgrade makes the last step of a SUC chain (patch the image, delete a Job, remove a
// node's plan label, uncordon) wait for the outcome: the Plan done on every node the chain's
// Jobs and labels concern (Step.Upgrades). Those steps only let the controller run the upgrade
// again; the earlier steps of the chain need not wait, the last one waits for them all — an
// uncordon included, since the controller's drain cordons the node again and its completion
// uncordons it (a step after the wait would find the node changed since planning). A chain
// that concerns no node (a floating image pinned: the Plan's hash leaves images out, so
// nothing runs again) waits for nothing more.
func awaitUpgrade(c *snapshot.Cluster, p *suc.Plan, chain []Step) []Step {
	last := -1
	var nodes []string
	for i, s := range chain {
		switch s.Action {
		case PatchPlanImage, DeleteJob, RemoveNodeLabel, Uncordon:
			last = i
		default:
			continue
		}
		if n := stepNode(c, s); n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	if p == nil || last < 0 || len(nodes) == 0 {
		return chain
	}
	sort.Strings(nodes)
	ref := PlanNodesRef{Cluster: c.Name, Namespace: p.Namespace, Plan: p.Name, Nodes: nodes}
	for _, j := range p.JobsOf(c.Jobs) {
		ref.Jobs = append(ref.Jobs, string(j.UID))
	}
	chain[last].AwaitPlanDone(ref)
	return chain
}

// AwaitPlanDone makes the step's verification wait, after its own change, for the Plan done on
// the nodes ref names, and says so in its Verify text. It only adds reads.
func (s *Step) AwaitPlanDone(ref PlanNodesRef) {
	s.Upgrades = &ref
	s.Verify += fmt.Sprintf("; and Plan %s/%s is done on node(s) %s: the node's %s label reads the Plan's status.latestHash, or a new Job of the Plan for it is Complete",
		ref.Namespace, ref.Plan, strings.Join(ref.Nodes, ", "), suc.LabelPlanName(ref.Plan))
}

// stepNode is the node a Plan step concerns: the node of the Job it deletes, the node whose
// label it removes.
func stepNode(c *snapshot.Cluster, s Step) string {
	switch s.Action {
	case DeleteJob:
		if j, ok := c.Get("Job", s.Target.Namespace, s.Target.Name).(*batchv1.Job); ok {
			return j.Labels[suc.LabelNode]
		}
	case RemoveNodeLabel:
		return s.Target.Name
	}
	return ""
}

// currentJobs are the Plan's Jobs for its latest hash (older ones are the controller's to
// clean up), as the checks see them.
func currentJobs(p *suc.Plan, jobs []*batchv1.Job) []*batchv1.Job {
	var out []*batchv1.Job
	for _, j := range p.JobsOf(jobs) {
		h := j.Labels[suc.LabelPlanName(p.Name)]
		if p.Status.LatestHash == "" || h == "" || h == p.Status.LatestHash {
			out = append(out, j)
		}
	}
	return out
}

// planOfKeys finds the Plan a finding's correlation keys name (plan:<cluster>/<ns>/<name>).
func (pl *planner) planOfKeys(c *snapshot.Cluster, keys []string) *suc.Plan {
	prefix := "plan:" + c.Name + "/"
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			if ns, name, ok := strings.Cut(rest, "/"); ok {
				if p, ok := c.Get(suc.Kind, ns, name).(*suc.Plan); ok {
					return p
				}
			}
		}
	}
	return nil
}

func sucController(c *snapshot.Cluster, ns string) *appsv1.Deployment {
	if ctrl := inventory.ControllerFor(c, ns); ctrl != nil && ctrl.Deployment != nil {
		return ctrl.Deployment
	}
	return nil
}

// choicesFor are the --image choices that name this Plan, or name no Plan at all.
func (pl *planner) choicesFor(p *suc.Plan) []ImageChoice {
	var out []ImageChoice
	for _, ch := range pl.opts.Images {
		if ch.Plan != "" && ch.Plan != p.Name || ch.Namespace != "" && ch.Namespace != p.Namespace {
			continue
		}
		out = append(out, ch)
	}
	return out
}

// planPlatforms are the platforms of the nodes the Plan selects (not opted out).
func (pl *planner) planPlatforms(c *snapshot.Cluster, p *suc.Plan) []inventory.Node {
	nodes, _ := p.SelectedNodes(c.Nodes)
	var out []inventory.Node
	for _, n := range nodes {
		if p.StateOf(n) != suc.NodeDisabled {
			out = append(out, inventory.NodeOf(n))
		}
	}
	return out
}

func platformList(nodes []inventory.Node) string {
	set := map[string]bool{}
	for _, n := range nodes {
		set[orDash(n.OS)+"/"+orDash(n.Arch)] = true
	}
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "the Plan's nodes"
	}
	return strings.Join(out, ", ")
}

// verifyImage holds a chosen reference to what its registry said: it must exist, carry a
// tag or digest (SUC tags a bare name with the Plan's version, which would not be the image
// checked), and have a build for every platform of the Plan's nodes.
func (pl *planner) verifyImage(c *snapshot.Cluster, p *suc.Plan, ch ImageChoice) (string, error) {
	var cur *suc.ContainerSpec
	switch ch.Stage {
	case "upgrade":
		cur = p.Spec.Upgrade
	case "prepare":
		cur = p.Spec.Prepare
	}
	if cur == nil {
		return "", fmt.Errorf("Plan %s/%s has no %s container to patch", p.Namespace, p.Name, ch.Stage)
	}
	if cur.Image == ch.Ref {
		return "", fmt.Errorf("%s is already the Plan's %s image", ch.Ref, ch.Stage)
	}
	ref, err := imageref.Parse(ch.Ref)
	if err != nil {
		return "", fmt.Errorf("--image %s: %v", ch.Ref, err)
	}
	if ref.NameOnly() {
		return "", fmt.Errorf("--image %s has no tag or digest: SUC would pull it tagged with the Plan's version (%s), not the image checked; give the full reference",
			ch.Ref, orDash(p.ResolvedVersion()))
	}
	f, ok := pl.opts.ImageFacts[ch.Ref]
	if !ok {
		return "", fmt.Errorf("%s was not checked against its registry, so the Plan is not patched to it", ch.Ref)
	}
	if f.Status != imageref.OK {
		msg := fmt.Sprintf("the registry answered %q for %s", f.Status, ch.Ref)
		if f.Error != "" {
			msg += ": " + f.Error
		}
		return "", fmt.Errorf("%s; the Plan is only patched to an image that exists", msg)
	}
	for _, n := range pl.planPlatforms(c, p) {
		ok, known := f.Supports(n.OS, n.Arch)
		if !known {
			return "", fmt.Errorf("the platforms of %s could not be read, so it is not known to run on node %s (%s/%s)", ch.Ref, n.Name, orDash(n.OS), orDash(n.Arch))
		}
		if !ok {
			return "", fmt.Errorf("%s has no build for %s/%s (node %s); it offers %s", ch.Ref, n.OS, n.Arch, n.Name, f.PlatformList())
		}
	}
	v := "exists, digest " + f.Digest
	if plats := f.PlatformList(); plats != "" {
		v += ", platforms " + plats
	}
	return v, nil
}

func (pl *planner) patchImageStep(c *snapshot.Cluster, p *suc.Plan, obj Object, stage, to, verdict string, risk Risk, rationale string, why []Reason) Step {
	from := ""
	switch stage {
	case "upgrade":
		if p.Spec.Upgrade != nil {
			from = p.Spec.Upgrade.Image
		}
	case "prepare":
		if p.Spec.Prepare != nil {
			from = p.Spec.Prepare.Image
		}
	}
	shown, image := to, shellcmd.Value(shellcmd.Image, "image", to)
	if shown == "" {
		shown, image = "<verified-image>", shellcmd.Placeholder("verified-image")
	}
	s := Step{
		ID:           stepID(PatchPlanImage, c.Name, p.Namespace, p.Name, string(p.UID), stage, to),
		Action:       PatchPlanImage,
		Rung:         RungRealign,
		Risk:         risk,
		Cluster:      c.Name,
		Target:       obj,
		Touches:      []Object{obj},
		Change:       fmt.Sprintf("set spec.%s.image of Plan %s/%s from %s to %s", stage, p.Namespace, p.Name, orDash(from), shown),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("Plan %s/%s unchanged since planning (resourceVersion %s)", p.Namespace, p.Name, orDash(obj.ResourceVersion)),
		Verify:       fmt.Sprintf("the Plan's spec.%s.image reads %s", stage, shown),
		Commands: []string{shellcmd.Sprintf(`%s -n %s patch plans.upgrade.cattle.io %s --type merge -p '{"spec":{"%s":{"image":"%s"}}}'`,
			kubectl(c), namespaceArg(p.Namespace), nameArg(p.Name), shellcmd.Value(shellcmd.DNSLabel, "stage", stage), image)},
		Notes: []string{"The Plan's hash leaves images out: nodes labelled done for it are not run again, hence the steps that follow it (system-upgrade-controller v0.20.1 replaces an unfinished Job itself when the image changes; the Job step then finds it gone and writes nothing)."},
		Image: &ImageChange{Stage: stage, From: from, To: to, Verified: verdict},
	}
	if verdict != "" {
		s.Change += " (registry: " + verdict + ")"
	}
	return s
}

func (pl *planner) deleteJobStep(c *snapshot.Cluster, j *batchv1.Job, risk Risk, rationale string, why []Reason) Step {
	obj := metaObject(c.Name, "batch/v1", "Job", j)
	state := "running"
	if fc := suc.JobFailed(j); fc != nil {
		state = "failed: " + orDash(fc.Reason)
	}
	return Step{
		ID:      stepID(DeleteJob, c.Name, j.Namespace, j.Name, string(j.UID)),
		Action:  DeleteJob,
		Rung:    RungRepair,
		Risk:    risk,
		Cluster: c.Name,
		Target:  obj,
		Touches: []Object{obj},
		Change: fmt.Sprintf("delete Job %s/%s (node %s, %s) and, in the background, its pods: the controller creates the Job again from the Plan as it is now",
			j.Namespace, j.Name, orDash(j.Labels[suc.LabelNode]), state),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("Job %s/%s unchanged since planning (uid %s, resourceVersion %s)", j.Namespace, j.Name, orDash(obj.UID), orDash(obj.ResourceVersion)),
		Verify:       "the Job with that UID is gone (the controller may already have created its successor)",
		Commands:     []string{shellcmd.Sprintf("%s -n %s delete job %s", kubectl(c), namespaceArg(j.Namespace), nameArg(j.Name))},
	}
}

func (pl *planner) removeLabelStep(c *snapshot.Cluster, n *corev1.Node, key string, risk Risk, rationale string, why []Reason) Step {
	obj := metaObject(c.Name, "v1", "Node", n)
	val := n.Labels[key]
	return Step{
		ID:           stepID(RemoveNodeLabel, c.Name, n.Name, string(n.UID), key, val),
		Action:       RemoveNodeLabel,
		Rung:         RungRepair,
		Risk:         risk,
		Cluster:      c.Name,
		Target:       obj,
		Touches:      []Object{obj},
		Change:       fmt.Sprintf("remove label %s=%s from node %s: the controller no longer counts the node as done and creates its Job again", key, val, n.Name),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("node %s unchanged since planning (resourceVersion %s)", n.Name, orDash(obj.ResourceVersion)),
		Verify:       fmt.Sprintf("node %s no longer has the label %s", n.Name, key),
		Commands:     []string{shellcmd.Sprintf("%s label node %s %s-", kubectl(c), nameArg(n.Name), shellcmd.Value(shellcmd.LabelKey, "label", key))},
		Label:        key,
		LabelValue:   val,
	}
}

func (pl *planner) uncordonStep(c *snapshot.Cluster, n *corev1.Node, risk Risk, rationale string, why []Reason) Step {
	obj := metaObject(c.Name, "v1", "Node", n)
	return Step{
		ID:           stepID(Uncordon, c.Name, n.Name, string(n.UID)),
		Action:       Uncordon,
		Rung:         RungRepair,
		Risk:         risk,
		Cluster:      c.Name,
		Target:       obj,
		Touches:      []Object{obj},
		Change:       fmt.Sprintf("uncordon node %s (spec.unschedulable: true → false)", n.Name),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("node %s unchanged since planning (resourceVersion %s)", n.Name, orDash(obj.ResourceVersion)),
		Verify:       fmt.Sprintf("node %s is schedulable", n.Name),
		Commands:     []string{shellcmd.Sprintf("%s uncordon %s", kubectl(c), nameArg(n.Name))},
	}
}
