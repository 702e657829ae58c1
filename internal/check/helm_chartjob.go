package check

import (
	"fmt"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// labelHelmChart is the label RKE2/K3s's helm-controller (k3s-io/helm-controller) puts on the
// helm-install-<chart> and helm-delete-<chart> Jobs of a HelmChart, and on their pods.
const labelHelmChart = "helmcharts.helm.cattle.io/chart"

// helmChartRestartsMin is how many restarts of a helm-install pod make it failing rather
// than a retry while the API server or a CRD comes back.
const helmChartRestartsMin = 3

// helmChartJobs reports the Jobs of RKE2/K3s's bundled HelmCharts (rke2-coredns,
// rke2-ingress-nginx, rke2-canal, traefik …) that fail: their klipper-helm pod crash-loops or
// the Job reached its backoffLimit. A Kubernetes upgrade rewrites every bundled chart, so
// during one these Jobs leave the cluster's DNS, ingress or CNI at the old chart while the
// nodes move on (rke2#1092, #5492, rancher#46994). The finding carries the keys of the
// upgrade under way (SUC Plan, Rancher's provisioned cluster, the node) so it joins its
// incident.
var helmChartJobs = Check{
	Name:  "helm/helmchart-jobs",
	Emits: []string{"helm/helmchart-job-failed"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			up := upgradeOf(ctx, c)
			for _, j := range c.Jobs {
				if f, ok := helmChartJobFailed(ctx, c, j, up); ok {
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

// helmChartJobFailed judges one Job of a HelmChart.
func helmChartJobFailed(ctx *Context, c *snapshot.Cluster, j *batchv1.Job, up clusterUpgrade) (finding.Finding, bool) {
	chart := j.Labels[labelHelmChart]
	if chart == "" || suc.JobComplete(j) != nil {
		return finding.Finding{}, false
	}
	failed := suc.JobFailed(j)
	crashing := crashingHelmPods(c, j)
	if failed == nil && len(crashing) == 0 {
		return finding.Finding{}, false
	}
	jref := jobRef(j)
	summary := fmt.Sprintf("the %s Job of RKE2/K3s's bundled HelmChart %s fails: the chart is not installed or upgraded", j.Name, chart)
	if up.what != "" {
		summary += " while " + up.what
	}
	f := ctx.New("helm/helmchart-job-failed", c, jref, summary)
	if failed != nil {
		f.Evidence = append(f.Evidence, ev(sourceOf(c, jref), "condition Failed=True reason=%s: %s", orDash(failed.Reason), orDash(failed.Message)))
		f.Since = timePtr(failed.LastTransitionTime.Time)
	}
	f.Keys = append([]string{"helmchart:" + c.Name + "/" + j.Namespace + "/" + chart}, up.keys...)
	for _, p := range crashing {
		f.Evidence = append(f.Evidence, helmPodEvidence(c, p)...)
		f.Keys = append(f.Keys, PodKey(c.Name, p.Namespace, p.Name))
		if p.Spec.NodeName != "" {
			f.Keys = append(f.Keys, NodeKey(c.Name, p.Spec.NodeName))
		}
		if f.Since == nil {
			f.Since = timePtr(p.CreationTimestamp.Time)
		}
	}
	f.Evidence = append(f.Evidence, up.evidence...)
	f.Vars = map[string]string{"chart": chart, "job": j.Name, "namespace": j.Namespace}
	f.Signature = "helmchart-job-failed|" + chart
	return f, true
}

// crashingHelmPods are the Job's pods whose helm container keeps failing.
func crashingHelmPods(c *snapshot.Cluster, j *batchv1.Job) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range jobPods(c, j) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount >= helmChartRestartsMin && (cs.State.Waiting != nil || cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0) {
				out = append(out, p)
				break
			}
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// helmPodEvidence is a crash-looping helm pod's state and the error lines of its log
// (klipper-helm runs helm install/upgrade and prints Helm's "Error: …").
func helmPodEvidence(c *snapshot.Cluster, p *corev1.Pod) []finding.Evidence {
	src := sourceOf(c, podRef(p))
	var out []finding.Evidence
	for _, cs := range p.Status.ContainerStatuses {
		state := "running"
		if w := cs.State.Waiting; w != nil {
			state = w.Reason
		}
		last := ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = fmt.Sprintf(", last exit code %d (%s)", t.ExitCode, orDash(t.Reason))
		}
		out = append(out, ev(src, "pod %s container %s: %s, %d restarts%s, node %s", p.Name, cs.Name, state, cs.RestartCount, last, orDash(p.Spec.NodeName)))
	}
	return append(out, helmErrorLines(c, p)...)
}

// helmErrorLines are the last lines of the pod's logs (the crashed run's, then the current)
// that carry Helm's error, with the file each was read from. klipper-helm's own
// "Error: no repositories configured" (its `helm repo remove stable`) is not one.
func helmErrorLines(c *snapshot.Cluster, p *corev1.Pod) []finding.Evidence {
	var keys []string
	for key := range c.Logs {
		if strings.HasPrefix(key, p.Namespace+"/"+p.Name+"/") {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	var out []finding.Evidence
	for _, key := range keys {
		l := c.Logs[key]
		for _, part := range []struct {
			lines []string
			file  string
		}{{l.Previous, l.PreviousFile}, {l.Current, l.CurrentFile}} {
			for _, line := range part.lines {
				if (strings.Contains(line, "Error:") || strings.Contains(line, "FAILED")) && !strings.Contains(line, "no repositories configured") {
					out = append(out, ev(orDash(part.file), "%s", strings.TrimSpace(line)))
				}
			}
		}
	}
	if len(out) > 3 {
		out = out[len(out)-3:]
	}
	return out
}

// clusterUpgrade is the Kubernetes upgrade under way on a cluster, as the input shows it.
type clusterUpgrade struct {
	what     string // "SUC Plan system-upgrade/rke2-server upgrades the nodes to v1.31.4+rke2r1"
	keys     []string
	evidence []finding.Evidence
}

// upgradeOf finds the upgrade a failing bundled chart holds: a SUC Plan with nodes left, a
// Rancher-provisioned cluster whose planner is moving it, or nodes at different kubelet
// versions. Empty when none shows.
func upgradeOf(ctx *Context, c *snapshot.Cluster) clusterUpgrade {
	var up clusterUpgrade
	for _, p := range c.Plans {
		if len(p.Status.Applying) > 0 {
			up.keys = append(up.keys, PlanKey(c.Name, p.Namespace, p.Name))
			up.evidence = append(up.evidence, ev(sourceOf(c, planRef(p)), "Plan %s/%s is applying %s on %s", p.Namespace, p.Name, orDash(p.Status.LatestVersion), strings.Join(p.Status.Applying, ", ")))
			if up.what == "" {
				up.what = fmt.Sprintf("SUC Plan %s/%s upgrades the nodes to %s", p.Namespace, p.Name, orDash(p.Status.LatestVersion))
			}
		}
	}
	rancherUpgradeOf(ctx, c, &up)
	if v := kubeletVersionsOf(c.Nodes); len(v) > 1 && up.what == "" {
		up.what = "the nodes run kubelets " + strings.Join(v, " and ")
		up.evidence = append(up.evidence, ev(sourceOf(c, nodeRef(c.Nodes[0].Name)), "nodes at kubelet %s", strings.Join(v, ", ")))
	}
	return up
}

// rancherUpgradeOf adds Rancher's upgrade of c, when Rancher provisions it and the planner is
// moving it, with the provisioned cluster's key.
func rancherUpgradeOf(ctx *Context, c *snapshot.Cluster, up *clusterUpgrade) {
	for _, m := range ctx.Snap.Clusters {
		for _, pc := range m.OtherOf(rancher.GroupProvisioning, "Cluster") {
			p := loadProvisioned(ctx, m, pc)
			if p == nil || p.downstream != c || !p.underWay() {
				continue
			}
			up.keys = append(up.keys, p.key)
			up.evidence = append(up.evidence, ev(sourceOf(m, ref(pc.APIVersion, pc.Kind, pc.Namespace, pc.Name)), "Rancher upgrades %s to %s (applied: %s)", p.name, p.want, orDash(p.applied)))
			if up.what == "" {
				up.what = fmt.Sprintf("Rancher upgrades %s to %s", p.name, p.want)
			}
		}
	}
}
