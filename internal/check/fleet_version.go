package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Names of the Fleet workloads whose images carry the Fleet version. The controller runs as
// Deployment fleet-controller in cattle-fleet-system on the management cluster (image
// rancher/fleet:<version>); each agent as Deployment fleet-agent, label app=fleet-agent,
// container fleet-agent (image rancher/fleet-agent:<version>) in its agent namespace
// (rancher/fleet agentmanagement/agent/manifest.go).
const (
	controllerDeployment = "fleet-controller"
	agentDeployment      = "fleet-agent"
)

// fleetVersionSkew reports agents whose Fleet minor version is behind the controller's by more
// than fleet.maxMinorSkew: an older agent may not understand what the newer controller writes,
// and has to upgrade itself through the very path that may be broken.
var fleetVersionSkew = Check{
	Name:  "fleet/version-skew",
	Emits: []string{"fleet/agent-version-skew"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		maxSkew := ctx.Thresholds.Int("fleet.maxMinorSkew")
		mgmts := ctx.Snap.Management()
		for _, c := range ctx.Snap.Clusters {
			m := managementFor(mgmts, c)
			if m == nil {
				continue
			}
			ctrlImage, ctrlSrc := controllerImage(m)
			ctrl, ok := parseFleetVersion(ctrlImage)
			if !ok {
				continue // no controller read, or a tag that says no version: nothing to compare
			}
			ns := agentNamespaceOf(mgmts, c)
			agentImage, agentSrc := runningAgentImage(c, ns)
			agent, ok := parseFleetVersion(agentImage)
			if !ok {
				continue
			}
			if !agent.behind(ctrl, maxSkew) {
				continue
			}
			obj := ref("apps/v1", "Deployment", ns, agentDeployment)
			f := ctx.New("fleet/agent-version-skew", c, obj, fmt.Sprintf("Fleet agent on cluster %s runs %s, %d minor versions behind the fleet-controller's %s (more than %d tolerated)",
				c.Name, agent, ctrl.minor-agent.minor, ctrl, maxSkew))
			if agent.major != ctrl.major {
				f.Summary = fmt.Sprintf("Fleet agent on cluster %s runs %s, a major version behind the fleet-controller's %s", c.Name, agent, ctrl)
			}
			f.Affects = c.Name
			f.Keys = []string{agentKeyFor(c)}
			f.Evidence = []finding.Evidence{
				ev(ctrlSrc, "fleet-controller image %s (management cluster %s)", ctrlImage, m.Name),
				ev(agentSrc, "fleet-agent image %s", agentImage),
			}
			f.Signature = fmt.Sprintf("agent-version-skew|%s|%s", agent.minorString(), ctrl.minorString())
			out = append(out, f)
		}
		return out, nil
	},
}

// managementFor is the management cluster whose controller deploys c's agent: the one holding
// c's Fleet Cluster, else the only management cluster of the snapshot.
func managementFor(mgmts []*snapshot.Cluster, c *snapshot.Cluster) *snapshot.Cluster {
	if c.FleetCluster != "" {
		for _, m := range mgmts {
			for _, fc := range m.FleetClusters {
				if fc.Namespace+"/"+fc.Name == c.FleetCluster {
					return m
				}
			}
		}
	}
	if len(mgmts) == 1 {
		return mgmts[0]
	}
	return nil
}

// agentNamespaceOf is where c's agent runs: what its Fleet Cluster says, else Fleet's default
// (cattle-fleet-local-system for the management cluster's own agent).
func agentNamespaceOf(mgmts []*snapshot.Cluster, c *snapshot.Cluster) string {
	if c.FleetCluster != "" {
		for _, m := range mgmts {
			for _, fc := range m.FleetClusters {
				if fc.Namespace+"/"+fc.Name == c.FleetCluster {
					return fleet.AgentNamespace(fc)
				}
			}
		}
	}
	if c.Role == snapshot.Management {
		return fleet.LocalAgentNamespace
	}
	return fleet.DefaultAgentNamespace
}

