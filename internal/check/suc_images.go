package check

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// sucPlanImages judges the images a Plan's Jobs run in their prepare and upgrade containers:
// missing from the registry (the field reports' garbage-collected tag: every Job sits in
// ImagePullBackOff "manifest unknown", drained nodes stay cordoned, later batches never
// start), without a build for a selected node's architecture ("exec format error" on those
// nodes only), or floating on a moving tag. An untagged Plan image is pulled with the Plan's
// resolved version as its tag, "+" → "-" (SUC container.go WithLatestTag, plan.go
// MungeVersion). With registry facts the verdict comes from the registry; without them, from
// the Jobs' pods (pull errors, exec format errors).
var sucPlanImages = Check{
	Name:  "suc/plan-images",
	Emits: []string{"suc/image-missing", "suc/image-arch", "suc/image-floating"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Plans {
				out = append(out, judgePlanImages(ctx, c, p)...)
			}
		}
		return out, nil
	},
}

// stageUse is one image of a Plan with the stages that run it.
type stageUse struct {
	image  string
	stages []string
	spec   string
}

func planStageImages(ctx *Context, c *snapshot.Cluster, p *suc.Plan) []stageUse {
	kubectl, _ := inventory.ControllerFor(c, p.Namespace).KubectlImage()
	var out []stageUse
	idx := map[string]int{}
	for _, si := range p.ImagesFor(kubectl, p.VersionFor(ctx.TargetVersion)) {
		if si.Stage == suc.StageDrain || si.Stage == suc.StageCordon {
			continue // the controller's setting: suc/controller-image
		}
		if i, ok := idx[si.Image]; ok {
			out[i].stages = append(out[i].stages, string(si.Stage))
			continue
		}
		idx[si.Image] = len(out)
		out = append(out, stageUse{image: si.Image, stages: []string{string(si.Stage)}, spec: si.Spec})
	}
	return out
}

func judgePlanImages(ctx *Context, c *snapshot.Cluster, p *suc.Plan) []finding.Finding {
	var out []finding.Finding
	jobs := currentJobs(p, c.Jobs)
	nodes := selectedNodes(c, p)
	src := sourceOf(c, planRef(p))
	for _, u := range planStageImages(ctx, c, p) {
		stages := strings.Join(u.stages, " and ")
		keys := append(planKeys(c, p, jobs), ImageKey(c.Name, u.image))
		spec := fmt.Sprintf("spec.%s.image=%q", u.stages[0], u.spec)
		if u.spec != u.image {
			spec += fmt.Sprintf(" has no tag: SUC pulls %q (status.latestVersion %q, \"+\" -> \"-\")", u.image, p.Status.LatestVersion)
		}
		facts, probed := ctx.Images[u.image]
		pulls := jobPullFailures(c, jobs, u.stages, u.image)

		// Missing: the registry says so, or the Jobs' pods cannot find it.
		missing := probed && (facts.Status == imageref.Missing || facts.Status == imageref.Invalid)
		var notFound []pullFailure
		for _, pf := range pulls {
			if pf.id == "image/pull-not-found" {
				notFound = append(notFound, pf)
			}
		}
		if missing || (!facts.Known() && len(notFound) > 0) {
			why := "does not exist in the registry"
			if facts.Status == imageref.Invalid {
				why = "is not a valid image reference"
			}
			f := ctx.New("suc/image-missing", c, planRef(p), fmt.Sprintf("Plan %s/%s: %s image %s %s", p.Namespace, p.Name, stages, u.image, why))
			f.Evidence = append(f.Evidence, ev(src, "%s", spec))
			if probed {
				f.Evidence = append(f.Evidence, registryEvidence(facts))
			}
			var since []pullFailure
			for i, pf := range notFound {
				if i < 2 {
					f.Evidence = append(f.Evidence, finding.Evidence{Source: pf.source, Text: firstLine(pf.text)})
				}
				since = append(since, pf)
			}
			f.Since = timePtr(earliestPull(since))
			f.Keys = keys
			f.Signature = "suc-image-missing|" + u.image
			out = append(out, f)
			out = append(out, floatingPlanImage(ctx, c, p, u, facts, probed)...)
			continue // an image that is not there has no architectures to judge
		}

		// Architecture: the registry's platforms against the selected nodes, else exec format
		// errors in the Jobs' containers.
		var lacking []inventory.Node
		if probed {
			for _, n := range nodes {
				if ok, known := facts.Supports(n.OS, n.Arch); known && !ok {
					lacking = append(lacking, n)
				}
			}
		}
		execErrs := jobExecFormatErrors(c, jobs, u.stages)
		if len(lacking) > 0 || (!probed || len(facts.Platforms) == 0) && len(execErrs) > 0 {
			var plats []string
			for _, n := range lacking {
				plats = appendUnique(plats, nodePlatform(n))
			}
			what := fmt.Sprintf("has no build for %s", strings.Join(plats, ", "))
			if len(lacking) == 0 {
				what = "fails with \"exec format error\": it is built for another CPU architecture"
			}
			f := ctx.New("suc/image-arch", c, planRef(p), fmt.Sprintf("Plan %s/%s: %s image %s %s", p.Namespace, p.Name, stages, u.image, what))
			if len(lacking) > 0 {
				f.Summary += fmt.Sprintf(" (nodes %s)", nodeNames(lacking, 5))
			}
			f.Evidence = append(f.Evidence, ev(src, "%s", spec))
			if probed {
				f.Evidence = append(f.Evidence, registryEvidence(facts))
			}
			for _, n := range lacking {
				if len(f.Evidence) >= 5 {
					break
				}
				f.Evidence = append(f.Evidence, ev(sourceOf(c, nodeRef(n.Name)), "node %s is %s", n.Name, nodePlatform(n)))
			}
			for i, e := range execErrs {
				if i < 2 {
					f.Evidence = append(f.Evidence, e)
				}
			}
			for _, n := range lacking {
				f.Keys = append(f.Keys, NodeKey(c.Name, n.Name))
			}
			f.Keys = append(f.Keys, keys...)
			f.Signature = "suc-image-arch|" + u.image
			out = append(out, f)
		}

		out = append(out, floatingPlanImage(ctx, c, p, u, facts, probed)...)
	}
	return out
}

