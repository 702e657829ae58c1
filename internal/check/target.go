package check

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/removedapi"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// kubeVersions is the Kubernetes version a cluster runs and the one its next upgrade installs.
type kubeVersions struct {
	Current      string // as written ("v1.31.12+rke2r1"); "" when unknown
	CurrentMinor int
	CurrentFrom  string // what says so: "the lowest Node kubeletVersion (node-0)"
	Target       string
	TargetMinor  int
	TargetFrom   string // "Plan system-upgrade/rke2-server spec.version", "--target-version", ...
}

// minorName writes a minor as a version: "v1.32".
func minorName(minor int) string { return fmt.Sprintf("v1.%d", minor) }

// versionsOf reads what a cluster runs (the lowest Node kubeletVersion: a cluster serves what
// its oldest API server serves, and kubelets are never newer than the API server) and the
// version its next upgrade installs, in this order: preflight --target-version for every
// cluster; the cluster's Kubernetes upgrade Plans (system-upgrade-controller: spec.version,
// else the channel-resolved status.latestVersion, of Plans whose upgrade image is rke2-upgrade
// or k3s-upgrade); the version Rancher is told to install — spec.kubernetesVersion of the
// provisioning.cattle.io/v1 Cluster for clusters Rancher provisions, spec.rke2Config or
// spec.k3sConfig kubernetesVersion of the management.cattle.io/v3 Cluster for imported ones.
// A target not newer than the current version is no upgrade and reads as none.
func versionsOf(ctx *Context, c *snapshot.Cluster) kubeVersions {
	var v kubeVersions
	for _, n := range c.Nodes {
		kv := n.Status.NodeInfo.KubeletVersion
		if _, minor, ok := removedapi.ParseVersion(kv); ok && (v.Current == "" || minor < v.CurrentMinor) {
			v.Current, v.CurrentMinor, v.CurrentFrom = kv, minor, "the lowest Node kubeletVersion ("+n.Name+")"
		}
	}
	set := func(version, from string) bool {
		_, minor, ok := removedapi.ParseVersion(version)
		if !ok || (v.Current != "" && minor <= v.CurrentMinor) {
			return false
		}
		if v.Target == "" || minor > v.TargetMinor {
			v.Target, v.TargetMinor, v.TargetFrom = version, minor, from
		}
		return true
	}
	if ctx.TargetVersion != "" {
		set(ctx.TargetVersion, "--target-version")
		return v
	}
	for _, p := range c.Plans {
		if !p.UpgradesKubernetes() {
			continue
		}
		if p.Spec.Version != "" {
			set(p.Spec.Version, "Plan "+p.Ref()+" spec.version")
		} else if p.Status.LatestVersion != "" {
			set(p.Status.LatestVersion, "Plan "+p.Ref()+" status.latestVersion (channel "+p.Spec.Channel+")")
		}
	}
	if version, from := rancherTarget(ctx.Snap, c); version != "" {
		set(version, from)
	}
	return v
}

// rancherTarget is the Kubernetes version Rancher is told to install on cluster c, read from
// the management cluster's provisioning.cattle.io/v1 and management.cattle.io/v3 Clusters
// (kept unstructured: the snapshot's index key has no API group, so both collide with Fleet's
// Cluster by name; they are told apart by apiVersion). A downstream cluster is matched by its
// name, its Fleet Cluster's name, or the Rancher cluster ID and display name its Fleet Cluster
// is labelled with.
func rancherTarget(s *snapshot.Snapshot, c *snapshot.Cluster) (version, from string) {
	names := map[string]bool{c.Name: true}
	for _, m := range s.Management() {
		for _, fc := range m.FleetClusters {
			if fc.Namespace+"/"+fc.Name != c.FleetCluster || c.FleetCluster == "" {
				continue
			}
			names[fc.Name] = true
			for _, l := range []string{"management.cattle.io/cluster-name", "management.cattle.io/cluster-display-name"} {
				if x := fc.Labels[l]; x != "" {
					names[x] = true
				}
			}
		}
	}
	for _, m := range s.Management() {
		if m == c {
			continue
		}
		for _, u := range m.Other {
			if u.Kind != "Cluster" {
				continue
			}
			switch u.APIVersion {
			case "provisioning.cattle.io/v1":
				if names[u.Name] || names[str(u.Object, "status", "clusterName")] {
					if kv := str(u.Object, "spec", "kubernetesVersion"); kv != "" {
						return kv, fmt.Sprintf("provisioning.cattle.io/v1 Cluster %s/%s spec.kubernetesVersion", u.Namespace, u.Name)
					}
				}
			case "management.cattle.io/v3":
				if names[u.Name] || names[str(u.Object, "spec", "displayName")] {
					for _, cfg := range []string{"rke2Config", "k3sConfig"} {
						if kv := str(u.Object, "spec", cfg, "kubernetesVersion"); kv != "" {
							return kv, fmt.Sprintf("management.cattle.io/v3 Cluster %s spec.%s.kubernetesVersion", u.Name, cfg)
						}
					}
				}
			}
		}
	}
	return "", ""
}

// str reads a nested string of an unstructured object; "" when absent or not a string.
func str(obj map[string]any, path ...string) string {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	s, _ := cur.(string)
	return strings.TrimSpace(s)
}
