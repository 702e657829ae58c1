package check

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A Fleet step (redeploy the agent, force-sync the bundle, patch the GitRepo) only helps a
// Helm release Fleet deploys: for a release installed by hand in a cluster without a Fleet
// agent, Fleet has nothing to retry, and the first step is the Helm rollback fix plans.

// fleetCommand matches a command that changes or reads Fleet's own objects.
var fleetCommand = lazyre.New(`\b(clusters|bundles|gitrepos|bundledeployments)\.fleet\.cattle\.io\b`)

// releaseSecretPrefix starts the name of every Secret Helm's Secrets driver stores a
// revision in: sh.helm.release.v1.<release>.v<revision>.
const releaseSecretPrefix = "sh.helm.release.v1."

// notFleetManaged says why Fleet does not manage the Helm release a finding is about, when
// the input shows it does not: the release is not the agent's own, its Secret carries no
// Fleet label or annotation, no BundleDeployment names it, and either its cluster runs no
// Fleet agent or the management cluster holding its Fleet Cluster deploys no bundle by that
// release name. Any other finding, or a release the input cannot tell about, gets "".
func notFleetManaged(ix *snapIndex, f *finding.Finding) string {
	if ix == nil || f.Object.Kind != "Secret" || !strings.HasPrefix(f.Object.Name, releaseSecretPrefix) {
		return ""
	}
	c := ix.snap.Cluster(f.Cluster)
	rel := releaseName(f.Object.Name)
	if c == nil || rel == "" || fleet.IsAgentBundle(rel) || fleetMarked(c, f.Object.Namespace, f.Object.Name) {
		return ""
	}
	if bundleDeploysRelease(ix.snap, c, rel) {
		return ""
	}
	who := "Helm release " + f.Object.Namespace + "/" + rel
	if !runsFleetAgent(c) && c.FleetCluster == "" {
		return who + " is not deployed by Fleet: cluster " + c.Name + " runs no Fleet agent and no BundleDeployment names the release"
	}
	if c.FleetCluster != "" && ix.fleetOwner[c.FleetCluster] != nil {
		return who + " is not deployed by Fleet: no BundleDeployment of Fleet Cluster " + c.FleetCluster + " names the release"
	}
	return "" // the agent's management cluster is not in the input: it may deploy the release
}

// releaseName is the release of a Helm release Secret's name, "" if the name is not one.
func releaseName(secret string) string {
	rest := strings.TrimPrefix(secret, releaseSecretPrefix)
	i := strings.LastIndex(rest, ".v")
	if i <= 0 {
		return ""
	}
	return rest[:i]
}

// fleetMarked reports a release Secret carrying a Fleet or wrangler apply label or annotation.
func fleetMarked(c *snapshot.Cluster, ns, name string) bool {
	s, _ := c.Get("Secret", ns, name).(*corev1.Secret)
	if s == nil {
		return false
	}
	for _, m := range []map[string]string{s.Labels, s.Annotations} {
		for k := range m {
			if strings.Contains(k, "fleet.cattle.io") || strings.Contains(k, "objectset.rio.cattle.io") {
				return true
			}
		}
	}
	return false
}

// bundleDeploysRelease reports a BundleDeployment of the input, on any management cluster,
// that deploys release to cluster c: its Helm releaseName option or its bundle's name is the
// release's (Fleet's default release name), and it is c's when c is matched to a Fleet Cluster.
func bundleDeploysRelease(s *snapshot.Snapshot, c *snapshot.Cluster, release string) bool {
	for _, m := range s.Management() {
		for _, bd := range m.BundleDeployments {
			if c.FleetCluster != "" && bd.Labels.Get(fleet.LabelClusterNS)+"/"+bd.Labels.Get(fleet.LabelClusterName) != c.FleetCluster {
				continue
			}
			rn := fleet.BundleName(bd)
			if o := bd.Spec.Options.Helm; o != nil && o.ReleaseName != "" {
				rn = o.ReleaseName
			}
			if rn == release || fleet.BundleName(bd) == release {
				return true
			}
		}
	}
	return false
}

// runsFleetAgent reports a cluster with a fleet-agent Deployment or pod in a Fleet agent
// namespace.
func runsFleetAgent(c *snapshot.Cluster) bool {
	for _, d := range c.Deployments {
		if fleet.IsAgentNamespace(d.Namespace) && strings.HasPrefix(d.Name, "fleet-agent") {
			return true
		}
	}
	for _, p := range c.Pods {
		if fleet.IsAgentNamespace(p.Namespace) && strings.HasPrefix(p.Name, "fleet-agent") {
			return true
		}
	}
	return false
}