// floatingPlanImage reports a Plan image on a moving tag. It is reported whether or not the
// image is also missing: a moving tag is often why it vanished (retagged, then the old
// manifest garbage-collected), and pinning it is part of the fix. It shares the Plan's key, so
// a missing image's incident carries it as a symptom. A name-only image waiting for its
// version (a channel not resolved yet) is not floating: SUC will tag it.
func floatingPlanImage(ctx *Context, c *snapshot.Cluster, p *suc.Plan, u stageUse, facts imageref.Facts, probed bool) []finding.Finding {
	r, err := imageref.Parse(u.image)
	if err != nil || !r.Floating() || (r.NameOnly() && (p.Spec.Channel != "" || p.Spec.Version != "")) {
		return nil
	}
	stages := strings.Join(u.stages, " and ")
	f := ctx.New("suc/image-floating", c, planRef(p), fmt.Sprintf("Plan %s/%s: %s image %s is not pinned (moving tag %q)", p.Namespace, p.Name, stages, u.image, orDash(r.Tag)))
	f.Evidence = []finding.Evidence{ev(sourceOf(c, planRef(p)), "spec.%s.image=%q, status.latestVersion=%q", u.stages[0], u.spec, p.Status.LatestVersion)}
	if probed && facts.Digest != "" {
		f.Evidence = append(f.Evidence, ev("registry", "%s currently points to %s: pin it as %s@%s", u.image, facts.Digest, strings.SplitN(u.image, ":", 2)[0], facts.Digest))
	}
	f.Keys = []string{PlanKey(c.Name, p.Namespace, p.Name)}
	return []finding.Finding{f}
}

