// Package reporttest builds large synthetic reports for renderer tests, benchmarks and the
// browser check of the HTML report: a fleet of any size whose stuck upgrades look like
// the example fleet's (same IDs, catalogue wording, fix ladders, evidence shapes), spread
// deterministically over the clusters.
package reporttest

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
)

// EvaluatedAt is the evaluation time of every synthetic report.
var EvaluatedAt = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

// regions name the fleet's clusters: prod-eu-0001, edge-arm-0042, ...
var regions = []string{"prod-eu", "prod-us", "prod-ap", "staging", "dev", "edge-arm", "edge-x86", "retail"}

// Fleet returns a report of a fleet of n downstream clusters plus the management cluster
// "local". Roughly one cluster in six has a stuck upgrade of one of seven kinds, and a
// fleet-wide failure (the same config error on many edge clusters) is grouped into one
// incident, as check.Group does.
func Fleet(n int) *report.Report {
	cat, err := catalog.Load()
	if err != nil {
		panic(err)
	}
	g := &gen{cat: cat, rnd: rand.New(rand.NewPCG(uint64(n), 42))}
	r := &report.Report{SchemaVersion: report.SchemaVersion, EvaluatedAt: EvaluatedAt}
	r.Clusters = append(r.Clusters, report.Cluster{Name: "local", Role: "management", Objects: 40 + 6*n})
	var fleetwide []finding.Incident
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s-%04d", regions[(i-1)%len(regions)], i)
		r.Clusters = append(r.Clusters, report.Cluster{Name: name, Role: "downstream", FleetCluster: "fleet-default/c-m-" + fmt.Sprintf("%08x", g.rnd.Uint32()), Objects: 20 + g.rnd.IntN(30)})
		var inc *finding.Incident
		switch k := g.rnd.IntN(60); {
		case k < 3:
			inc = g.helmPending(name)
		case k < 5:
			inc = g.crdMissing(name)
		case k < 7:
			inc = g.unschedulable(name)
		case k < 8:
			inc = g.pullNotFound(name)
		case k < 9:
			inc = g.sucImageMissing(name)
		case k < 10:
			inc = g.versionSkew(name)
		case k < 11:
			inc = g.heartbeat(name)
		case k < 14 && (i-1)%len(regions) == 6: // edge-x86: one release broke them all
			fleetwide = append(fleetwide, *g.configInvalid(name))
		}
		if inc != nil {
			r.Incidents = append(r.Incidents, *inc)
		}
	}
	if len(fleetwide) > 0 {
		r.Incidents = append(r.Incidents, g.merge(fleetwide))
	}
	sort.SliceStable(r.Incidents, func(i, j int) bool { return r.Incidents[i].RootCause.Severity > r.Incidents[j].RootCause.Severity })
	for i, inc := range r.Incidents {
		r.Incidents[i] = finding.NewIncident(inc.RootCause, inc.Symptoms)
		r.Findings = append(r.Findings, inc.RootCause)
		r.Findings = append(r.Findings, inc.Symptoms...)
	}
	for i, c := range r.Clusters {
		for _, f := range r.Findings {
			if f.Cluster == c.Name {
				r.Clusters[i].Findings++
			}
		}
	}
	r.Errors = []finding.ScanError{{Cluster: "retail-0008", Check: "helm/releases", Message: `secrets is forbidden: User "system:serviceaccount:unstick:scan" cannot list resource "secrets" in API group "" in the namespace "cattle-fleet-system"`}}
	r.SetClusterStatuses()
	return r
}

type gen struct {
	cat *catalog.Catalog
	rnd *rand.Rand
}

func (g *gen) finding(id, cluster, affects string, obj finding.ObjectRef, summary string, age time.Duration, ev ...finding.Evidence) finding.Finding {
	e, ok := g.cat.Get(id)
	if !ok {
		panic("not in the catalogue: " + id)
	}
	since := EvaluatedAt.Add(-age).Truncate(time.Second)
	return finding.Finding{ID: id, Severity: e.Severity, Cluster: cluster, Affects: affects, Object: obj, Summary: summary, Evidence: ev, Since: &since, Remediation: e.Steps()}
}

func (g *gen) age(min, spread time.Duration) time.Duration {
	return min + time.Duration(g.rnd.Int64N(int64(spread)))
}

func obj(apiVersion, kind, ns, name string) finding.ObjectRef {
	return finding.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
}

func file(cluster, rest string) string { return "clusters/" + cluster + "/" + rest }

func (g *gen) agentSymptoms(c string, age time.Duration) []finding.Finding {
	return []finding.Finding{
		g.finding("fleet/agent-upgrade-stuck", "local", c, obj("fleet.cattle.io/v1alpha1", "Cluster", "fleet-default", c),
			fmt.Sprintf("Fleet agent of cluster %s has not moved to the version the controller wants for %s", c, age.Round(time.Minute)), age-time.Minute,
			finding.Evidence{Source: file("local", "fleet-default/clusters.yaml:1"), Text: "spec.redeployAgentGeneration=3 status.agentDeployedGeneration=2"}),
	}
}

