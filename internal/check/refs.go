package check

import (
	"fmt"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Object references for the kinds checks report on.
func ref(apiVersion, kind, namespace, name string) finding.ObjectRef {
	return finding.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name}
}

func podRef(p *corev1.Pod) finding.ObjectRef { return ref("v1", "Pod", p.Namespace, p.Name) }

func fleetClusterRef(c *fleetv1.Cluster) finding.ObjectRef {
	return ref("fleet.cattle.io/v1alpha1", "Cluster", c.Namespace, c.Name)
}

func bdRef(bd *snapshot.BundleDeployment) finding.ObjectRef {
	return ref("fleet.cattle.io/v1alpha1", "BundleDeployment", bd.Namespace, bd.Name)
}

// Correlation keys: findings that share one belong to the same stuck upgrade.

// AgentKey ties everything about one cluster's Fleet agent together, on whichever cluster
// it was seen: the management cluster's Cluster and agent BundleDeployment, the downstream
// agent's Helm release, pods and logs.
func AgentKey(fleetRef string) string { return "agent:" + fleetRef }

// agentKeyFor is the agent key of a snapshot cluster: its matched Fleet Cluster, else its name.
func agentKeyFor(c *snapshot.Cluster) string {
	if c.FleetCluster != "" {
		return AgentKey(c.FleetCluster)
	}
	return AgentKey("cluster:" + c.Name)
}

// BundleKey ties a BundleDeployment to the Helm release it produced on its cluster.
func BundleKey(fleetRef, bundle string) string { return "bundle:" + fleetRef + "/" + bundle }

// bundleKeyFor is the bundle key of a release on a downstream snapshot cluster.
func bundleKeyFor(c *snapshot.Cluster, release string) string {
	if c.FleetCluster != "" {
		return BundleKey(c.FleetCluster, release)
	}
	return BundleKey("cluster:"+c.Name, release)
}

// PodKey and WorkloadKey tie a pod's findings to its owner's.
func PodKey(cluster, ns, name string) string { return "pod:" + cluster + "/" + ns + "/" + name }
func WorkloadKey(cluster, ns, name string) string {
	return "workload:" + cluster + "/" + ns + "/" + name
}

// isAgentWorkload reports whether ns/name is a Fleet agent Deployment or one of its pods.
func isAgentWorkload(ns, name string) bool {
	return fleet.IsAgentNamespace(ns) && strings.HasPrefix(name, "fleet-agent")
}

// fleetIndex maps a management cluster's cluster namespaces to their Fleet Clusters.
type fleetIndex struct {
	byNS map[string]*fleetv1.Cluster
}

func newFleetIndex(m *snapshot.Cluster) fleetIndex {
	ix := fleetIndex{byNS: make(map[string]*fleetv1.Cluster, len(m.FleetClusters))}
	for _, c := range m.FleetClusters {
		if c.Status.Namespace != "" {
			ix.byNS[c.Status.Namespace] = c
		}
	}
	return ix
}

// forBD returns the Fleet Cluster a BundleDeployment targets.
func (ix fleetIndex) forBD(m *snapshot.Cluster, bd *snapshot.BundleDeployment) *fleetv1.Cluster {
	if c := ix.byNS[bd.Namespace]; c != nil {
		return c
	}
	ns, name := bd.Labels.Get(fleet.LabelClusterNS), bd.Labels.Get(fleet.LabelClusterName)
	if name != "" {
		for _, c := range m.FleetClusters {
			if c.Name == name && (ns == "" || c.Namespace == ns) {
				return c
			}
		}
	}
	return nil
}

// clusterName is how a report names the downstream cluster of a Fleet Cluster: the snapshot
// cluster matched to it, else Rancher's display name, else the Fleet Cluster's name.
func clusterName(s *snapshot.Snapshot, c *fleetv1.Cluster) string {
	if sc := s.ClusterForFleet(c.Namespace + "/" + c.Name); sc != nil {
		return sc.Name
	}
	if n := c.Labels[snapshot.LabelRancherDisplayName]; n != "" {
		return n
	}
	return c.Name
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// earliest returns the earliest non-zero time.
func earliest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if !t.IsZero() && (out.IsZero() || t.Before(out)) {
			out = t
		}
	}
	return out
}

// latest returns the latest non-zero time.
func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// human renders a duration the way operators say it: 2h17m, 3d4h, 45s.
func human(d time.Duration) string {
	if d < 0 {
		return "-" + human(-d)
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		h := int(d.Hours())
		m := int(d.Minutes()) - h*60
		if m == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	}
	days := int(d.Hours()) / 24
	return fmt.Sprintf("%dd%dh", days, int(d.Hours())-days*24)
}

// sourceOf is the evidence source of an object: the file it was read from, else its ref.
func sourceOf(c *snapshot.Cluster, o finding.ObjectRef) string {
	if s := c.SourceRef(o.APIVersion, o.Kind, o.Namespace, o.Name); s != "" {
		return s
	}
	return o.String()
}

func ev(source, format string, args ...any) finding.Evidence {
	return finding.Evidence{Source: source, Text: fmt.Sprintf(format, args...)}
}
