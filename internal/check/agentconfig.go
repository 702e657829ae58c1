package check

import (
	"fmt"
	"sort"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// agentConfig reports Fleet agent settings that make an upgrade fragile before anything is
// stuck: no resource requests (the agent is evicted first under pressure and placed without
// reserved room) and a termination grace period shorter than config.minGracePeriodSeconds (an
// agent killed mid-Helm-operation leaves its release pending-upgrade, rancher/fleet#637).
// Fleet takes the agent's resources from the Fleet Cluster's spec.agentResources and sets no
// grace period itself, so the Kubernetes default of 30 s applies unless something changed it.
var agentConfig = Check{
	Name:  "config/agent",
	Emits: []string{"config/agent-no-requests", "config/agent-short-grace"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		minGrace := int64(ctx.Thresholds.Int("config.minGracePeriodSeconds"))
		for _, c := range ctx.Snap.Clusters {
			for _, d := range c.Deployments {
				if !isAgentWorkload(d.Namespace, d.Name) {
					continue
				}
				src := sourceOf(c, deploymentRef(d))
				keys := []string{WorkloadKey(c.Name, d.Namespace, d.Name), agentKeyFor(c)}
				for _, ctr := range d.Spec.Template.Spec.Containers {
					if ctr.Name != "fleet-agent" && len(d.Spec.Template.Spec.Containers) > 1 {
						continue
					}
					var missing []string
					for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
						if _, ok := ctr.Resources.Requests[r]; !ok {
							missing = append(missing, string(r))
						}
					}
					if len(missing) == 0 {
						continue
					}
					// Fleet sets no requests unless spec.agentResources says so, so a scan
					// reports the default only where it bites: an evicted or OOM-killed agent, a
					// node under pressure, a full cluster. Preflight reports it always.
					pressure := agentPressure(ctx, c, d)
					if !ctx.Preflight && len(pressure) == 0 {
						continue
					}
					f := ctx.New("config/agent-no-requests", c, deploymentRef(d), fmt.Sprintf("Fleet agent %s/%s has no %s request", d.Namespace, d.Name, strings.Join(missing, " or ")))
					f.Evidence = []finding.Evidence{ev(src, "container %s resources: requests=%s limits=%s", ctr.Name, resourceList(ctr.Resources.Requests), resourceList(ctr.Resources.Limits))}
					if fc := fleetClusterOf(ctx.Snap, c); fc != nil {
						f.Evidence = append(f.Evidence, ev(sourceOf(c, fleetClusterRef(fc)), "Fleet Cluster %s/%s spec.agentResources: %s", fc.Namespace, fc.Name, agentResources(fc)))
					}
					f.Evidence = append(f.Evidence, pressure...)
					f.Keys = keys
					out = append(out, f)
				}
				if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil && *g < minGrace {
					f := ctx.New("config/agent-short-grace", c, deploymentRef(d), fmt.Sprintf("Fleet agent %s/%s is given only %ds to stop (want at least %ds): a Helm operation in flight is cut off", d.Namespace, d.Name, *g, minGrace))
					f.Evidence = []finding.Evidence{ev(src, "spec.template.spec.terminationGracePeriodSeconds=%d", *g)}
					f.Keys = keys
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

// agentPressure is evidence that an agent without requests is at risk: its pods evicted or
// OOM-killed, their nodes under pressure, or the cluster short of headroom.
func agentPressure(ctx *Context, c *snapshot.Cluster, d *appsv1.Deployment) []finding.Evidence {
	var out []finding.Evidence
	for _, p := range c.Pods {
		if p.Namespace != d.Namespace {
			continue
		}
		if _, owner := podOwner(c, p); owner != d.Name {
			continue
		}
		if p.Status.Reason == "Evicted" {
			out = append(out, ev(sourceOf(c, podRef(p)), "pod %s was evicted: %s", p.Name, firstLine(p.Status.Message)))
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
				out = append(out, ev(sourceOf(c, podRef(p)), "container %s of pod %s was OOM-killed", cs.Name, p.Name))
			}
		}
		if n, ok := c.Get("Node", "", p.Spec.NodeName).(*corev1.Node); ok {
			for _, cond := range n.Status.Conditions {
				switch cond.Type {
				case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure:
					if cond.Status == corev1.ConditionTrue {
						out = append(out, ev(sourceOf(c, nodeRef(n.Name)), "the agent's node %s has %s: %s", n.Name, cond.Type, cond.Message))
					}
				}
			}
		}
	}
	if f, ok := headroom(ctx, c, ctx.Thresholds.Float("cluster.headroomMinPercent")); ok {
		out = append(out, finding.Evidence{Source: "cluster/headroom-low", Text: f.Summary})
	}
	if len(out) > 3 {
		out = out[:3]
	}
	return out
}

func resourceList(l corev1.ResourceList) string {
	if len(l) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range l {
		parts = append(parts, string(k)+"="+v.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func agentResources(fc *fleetv1.Cluster) string {
	if fc.Spec.AgentResources == nil {
		return "unset"
	}
	return "requests " + resourceList(fc.Spec.AgentResources.Requests) + ", limits " + resourceList(fc.Spec.AgentResources.Limits)
}

// fleetClusterOf finds the Fleet Cluster a snapshot cluster was matched to.
func fleetClusterOf(s *snapshot.Snapshot, c *snapshot.Cluster) *fleetv1.Cluster {
	if c.FleetCluster == "" {
		return nil
	}
	for _, m := range s.Management() {
		for _, fc := range m.FleetClusters {
			if fc.Namespace+"/"+fc.Name == c.FleetCluster {
				return fc
			}
		}
	}
	return nil
}

// privateRegistryPullSecrets reports upgrade-critical images from a private registry that no
// pull secret covers: not on the pod spec (or the Plan's spec.imagePullSecrets, which SUC
// copies into its Jobs), not on the service account, not in the Fleet Cluster's
// spec.agentPullSecrets. Such pulls work only while every node carries registry credentials
// of its own (registries.yaml), which unstick cannot see. A registry is private only by
// evidence (privateEvidence): a public registry, or an image a running pod pulled, raises
// no alarm.
var privateRegistryPullSecrets = Check{
	Name:  "config/pull-secrets",
	Emits: []string{"config/private-registry-no-pull-secret"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		type key struct{ cluster, kind, ns, name, host string }
		seen := map[key]bool{}
		uses := inventory.CollectFor(ctx.Snap, ctx.TargetVersion)
		for _, u := range uses {
			if u.Kind == "Job" || u.Kind == "Deployment" && strings.HasPrefix(u.Where, "setting ") {
				continue // Jobs repeat their Plan; the kubectl setting is pulled by the Plans' Jobs
			}
			if u.Kind == "Deployment" && !isAgentWorkload(u.Namespace, u.Name) && !(u.Namespace == "cattle-system" && u.Name == "cattle-cluster-agent") {
				continue
			}
			r, err := imageref.Parse(u.Ref)
			if err != nil || len(u.PullSecrets) > 0 {
				continue
			}
			c := ctx.Snap.Cluster(u.Cluster)
			if c == nil {
				continue
			}
			why, private := privateEvidence(ctx.Snap, c, r)
			if !private {
				continue
			}
			sa, saSecrets := podServiceAccount(c, u)
			if len(saSecrets) > 0 {
				continue
			}
			var fc *fleetv1.Cluster
			if u.Kind == "Deployment" && isAgentWorkload(u.Namespace, u.Name) {
				if fc = fleetClusterOf(ctx.Snap, c); fc != nil && fc.Spec.AgentPullSecrets != nil && len(*fc.Spec.AgentPullSecrets) > 0 {
					continue
				}
			}
			k := key{u.Cluster, u.Kind, u.Namespace, u.Name, r.Registry}
			if seen[k] {
				continue
			}
			seen[k] = true
			obj := ref("apps/v1", "Deployment", u.Namespace, u.Name)
			keys := []string{WorkloadKey(c.Name, u.Namespace, u.Name)}
			if u.Kind == "Plan" {
				obj = ref("upgrade.cattle.io/v1", "Plan", u.Namespace, u.Name)
				keys = []string{PlanKey(c.Name, u.Namespace, u.Name)}
			}
			f := ctx.New("config/private-registry-no-pull-secret", c, obj, fmt.Sprintf("%s %s/%s pulls %s from private registry %s with no pull secret: it works only while every node has its own credentials for it", u.Kind, u.Namespace, u.Name, u.Ref, r.Registry))
			f.Evidence = []finding.Evidence{ev(sourceOf(c, obj), "%s image %s; imagePullSecrets: none", u.Where, u.Ref), why}
			if sa != "" {
				f.Evidence = append(f.Evidence, ev("serviceaccount", "service account %s/%s has no imagePullSecrets (or was not read)", u.Namespace, sa))
			}
			if fc != nil {
				f.Evidence = append(f.Evidence, ev(sourceOf(c, fleetClusterRef(fc)), "Fleet Cluster %s/%s: spec.agentPullSecrets unset, spec.privateRepoURL=%q", fc.Namespace, fc.Name, fc.Spec.PrivateRepoURL))
			}
			f.Keys = keys
			out = append(out, f)
		}
		return out, nil
	},
}

// podServiceAccount is the service account a use's pods run as and its imagePullSecrets, read
// from ServiceAccount objects when the snapshot has them.
func podServiceAccount(c *snapshot.Cluster, u inventory.Use) (string, []string) {
	sa := "default"
	switch u.Kind {
	case "Deployment":
		if d, ok := c.Get("Deployment", u.Namespace, u.Name).(*appsv1.Deployment); ok && d.Spec.Template.Spec.ServiceAccountName != "" {
			sa = d.Spec.Template.Spec.ServiceAccountName
		}
	case "Plan":
		for _, p := range c.Plans {
			if p.Namespace == u.Namespace && p.Name == u.Name && p.Spec.ServiceAccountName != "" {
				sa = p.Spec.ServiceAccountName
			}
		}
	}
	o, ok := c.Get("ServiceAccount", u.Namespace, sa).(*snapshot.Unstructured)
	if !ok {
		return sa, nil
	}
	var out []string
	if list, ok := o.Object["imagePullSecrets"].([]any); ok {
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				if n, ok := m["name"].(string); ok && n != "" {
					out = append(out, n)
				}
			}
		}
	}
	return sa, out
}