func appendUnique(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

func earliestPull(pfs []pullFailure) (t0 time.Time) {
	for _, pf := range pfs {
		t0 = earliest(t0, pf.since, readyFalseSince(pf.pod))
	}
	return t0
}

// jobPullFailures are the pull failures of the named containers of the Jobs' pods that run
// image.
func jobPullFailures(c *snapshot.Cluster, jobs []*batchv1.Job, containers []string, image string) []pullFailure {
	var out []pullFailure
	for _, j := range jobs {
		for _, pod := range jobPods(c, j) {
			for _, name := range containers {
				cs := containerStatus(pod, name)
				if cs == nil || (cs.Image != image && cs.Image != "docker.io/"+image) {
					continue
				}
				if pf, ok := pullFailureOf(c, pod, cs); ok {
					out = append(out, pf)
				}
			}
		}
	}
	return out
}

// jobExecFormatErrors quotes "exec format error" of the named containers, with the node.
func jobExecFormatErrors(c *snapshot.Cluster, jobs []*batchv1.Job, containers []string) []finding.Evidence {
	var out []finding.Evidence
	for _, j := range jobs {
		for _, pod := range jobPods(c, j) {
			for _, name := range containers {
				cs := containerStatus(pod, name)
				if cs == nil {
					continue
				}
				if text, src, ok := execFormatError(c, pod, cs); ok {
					where := "node " + orDash(pod.Spec.NodeName)
					if n, ok := c.Get("Node", "", pod.Spec.NodeName).(*corev1.Node); ok {
						where += ", " + nodePlatform(inventory.NodeOf(n))
					}
					out = append(out, finding.Evidence{Source: src, Text: fmt.Sprintf("%s (%s)", firstLine(text), where)})
				}
			}
		}
	}
	return out
}

// sucController judges the kubectl image the controller runs drain and cordon with
// (SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE, default rancher/kubectl:v1.30.3): a missing image or one
// without the nodes' architecture fails every Plan's drain at once (suc/controller-image), a
// moving tag is suc/image-floating, and a kubectl whose version cannot take the drain flags
// or is more than one minor away from the cluster is suc/kubectl-skew (a warning).
var sucController = Check{
	Name:  "suc/controller",
	Emits: []string{"suc/controller-image", "suc/image-floating", "suc/kubectl-skew"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			out = append(out, judgeKubectlImages(ctx, c)...)
		}
		return out, nil
	},
}

// kubectlUse is one kubectl image setting and the Plans that drain or cordon with it.
type kubectlUse struct {
	ctrl   *suc.Controller
	image  string
	source string
	plans  []*suc.Plan
}

func kubectlUses(c *snapshot.Cluster) []*kubectlUse {
	var out []*kubectlUse
	byCtrl := map[string]*kubectlUse{}
	for _, ctrl := range inventory.Controllers(c) {
		img, src := ctrl.KubectlImage()
		u := &kubectlUse{ctrl: ctrl, image: img, source: src}
		byCtrl[ctrl.Deployment.Namespace] = u
		out = append(out, u)
	}
	for _, p := range c.Plans {
		if p.Spec.Drain == nil && !p.Spec.Cordon {
			continue
		}
		ctrl := inventory.ControllerFor(c, p.Namespace)
		key := ""
		if ctrl != nil {
			key = ctrl.Deployment.Namespace
		}
		u := byCtrl[key]
		if u == nil {
			img, src := ctrl.KubectlImage()
			u = &kubectlUse{ctrl: ctrl, image: img, source: src}
			byCtrl[key] = u
			out = append(out, u)
		}
		u.plans = append(u.plans, p)
	}
	return out
}

func (u *kubectlUse) object(c *snapshot.Cluster) finding.ObjectRef {
	if u.ctrl != nil {
		return deploymentRef(u.ctrl.Deployment)
	}
	return planRef(u.plans[0])
}

func deploymentRef(d *appsv1.Deployment) finding.ObjectRef {
	return ref("apps/v1", "Deployment", d.Namespace, d.Name)
}

func (u *kubectlUse) keys(c *snapshot.Cluster) []string {
	keys := []string{ImageKey(c.Name, u.image)}
	if u.ctrl != nil {
		keys = append(keys, WorkloadKey(c.Name, u.ctrl.Deployment.Namespace, u.ctrl.Deployment.Name))
	}
	for _, p := range u.plans {
		keys = append(keys, PlanKey(c.Name, p.Namespace, p.Name))
	}
	return keys
}

func (u *kubectlUse) settingEvidence(c *snapshot.Cluster) finding.Evidence {
	src := "controller settings"
	if u.ctrl != nil {
		src = sourceOf(c, deploymentRef(u.ctrl.Deployment))
	}
	return ev(src, "%s=%q (%s)", suc.EnvKubectlImage, u.image, u.source)
}