// controllerImage is the fleet-controller container's image on a management cluster.
func controllerImage(m *snapshot.Cluster) (image, src string) {
	d, _ := m.Get("Deployment", fleet.DefaultAgentNamespace, controllerDeployment).(*appsv1.Deployment)
	if d == nil {
		return "", ""
	}
	return containerImage(d.Spec.Template.Spec.Containers, controllerDeployment), sourceOf(m, ref("apps/v1", "Deployment", d.Namespace, d.Name))
}

// runningAgentImage is the image the agent actually runs: of its running pods, the newest
// version (a rollout in progress is not skew). Only when no agent pod was collected at all is
// the Deployment's template used; pods that exist but do not run are other checks' business.
func runningAgentImage(c *snapshot.Cluster, ns string) (image, src string) {
	var images []string
	srcs := map[string]string{}
	sawPod := false
	for _, p := range c.Pods {
		if p.Namespace != ns || !isFleetAgentPod(c, p) {
			continue
		}
		sawPod = true
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		img := containerImage(p.Spec.Containers, agentDeployment)
		if img == "" {
			continue
		}
		if _, ok := srcs[img]; !ok {
			images = append(images, img)
			srcs[img] = sourceOf(c, podRef(p))
		}
	}
	if len(images) > 0 {
		sort.SliceStable(images, func(i, j int) bool {
			a, _ := parseFleetVersion(images[i])
			b, _ := parseFleetVersion(images[j])
			return b.less(a)
		})
		return images[0], srcs[images[0]]
	}
	if sawPod {
		return "", ""
	}
	if d, _ := c.Get("Deployment", ns, agentDeployment).(*appsv1.Deployment); d != nil {
		return containerImage(d.Spec.Template.Spec.Containers, agentDeployment), sourceOf(c, ref("apps/v1", "Deployment", d.Namespace, d.Name))
	}
	return "", ""
}

// isFleetAgentPod reports a pod of the fleet-agent Deployment: label app=fleet-agent, or owned by
// one of its ReplicaSets (fleet-agent-<template hash>).
func isFleetAgentPod(c *snapshot.Cluster, p *corev1.Pod) bool {
	if p.Labels["app"] == agentDeployment {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Kind != "ReplicaSet" || !strings.HasPrefix(o.Name, agentDeployment+"-") {
			continue
		}
		if rs, _ := c.Get("ReplicaSet", p.Namespace, o.Name).(*appsv1.ReplicaSet); rs != nil {
			for _, ro := range rs.OwnerReferences {
				if ro.Kind == "Deployment" && ro.Name == agentDeployment {
					return true
				}
			}
			continue
		}
		return true // ReplicaSet not collected: its name says enough
	}
	return false
}

// containerImage is the image of the named container, else of the first one.
func containerImage(cs []corev1.Container, name string) string {
	for _, c := range cs {
		if c.Name == name {
			return c.Image
		}
	}
	if len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// fleetVersion is the major.minor.patch of a Fleet image tag (v0.16.0, 0.15.2-rc.1,
// v0.12.4-hotfix-1a2b).
type fleetVersion struct {
	major, minor, patch int
	raw                 string
}

var fleetTag = lazyre.New(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// parseFleetVersion reads the version from an image reference's tag. A reference without a
// tag (digest only) or with a tag that is not a version (latest, dev) gives ok=false.
func parseFleetVersion(image string) (fleetVersion, bool) {
	ref, _, _ := strings.Cut(image, "@")
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return fleetVersion{}, false
	}
	tag := ref[colon+1:]
	m := fleetTag().FindStringSubmatch(tag)
	if m == nil {
		return fleetVersion{}, false
	}
	v := fleetVersion{raw: tag}
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.patch, _ = strconv.Atoi(m[3])
	}
	return v, true
}

func (v fleetVersion) String() string { return v.raw }

func (v fleetVersion) minorString() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

func (v fleetVersion) less(o fleetVersion) bool {
	if v.major != o.major {
		return v.major < o.major
	}
	if v.minor != o.minor {
		return v.minor < o.minor
	}
	return v.patch < o.patch
}

// behind reports whether v lags ctrl by more than maxSkew minor versions (any older major
// counts).
func (v fleetVersion) behind(ctrl fleetVersion, maxSkew int) bool {
	if v.major != ctrl.major {
		return v.major < ctrl.major
	}
	return ctrl.minor-v.minor > maxSkew
}
