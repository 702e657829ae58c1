package check

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// subject is the cluster a finding's commands are about: the downstream cluster a
// management-side finding names, else the finding's own cluster.
func subject(f *finding.Finding) string {
	if f.Affects != "" {
		return f.Affects
	}
	return f.Cluster
}

// snapshotVars fill what the snapshot knows around a finding beyond its object: the Fleet
// Cluster of the cluster it is about (and its next redeployAgentGeneration), the bundle's
// next forceSyncGeneration and GitRepo, and a pod's container and Deployment. known holds
// what the object and the check already filled; those win.
func snapshotVars(ix *snapIndex, f *finding.Finding, known map[string]string) map[string]string {
	v := map[string]string{}
	if ix == nil {
		return v
	}
	s := ix.snap
	sc := s.Cluster(subject(f))
	if sc != nil && sc.FleetCluster != "" {
		if ns, name, ok := strings.Cut(sc.FleetCluster, "/"); ok {
			v["fleet-namespace"], v["cluster"] = ns, name
			if fc := ix.fleetClusters[ns+"/"+name]; fc != nil {
				for k, x := range redeployVars(fc) {
					v[k] = x
				}
				if fc.Status.Namespace != "" {
					v["cluster-namespace"] = fc.Status.Namespace
				}
			}
		}
	}
	get := func(k string) string {
		if x, ok := known[k]; ok {
			return x
		}
		return v[k]
	}
	if f.Object.Kind == "BundleDeployment" {
		if b := s.Cluster(f.Cluster); b != nil {
			if bd, _ := b.Get("BundleDeployment", f.Object.Namespace, f.Object.Name).(*snapshot.BundleDeployment); bd != nil {
				if n := bd.Labels.Get("fleet.cattle.io/bundle-name"); n != "" {
					v["bundle"] = n
				}
				if n := bd.Labels.Get("fleet.cattle.io/bundle-namespace"); n != "" {
					v["fleet-namespace"] = n
				}
				for _, nr := range bd.Status.NonReadyStatus {
					if nr.Namespace != "" {
						v["namespace"] = nr.Namespace
						break
					}
				}
			}
		}
	}
	if bundle, ns := firstOf(known["bundle"], v["bundle"]), get("fleet-namespace"); bundle != "" && ns != "" {
		if b := ix.bundles[ns+"/"+bundle]; b != nil {
			v["n+1@bundles.fleet.cattle.io"] = strconv.FormatInt(b.Spec.ForceSyncGeneration+1, 10)
			if repo := b.Labels[fleetv1.RepoLabel]; repo != "" {
				v["gitrepo"] = repo
			} else {
				v[noGitRepo] = bundle
			}
		}
	}
	if ix.fleetVersion != "" {
		v["fleet-version"] = ix.fleetVersion
	}
	// The system-upgrade-controller's namespace: a SUC finding's own object's (its Deployment,
	// Job or Plan), else, for a node, the namespace of the cluster's only controller.
	if strings.HasPrefix(f.ID, "suc/") && get("suc-namespace") == "" {
		if f.Object.Namespace != "" {
			v["suc-namespace"] = f.Object.Namespace
		} else if c := s.Cluster(f.Cluster); c != nil {
			if ctrls := inventory.Controllers(c); len(ctrls) == 1 {
				v["suc-namespace"] = ctrls[0].Deployment.Namespace
			}
		}
	}
	for _, facts := range []map[string]string{objectFacts(ix, f), evidenceVars(f)} {
		for k, x := range facts {
			if _, ok := v[k]; !ok && x != "" {
				v[k] = x
			}
		}
	}
	if f.Object.Kind == "Pod" && sc != nil {
		if p, _ := sc.Get("Pod", f.Object.Namespace, f.Object.Name).(*corev1.Pod); p != nil {
			if len(p.Spec.Containers) == 1 {
				v["container"] = p.Spec.Containers[0].Name
			}
			if d := owningDeployment(sc, p); d != "" {
				v["deployment"] = d
			}
		}
	}
	return v
}

