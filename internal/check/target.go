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

// targets reads, once per check run, what every cluster runs and will run (versionsOf), so
// that judging 50,000 BundleDeployments does not walk the fleet 50,000 times.
type targets struct {
	ctx     *Context
	rancher map[string]rancherVersion // by every name a downstream cluster may go by
	fleet   map[string][]string       // Fleet Cluster namespace/name → the names it is labelled with
	cache   map[*snapshot.Cluster]kubeVersions
}

type rancherVersion struct{ version, from string }

func newTargets(ctx *Context) *targets {
	t := &targets{ctx: ctx, rancher: rancherVersions(ctx.Snap), fleet: map[string][]string{}, cache: map[*snapshot.Cluster]kubeVersions{}}
	for _, m := range ctx.Snap.Management() {
		for _, fc := range m.FleetClusters {
			names := []string{fc.Name}
			for _, l := range []string{"management.cattle.io/cluster-name", "management.cattle.io/cluster-display-name"} {
				if x := fc.Labels[l]; x != "" {
					names = append(names, x)
				}
			}
			t.fleet[fc.Namespace+"/"+fc.Name] = names
		}
	}
	return t
}

// versionsOf reads what a cluster runs (the lower of the API server's version, when the source
// read or recorded it, and the lowest Node kubeletVersion: a cluster serves what its oldest API
// server serves, and kubelets are never newer than the API server; during a rolling upgrade an
// older API server can still be behind the one that answered) and the
// version its next upgrade installs, in this order: preflight --target-version for every
// cluster; the cluster's Kubernetes upgrade Plans (system-upgrade-controller: spec.version,
// else the channel-resolved status.latestVersion, of Plans whose upgrade image is rke2-upgrade
// or k3s-upgrade); the version Rancher is told to install (rancherVersions). A target not newer
// than the current version is no upgrade and reads as none.
func (t *targets) versionsOf(c *snapshot.Cluster) kubeVersions {
	if v, ok := t.cache[c]; ok {
		return v
	}
	v := t.read(c)
	t.cache[c] = v
	return v
}

func (t *targets) read(c *snapshot.Cluster) kubeVersions {
	var v kubeVersions
	if _, minor, ok := removedapi.ParseVersion(c.ServerVersion); ok {
		v.Current, v.CurrentMinor, v.CurrentFrom = c.ServerVersion, minor, "the API server's version"
	}
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
	if t.ctx.TargetVersion != "" {
		set(t.ctx.TargetVersion, "--target-version")
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
	if v.Target != "" {
		return v
	}
	names := append([]string{c.Name}, t.fleet[c.FleetCluster]...)
	for _, n := range names {
		if r, ok := t.rancher[n]; ok {
			set(r.version, r.from)
			break
		}
	}
	return v
}

// rancherVersions reads the Kubernetes version Rancher is told to install on each downstream
// cluster, from the management cluster's provisioning.cattle.io/v1 Clusters (spec.kubernetesVersion,
// clusters Rancher provisions) and management.cattle.io/v3 Clusters (spec.rke2Config or
// spec.k3sConfig kubernetesVersion, imported RKE2/K3s clusters). They are kept unstructured: the
// snapshot's index key has no API group, so both collide with Fleet's Cluster by name, and are
// told apart by apiVersion. Each is keyed by every name its downstream cluster may go by: the
// provisioning Cluster's name and status.clusterName (the management ID, c-m-…), the management
// Cluster's name (that ID) and spec.displayName. A provisioning Cluster wins over a management
// one.
func rancherVersions(s *snapshot.Snapshot) map[string]rancherVersion {
	out := map[string]rancherVersion{}
	add := func(v rancherVersion, names ...string) {
		for _, n := range names {
			if n != "" {
				if _, ok := out[n]; !ok {
					out[n] = v
				}
			}
		}
	}
	for _, m := range s.Management() {
		for _, u := range m.Other {
			if u.Kind == "Cluster" && u.APIVersion == "provisioning.cattle.io/v1" {
				if kv := str(u.Object, "spec", "kubernetesVersion"); kv != "" {
					add(rancherVersion{kv, fmt.Sprintf("provisioning.cattle.io/v1 Cluster %s/%s spec.kubernetesVersion", u.Namespace, u.Name)},
						u.Name, str(u.Object, "status", "clusterName"))
				}
			}
		}
	}
	for _, m := range s.Management() {
		for _, u := range m.Other {
			if u.Kind == "Cluster" && u.APIVersion == "management.cattle.io/v3" {
				for _, cfg := range []string{"rke2Config", "k3sConfig"} {
					if kv := str(u.Object, "spec", cfg, "kubernetesVersion"); kv != "" {
						add(rancherVersion{kv, fmt.Sprintf("management.cattle.io/v3 Cluster %s spec.%s.kubernetesVersion", u.Name, cfg)},
							u.Name, str(u.Object, "spec", "displayName"))
						break
					}
				}
			}
		}
	}
	return out
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
