package judge

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// coverageWarnings names what an input that unstick did not collect leaves unjudged. A
// bundle written by `unstick collect` or a live read lists every kind the checks use, so an
// absent object there is an absent object. A hand-made dump (kubectl get, kubectl
// cluster-info dump) may simply not hold a kind: without Secrets no Helm release was read,
// and "nothing stuck" would then say nothing about the releases Fleet deploys with Helm.
func coverageWarnings(s *snapshot.Snapshot) []string {
	if s.ClockSource != snapshot.ClockNewest {
		return nil // live, or recorded by collect: what was listed is known
	}
	var out []string
	for _, c := range s.Clusters {
		if len(c.Secrets) == 0 && len(c.HelmReleases) == 0 && report.ObjectCount(c) > 0 {
			out = append(out, fmt.Sprintf("cluster %s: the input holds no Secrets, so no Helm release was judged (helm/ checks, and the Fleet agent's own release); collect the cluster with 'unstick collect' to judge them", c.Name))
		}
	}
	return out
}

// upgradeMachineryGap says, when no object of Fleet, Helm, the system-upgrade-controller or
// Rancher is in the input, that nothing unstick judges was seen: a directory of unrelated
// objects (a ConfigMap and a Deployment) is no evidence that no upgrade is stuck, with or
// without timestamps. Empty when such an object was read, or nothing was read at all (that
// is reported on its own).
func upgradeMachineryGap(s *snapshot.Snapshot) string {
	objects := 0
	for _, c := range s.Clusters {
		if holdsUpgradeMachinery(c) {
			return ""
		}
		objects += report.ObjectCount(c)
	}
	if objects == 0 {
		return ""
	}
	return "the input holds no object of Fleet, Helm, the system-upgrade-controller or Rancher, so no upgrade was judged"
}

func holdsUpgradeMachinery(c *snapshot.Cluster) bool {
	if len(c.FleetClusters)+len(c.Bundles)+len(c.BundleDeployments)+len(c.ClusterRegistrations)+len(c.Contents)+len(c.GitRepos)+len(c.HelmOps)+
		len(c.HelmReleases)+len(c.Plans)+len(c.EtcdSnapshots)+len(c.MachinePlans) > 0 {
		return true
	}
	for _, o := range c.Other {
		if upgradeGroup(o.APIVersion) {
			return true
		}
	}
	for _, crd := range c.CRDs {
		if upgradeGroup(crd.Group + "/") {
			return true
		}
	}
	for _, ns := range c.Namespaces {
		if upgradeNamespace(ns.Name) {
			return true
		}
	}
	for _, j := range c.Jobs {
		if j.Labels["upgrade.cattle.io/plan"] != "" {
			return true
		}
	}
	return holdsObjectIn(c, upgradeNamespace)
}

// holdsObjectIn says whether a namespaced object of c lives in a namespace ns accepts.
func holdsObjectIn(c *snapshot.Cluster, ns func(string) bool) bool {
	var names []string
	for _, o := range c.Pods {
		names = append(names, o.Namespace)
	}
	for _, o := range c.Deployments {
		names = append(names, o.Namespace)
	}
	for _, o := range c.DaemonSets {
		names = append(names, o.Namespace)
	}
	for _, o := range c.Jobs {
		names = append(names, o.Namespace)
	}
	for _, o := range c.Secrets {
		names = append(names, o.Namespace)
	}
	for _, o := range c.ConfigMaps {
		names = append(names, o.Namespace)
	}
	for _, o := range c.Events {
		names = append(names, o.InvolvedObject.Namespace)
	}
	for _, n := range names {
		if ns(n) {
			return true
		}
	}
	return false
}

// upgradeGroup: Rancher's, Fleet's, SUC's and k3s/RKE2's API groups all end in cattle.io;
// Rancher provisions through Cluster API.
func upgradeGroup(apiVersion string) bool {
	group, _, found := strings.Cut(apiVersion, "/")
	return found && (group == "cattle.io" || strings.HasSuffix(group, ".cattle.io") || strings.HasSuffix(group, "cluster.x-k8s.io"))
}

// upgradeNamespace: the namespaces Rancher's agents, Fleet's agent and controller and SUC
// run in, and Fleet's cluster namespaces on the management cluster.
func upgradeNamespace(ns string) bool {
	return strings.HasPrefix(ns, "cattle-") || strings.HasPrefix(ns, "fleet-") || strings.HasPrefix(ns, "cluster-fleet-") || ns == "system-upgrade"
}