func judgeKubectlImages(ctx *Context, c *snapshot.Cluster) []finding.Finding {
	var out []finding.Finding
	for _, u := range kubectlUses(c) {
		if len(u.plans) == 0 {
			continue // no Plan drains or cordons with it (yet)
		}
		obj := u.object(c)
		facts, probed := ctx.Images[u.image]
		var jobs []*batchv1.Job
		var nodes []inventory.Node
		seen := map[string]bool{}
		for _, p := range u.plans {
			jobs = append(jobs, currentJobs(p, c.Jobs)...)
			for _, n := range selectedNodes(c, p) {
				if !seen[n.Name] {
					seen[n.Name] = true
					nodes = append(nodes, n)
				}
			}
		}
		containers := []string{string(suc.StageDrain), string(suc.StageCordon)}
		pulls := jobPullFailures(c, jobs, containers, u.image)
		var notFound []pullFailure
		for _, pf := range pulls {
			if pf.id == "image/pull-not-found" {
				notFound = append(notFound, pf)
			}
		}
		var lacking []inventory.Node
		if probed {
			for _, n := range nodes {
				if ok, known := facts.Supports(n.OS, n.Arch); known && !ok {
					lacking = append(lacking, n)
				}
			}
		}
		execErrs := jobExecFormatErrors(c, jobs, containers)
		missing := probed && (facts.Status == imageref.Missing || facts.Status == imageref.Invalid) || !facts.Known() && len(notFound) > 0
		if missing || len(lacking) > 0 || (!probed || len(facts.Platforms) == 0) && len(execErrs) > 0 {
			var what string
			switch {
			case missing:
				what = "does not exist in the registry"
			case len(lacking) > 0:
				var plats []string
				for _, n := range lacking {
					plats = appendUnique(plats, nodePlatform(n))
				}
				what = fmt.Sprintf("has no build for %s (nodes %s)", strings.Join(plats, ", "), nodeNames(lacking, 5))
			default:
				what = "fails with \"exec format error\" on some nodes"
			}
			f := ctx.New("suc/controller-image", c, obj, fmt.Sprintf("system-upgrade-controller's kubectl image %s %s: every Plan that drains or cordons fails at that step", u.image, what))
			f.Evidence = append(f.Evidence, u.settingEvidence(c))
			if probed {
				f.Evidence = append(f.Evidence, registryEvidence(facts))
			}
			for i, pf := range notFound {
				if i < 2 {
					f.Evidence = append(f.Evidence, finding.Evidence{Source: pf.source, Text: firstLine(pf.text)})
				}
			}
			for i, e := range execErrs {
				if i < 2 {
					f.Evidence = append(f.Evidence, e)
				}
			}
			var names []string
			for _, p := range u.plans {
				names = append(names, p.Namespace+"/"+p.Name)
			}
			if len(names) > 0 {
				f.Evidence = append(f.Evidence, ev("plans", "drain/cordon with it: %s", strings.Join(names, ", ")))
			}
			f.Since = timePtr(earliestPull(notFound))
			f.Keys = u.keys(c)
			for _, j := range jobs {
				f.Keys = append(f.Keys, WorkloadKey(c.Name, j.Namespace, j.Name))
			}
			for _, n := range lacking {
				f.Keys = append(f.Keys, NodeKey(c.Name, n.Name))
			}
			f.Signature = "suc-controller-image|" + u.image
			out = append(out, f)
		}
		r, err := imageref.Parse(u.image)
		if err == nil && r.Floating() {
			f := ctx.New("suc/image-floating", c, obj, fmt.Sprintf("the controller's kubectl image %s is not pinned (moving tag %q)", u.image, orDash(r.Tag)))
			f.Evidence = []finding.Evidence{u.settingEvidence(c)}
			f.Keys = u.keys(c)
			out = append(out, f)
		}
		if err == nil && !missing {
			if f, ok := kubectlSkew(ctx, c, u, r, jobs); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// kubectlSkew compares the kubectl image's version with the drain flags it will be given (the
// Plans' current drain arguments and those of existing Jobs) and with the cluster's (or the
// target) Kubernetes minor: kubectl is supported within one minor of the API server
// (kubernetes.io/releases/version-skew-policy).
func kubectlSkew(ctx *Context, c *snapshot.Cluster, u *kubectlUse, r imageref.Ref, jobs []*batchv1.Job) (finding.Finding, bool) {
	v, ok := suc.ParseKubectlTag(r.Tag)
	if !ok {
		return finding.Finding{}, false
	}
	var problems, failedDrains []string
	var evidence []finding.Evidence
	for _, p := range u.plans {
		args := p.DrainArgs("NODE")
		for _, fp := range suc.CheckDrainArgs(args, v) {
			if fp.Why == "deprecated" {
				continue
			}
			problems = appendUnique(problems, fp.String())
			evidence = append(evidence, ev(sourceOf(c, planRef(p)), "Plan %s/%s drains with %s; %s [%s]", p.Namespace, p.Name, fp.Flag.Name, fp.String(), fp.Flag.Source))
		}
	}
	for _, j := range jobs {
		for _, ctr := range suc.JobContainers(j) {
			if ctr.Stage != suc.StageDrain {
				continue
			}
			jr, err := imageref.Parse(ctr.Image)
			if err != nil {
				continue
			}
			jv, ok := suc.ParseKubectlTag(jr.Tag)
			if !ok {
				continue
			}
			for _, fp := range suc.CheckDrainArgs(ctr.Args, jv) {
				if fp.Why == "deprecated" {
					continue
				}
				problems = appendUnique(problems, fmt.Sprintf("Job %s: %s", j.Name, fp.String()))
				evidence = append(evidence, ev(sourceOf(c, jobRef(j)), "drain container %s runs %s %s", jr.Tag, strings.Join(ctr.Args, " "), fp.String()))
			}
			for _, pod := range jobPods(c, j) {
				if l := c.Logs[snapshot.LogKey(pod.Namespace, pod.Name, string(suc.StageDrain))]; l != nil {
					for _, line := range append(append([]string{}, l.Previous...), l.Current...) {
						if strings.Contains(line, "unknown flag") {
							failedDrains = appendUnique(failedDrains, WorkloadKey(c.Name, j.Namespace, j.Name))
							problems = appendUnique(problems, "kubectl rejected a drain flag")
							evidence = append(evidence, ev(l.CurrentFile, "%s", firstLine(line)))
							break
						}
					}
				}
			}
		}
	}
	cluster, what := clusterMinor(c)
	if ctx.TargetVersion != "" {
		if tv, ok := suc.ParseKubectlTag(strings.TrimPrefix(ctx.TargetVersion, "v")); ok {
			cluster, what = tv.Minor, "the target version "+ctx.TargetVersion
		}
	}
	if cluster > 0 && (v.Minor-cluster > 1 || cluster-v.Minor > 1) {
		problems = append(problems, fmt.Sprintf("kubectl %s is %d minor versions away from %s (1.%d); kubectl is supported within one minor of the API server", v, abs(v.Minor-cluster), what, cluster))
	}
	if len(problems) == 0 {
		return finding.Finding{}, false
	}
	f := ctx.New("suc/kubectl-skew", c, u.object(c), fmt.Sprintf("kubectl image %s does not fit its drains: %s", u.image, strings.Join(problems, "; ")))
	f.Evidence = append([]finding.Evidence{u.settingEvidence(c)}, evidence...)
	if len(f.Evidence) > 6 {
		f.Evidence = f.Evidence[:6]
	}
	// Linked by the image and the Jobs whose drain kubectl rejected, not by the Plans that
	// drain with it: a skew is a risk, and a Plan stuck for another reason is not its symptom.
	f.Keys = append([]string{ImageKey(c.Name, u.image)}, failedDrains...)
	return f, true
}

// clusterMinor is the highest Kubernetes minor the cluster's kubelets report (the API server
// is upgraded first), and how it was read.
func clusterMinor(c *snapshot.Cluster) (int, string) {
	best := 0
	for _, n := range c.Nodes {
		if v, ok := suc.ParseKubectlTag(n.Status.NodeInfo.KubeletVersion); ok && v.Minor > best {
			best = v.Minor
		}
	}
	return best, "the cluster's newest kubelet"
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