// selfRegistered marks (with its namespace/name) a Fleet Cluster whose agent registered
// itself: commands that bump its redeployAgentGeneration do not apply.
const selfRegistered = "\x00self-registered"

// noGitRepo marks (with the bundle's name) a bundle Fleet made without a GitRepo, such as
// an agent's bundle: commands that patch its GitRepo do not apply.
const noGitRepo = "\x00no-gitrepo"

// notFleetAgent marks (with "Kind namespace/name") a pod finding about a workload that is not
// the Fleet agent: the Fleet Cluster's agent settings (agentResources, agentTolerations,
// agentAffinity) change only the agent, so their patches do not apply to it.
const notFleetAgent = "\x00not-fleet-agent"

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// snapIndex holds what personalise looks up for every finding, indexed once per scan: a
// fleet-wide scan personalises tens of thousands of findings.
type snapIndex struct {
	snap          *snapshot.Snapshot
	fleetClusters map[string]*fleetv1.Cluster  // namespace/name, on management clusters
	fleetOwner    map[string]*snapshot.Cluster // namespace/name → the management cluster holding it
	management    []*snapshot.Cluster
	bundles       map[string]*fleetv1.Bundle // namespace/name
	fleetVersion  string
}

func indexSnapshot(s *snapshot.Snapshot) *snapIndex {
	if s == nil {
		return nil
	}
	nFleet, nBundles := 0, 0
	for _, c := range s.Clusters {
		nFleet, nBundles = nFleet+len(c.FleetClusters), nBundles+len(c.Bundles)
	}
	ix := &snapIndex{snap: s, fleetClusters: make(map[string]*fleetv1.Cluster, nFleet), fleetOwner: make(map[string]*snapshot.Cluster, nFleet),
		bundles: make(map[string]*fleetv1.Bundle, nBundles), fleetVersion: fleetControllerVersion(s), management: s.Management()}
	for _, c := range s.Clusters {
		for _, b := range c.Bundles {
			ix.bundles[b.Namespace+"/"+b.Name] = b
		}
		if c.Role != snapshot.Management {
			continue
		}
		for _, fc := range c.FleetClusters {
			ix.fleetClusters[fc.Namespace+"/"+fc.Name] = fc
			ix.fleetOwner[fc.Namespace+"/"+fc.Name] = c
		}
	}
	return ix
}

// owningDeployment follows a pod's controller to its ReplicaSet and on to its Deployment.
func owningDeployment(c *snapshot.Cluster, p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Kind != "ReplicaSet" || o.Controller == nil || !*o.Controller {
			continue
		}
		rs, _ := c.Get("ReplicaSet", p.Namespace, o.Name).(*appsv1.ReplicaSet)
		if rs == nil {
			return ""
		}
		for _, ro := range rs.OwnerReferences {
			if ro.Kind == "Deployment" && ro.Controller != nil && *ro.Controller {
				return ro.Name
			}
		}
	}
	return ""
}

// fleetControllerVersion is the Fleet version the management cluster runs, read from the
// fleet-controller Deployment's image tag (rancher/fleet:v0.16.0 → 0.16.0), the version
// its CRD chart must have.
func fleetControllerVersion(s *snapshot.Snapshot) string {
	for _, m := range s.Management() {
		d, _ := m.Get("Deployment", "cattle-fleet-system", "fleet-controller").(*appsv1.Deployment)
		if d == nil {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if !strings.Contains(c.Image, "fleet") || strings.Contains(c.Image, "@") {
				continue
			}
			if i := strings.LastIndexByte(c.Image, ':'); i > strings.LastIndexByte(c.Image, '/') {
				return strings.TrimPrefix(c.Image[i+1:], "v")
			}
		}
	}
	return ""
}