func (g *gen) helmPending(c string) *finding.Incident {
	age := g.age(20*time.Minute, 72*time.Hour)
	rel := "fleet-agent-" + c
	rc := g.finding("helm/release-pending", c, "", obj("v1", "Secret", "cattle-fleet-system", "sh.helm.release.v1."+rel+".v4"),
		fmt.Sprintf("Helm release cattle-fleet-system/%s revision 4 has been pending-upgrade for %s; Helm refuses every other operation on it (\"another operation (install/upgrade/rollback) is in progress\")", rel, age.Round(time.Minute)), age,
		finding.Evidence{Source: file(c, "cattle-fleet-system/secrets.yaml:1 items[2]"), Text: `revision 4: status=pending-upgrade description="Preparing upgrade"`},
		finding.Evidence{Source: file(c, "cattle-fleet-system/secrets.yaml:1 items[1]"), Text: `revision 3: status=deployed description="Upgrade complete"`})
	sy := append([]finding.Finding{g.finding("fleet/bundle-err-applied", "local", c, obj("fleet.cattle.io/v1alpha1", "BundleDeployment", "cluster-fleet-default-"+c, rel),
		fmt.Sprintf("bundle %s cannot be applied on cluster %s: another operation (install/upgrade/rollback) is in progress", rel, c), age-time.Minute,
		finding.Evidence{Source: file("local", "cluster-fleet-default-"+c+"/bundledeployments.yaml:1 items[0]"), Text: "Deployed=False: another operation (install/upgrade/rollback) is in progress"})}, g.agentSymptoms(c, age)...)
	return &finding.Incident{RootCause: rc, Symptoms: sy}
}

func (g *gen) crdMissing(c string) *finding.Incident {
	age := g.age(10*time.Minute, 6*time.Hour)
	pod := "fleet-agent-" + fmt.Sprintf("%08x", g.rnd.Uint32())
	rc := g.finding("agent/crd-missing", c, "", obj("v1", "Pod", "cattle-fleet-system", pod),
		"agent pod cattle-fleet-system/"+pod+": a resource it needs is not served by the API server (CRD missing or outdated) (bundledeployments.fleet.cattle.io)", age,
		finding.Evidence{Source: file(c, "logs/cattle-fleet-system/"+pod+"/fleet-agent.previous.log (17 matching lines)"), Text: `failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource (get bundledeployments.fleet.cattle.io)`})
	sy := []finding.Finding{
		g.finding("pod/crashloop", c, "", obj("v1", "Pod", "cattle-fleet-system", pod), "container fleet-agent of pod cattle-fleet-system/"+pod+" is crash-looping (17 restarts)", age,
			finding.Evidence{Source: file(c, "cattle-fleet-system/pods.yaml:1 items[0]"), Text: "state.waiting: reason=CrashLoopBackOff"}),
		g.finding("workload/rollout-stalled", c, "", obj("apps/v1", "Deployment", "cattle-fleet-system", "fleet-agent"), "rollout of Deployment cattle-fleet-system/fleet-agent has stalled: 1/1 replicas updated, 0 available", age),
	}
	return &finding.Incident{RootCause: rc, Symptoms: append(sy, g.agentSymptoms(c, age)...)}
}

func (g *gen) unschedulable(c string) *finding.Incident {
	age := g.age(30*time.Minute, 10*24*time.Hour)
	pod := "fleet-agent-" + fmt.Sprintf("%08x", g.rnd.Uint32())
	rc := g.finding("pod/unschedulable-taints", c, "", obj("v1", "Pod", "cattle-fleet-system", pod),
		"pod cattle-fleet-system/"+pod+" has been unschedulable: no node it is allowed to run on (taints, cordons, node selector or affinity)", age,
		finding.Evidence{Source: "event FailedScheduling ×27 last 2026-11-28T09:24:07Z", Text: "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: edge}."},
		finding.Evidence{Source: file(c, "_cluster/nodes.yaml:1 items[0]"), Text: "node " + c + "-node-0: taint dedicated=edge:NoSchedule not tolerated by the pod"})
	return &finding.Incident{RootCause: rc, Symptoms: g.agentSymptoms(c, age)}
}

