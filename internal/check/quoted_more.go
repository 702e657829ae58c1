package check

import (
	"fmt"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// bundleQuotes are the errors a Bundle's summary repeats from its BundleDeployments
// (status.summary.nonReadyResources[]: the deployment's message and its non-ready resources'
// summaries), each on the cluster its entry names: a Bundle may be all that was collected of a
// management cluster's Fleet objects (a Fleet dump keeps it). An entry whose cluster is not
// known is left out: the quote would have no cluster to land on.
func bundleQuotes(ctx *Context, ix fleetIndex, m *snapshot.Cluster, b *fleetv1.Bundle) []quoted {
	var out []quoted
	for i, nr := range b.Status.Summary.NonReadyResources {
		fc := summaryCluster(ix, m, nr.Name)
		if fc == nil {
			continue
		}
		target := clusterName(ctx.Snap, fc)
		base := quoted{on: m, target: ctx.Snap.Cluster(target), affects: target,
			subject: fmt.Sprintf("bundle %s on cluster %s", b.Name, target),
			keys:    []string{BundleKey(fc.Namespace+"/"+fc.Name, b.Name)}}
		src := fmt.Sprintf("%s status.summary.nonReadyResources[%d]", sourceOf(m, ref("fleet.cattle.io/v1alpha1", "Bundle", b.Namespace, b.Name)), i)
		texts := []string{nr.Message}
		for _, st := range nr.NonReadyStatus {
			if st.Summary.Error {
				texts = append(texts, strings.Join(st.Summary.Message, "; "))
			}
		}
		for _, t := range texts {
			if t != "" {
				q := base
				q.source, q.msg = src, t
				out = append(out, q)
			}
		}
	}
	return out
}

// summaryCluster is the Fleet Cluster a Bundle summary's entry names: Fleet names an entry
// after the BundleDeployment ("namespace/name", the namespace being the cluster's) or the
// cluster itself ("namespace/name" of the Fleet Cluster).
func summaryCluster(ix fleetIndex, m *snapshot.Cluster, name string) *fleetv1.Cluster {
	ns, n, ok := strings.Cut(name, "/")
	if !ok {
		return nil
	}
	if c := ix.byNS[ns]; c != nil {
		return c
	}
	for _, c := range m.FleetClusters {
		if c.Namespace == ns && c.Name == n {
			return c
		}
	}
	return nil
}

// sucQuotes are the errors the system-upgrade-controller's objects quote: a Plan's conditions
// that are not True (Complete=False quoting the failed Job, Validated=False) and each Job's
// Failed condition. They land in the Plan's incident.
func sucQuotes(c *snapshot.Cluster) []quoted {
	var out []quoted
	for _, p := range c.Plans {
		keys := []string{PlanKey(c.Name, p.Namespace, p.Name)}
		src := sourceOf(c, ref(suc.APIVersion, suc.Kind, p.Namespace, p.Name))
		for _, cond := range p.Status.Conditions {
			if string(cond.Status) != "True" && cond.Message != "" {
				out = append(out, quoted{on: c, target: c, affects: c.Name, subject: fmt.Sprintf("Plan %s/%s", p.Namespace, p.Name),
					source: src + " status.conditions[" + string(cond.Type) + "]", msg: cond.Message, keys: keys})
			}
		}
	}
	for _, j := range c.Jobs {
		plan := j.Labels[suc.LabelPlan]
		if plan == "" {
			continue
		}
		if fc := suc.JobFailed(j); fc != nil && fc.Message != "" {
			out = append(out, quoted{on: c, target: c, affects: c.Name, subject: fmt.Sprintf("SUC Job %s/%s", j.Namespace, j.Name),
				source: sourceOf(c, ref("batch/v1", "Job", j.Namespace, j.Name)) + " status.conditions[Failed]", msg: fc.Message,
				keys: []string{PlanKey(c.Name, j.Namespace, plan)}})
		}
	}
	return out
}
