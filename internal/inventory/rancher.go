package inventory

import (
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// RancherSetting is the value of a management.cattle.io Setting on cluster c, "" if absent.
func RancherSetting(c *snapshot.Cluster, name string) string {
	if u, ok := c.GetRef(rancher.GroupManagement+"/v3", rancher.KindSetting, "", name).(*snapshot.Unstructured); ok {
		if v, _ := u.Object["value"].(string); v != "" {
			return v
		}
		v, _ := u.Object["default"].(string)
		return v
	}
	return ""
}

// provisionedUses are the images Rancher's planner will have the nodes of each provisioned
// cluster pull for its spec.kubernetesVersion (rancher.PlannedImages), with the nodes' platforms
// from their CAPI Machines' status.nodeInfo: probing them before an upgrade shows an installer
// image missing from the configured registry (rancher#37221, #36137, #38810).
func provisionedUses(c *snapshot.Cluster) []Use {
	var out []Use
	setting := RancherSetting(c, rancher.SettingSystemRegistry)
	for _, pc := range c.OtherOf(rancher.GroupProvisioning, "Cluster") {
		version := rancher.String(pc.Object, "spec", "kubernetesVersion")
		if version == "" {
			continue
		}
		registry := rancher.ClusterRegistry(pc.Object, setting)
		byOS := map[string][]Node{}
		for _, m := range c.OtherOf(rancher.GroupCAPI, rancher.KindMachine) {
			labels := rancher.StringMap(m.Object, "metadata", "labels")
			if m.Namespace != pc.Namespace || labels["cluster.x-k8s.io/cluster-name"] != pc.Name {
				continue
			}
			n := Node{Name: rancher.String(m.Object, "status", "nodeRef", "name"),
				OS:   rancher.String(m.Object, "status", "nodeInfo", "operatingSystem"),
				Arch: rancher.String(m.Object, "status", "nodeInfo", "architecture")}
			if n.Name == "" {
				n.Name = m.Name
			}
			byOS[n.OS] = append(byOS[n.OS], n)
		}
		if len(byOS) == 0 {
			byOS[""] = nil
		}
		for os, nodes := range byOS {
			for i, ref := range rancher.PlannedImages(version, registry, os) {
				where := "system-agent-installer"
				if i > 0 {
					where = "distribution runtime"
				}
				out = append(out, Use{Ref: ref, Written: ref, Cluster: c.Name, Kind: "Cluster", Namespace: pc.Namespace, Name: pc.Name,
					Where: where + " for " + version, Nodes: nodes})
			}
		}
	}
	return out
}