func (g *gen) pullNotFound(c string) *finding.Incident {
	age := g.age(15*time.Minute, 48*time.Hour)
	pod := "fleet-agent-" + fmt.Sprintf("%08x", g.rnd.Uint32())
	rc := g.finding("image/pull-not-found", c, "", obj("v1", "Pod", "cattle-fleet-system", pod),
		"image registry.example.com/rancher/fleet-agent:v0.16.0 of pod cattle-fleet-system/"+pod+" does not exist in the registry", age,
		finding.Evidence{Source: "event Failed ×12 last 2026-11-28T09:20:00Z", Text: `Failed to pull image "registry.example.com/rancher/fleet-agent:v0.16.0": not found: manifest unknown`})
	return &finding.Incident{RootCause: rc, Symptoms: g.agentSymptoms(c, age)}
}

func (g *gen) sucImageMissing(c string) *finding.Incident {
	age := g.age(2*time.Hour, 20*24*time.Hour)
	rc := g.finding("suc/image-missing", c, "", obj("upgrade.cattle.io/v1", "Plan", "system-upgrade", "server-plan"),
		"Plan system-upgrade/server-plan runs image rancher/kubectl:v1.29.0-gc, which does not exist in the registry", age,
		finding.Evidence{Source: file(c, "system-upgrade/plans.yaml:1 items[0]"), Text: "spec.drain: kubectl image rancher/kubectl:v1.29.0-gc"})
	sy := []finding.Finding{
		g.finding("suc/node-left-cordoned", c, "", obj("v1", "Node", "", c+"-node-1"), "node "+c+"-node-1 has been cordoned by the SUC upgrade", age),
		g.finding("suc/plan-stuck", c, "", obj("upgrade.cattle.io/v1", "Plan", "system-upgrade", "server-plan"), "Plan system-upgrade/server-plan has made no progress", age),
	}
	return &finding.Incident{RootCause: rc, Symptoms: sy}
}

func (g *gen) versionSkew(c string) *finding.Incident {
	age := g.age(24*time.Hour, 40*24*time.Hour)
	rc := g.finding("fleet/agent-version-skew", "local", c, obj("fleet.cattle.io/v1alpha1", "Cluster", "fleet-default", c),
		"Fleet agent of cluster "+c+" runs v0.13.4, more than one minor behind the controller's v0.16.0", age,
		finding.Evidence{Source: file("local", "fleet-default/clusters.yaml:1"), Text: "status.agent.version=v0.13.4"})
	return &finding.Incident{RootCause: rc}
}

func (g *gen) heartbeat(c string) *finding.Incident {
	age := g.age(time.Hour, 5*24*time.Hour)
	rc := g.finding("fleet/agent-heartbeat-stale", "local", c, obj("fleet.cattle.io/v1alpha1", "Cluster", "fleet-default", c),
		fmt.Sprintf("Fleet agent of cluster %s last checked in %s ago (agents check in every 15m)", c, age.Round(time.Minute)), age,
		finding.Evidence{Source: file("local", "fleet-default/clusters.yaml:1"), Text: "status.agent.lastSeen=" + EvaluatedAt.Add(-age).Format(time.RFC3339)})
	return &finding.Incident{RootCause: rc}
}

func (g *gen) configInvalid(c string) *finding.Incident {
	age := g.age(3*time.Hour, 2*time.Hour)
	pod := "fleet-agent-" + fmt.Sprintf("%08x", g.rnd.Uint32())
	rc := g.finding("agent/config-invalid", c, "", obj("v1", "Pod", "cattle-fleet-system", pod),
		"agent pod cattle-fleet-system/"+pod+" cannot parse its configuration: incompatible metadata version", age,
		finding.Evidence{Source: file(c, "logs/cattle-fleet-system/"+pod+"/fleet-agent.previous.log (3 matching lines)"), Text: `level=fatal msg="failed to unmarshal agent config: incompatible metadata version 2"`})
	rc.Signature = "agent/config-invalid: incompatible metadata version"
	return &finding.Incident{RootCause: rc, Symptoms: []finding.Finding{
		g.finding("pod/crashloop", c, "", obj("v1", "Pod", "cattle-fleet-system", pod), "container fleet-agent of pod cattle-fleet-system/"+pod+" is crash-looping", age),
	}}
}

// merge groups incidents with one failure signature into a fleet-wide incident.
func (g *gen) merge(incs []finding.Incident) finding.Incident {
	first := incs[0].RootCause
	fw := g.finding("fleet/fleetwide-failure", first.Cluster, "", first.Object,
		fmt.Sprintf("%d clusters fail the same way (%s): %s", len(incs), first.ID, first.Summary), 0,
		finding.Evidence{Source: "signature", Text: first.Signature})
	var sy []finding.Finding
	for _, inc := range incs {
		if inc.RootCause.Since.Before(*fw.Since) {
			fw.Since = inc.RootCause.Since
		}
		fw.Evidence = append(fw.Evidence, finding.Evidence{Source: inc.RootCause.Cluster, Text: inc.RootCause.Summary})
		sy = append(sy, inc.RootCause)
		sy = append(sy, inc.Symptoms...)
	}
	return finding.Incident{RootCause: fw, Symptoms: sy}
}
