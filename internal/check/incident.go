package check

import (
	"sort"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

// Group turns findings into incidents: findings that share a correlation key belong to one
// stuck upgrade, and the one the catalogue ranks highest is its root cause. The same root
// cause with the same failure signature on many clusters becomes one fleet/fleetwide-failure
// incident (a release or format problem, not N separate ones). It returns the incidents and
// the findings, including any fleet-wide finding it made.
func Group(ctx *Context, fs []finding.Finding) ([]finding.Incident, []finding.Finding) {
	parent := make([]int, len(fs))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	owner := map[string]int{}
	for i, f := range fs {
		for _, k := range f.Keys {
			if j, ok := owner[k]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[k] = i
			}
		}
	}
	groups := map[int][]finding.Finding{}
	var order []int
	for i := range fs {
		r := find(i)
		if _, ok := groups[r]; !ok {
			order = append(order, r)
		}
		groups[r] = append(groups[r], fs[i])
	}
	incidents := make([]finding.Incident, 0, len(order))
	for _, r := range order {
		g := groups[r]
		sort.SliceStable(g, func(i, j int) bool { return ctx.causeBefore(g[i], g[j]) })
		linkSymptoms(g)
		incidents = append(incidents, finding.NewIncident(g[0], append([]finding.Finding{}, g[1:]...)))
	}
	incidents, fs = ctx.fleetwide(incidents, fs)
	ctx.sortIncidents(incidents)
	return incidents, fs
}

// GroupApart groups base as Group does and extra apart from it: no finding of extra joins,
// or changes the root cause of, an incident of base; extra's findings form incidents of their
// own. A preflight keeps the findings only it reports apart from those scan reports this way.
func GroupApart(ctx *Context, base, extra []finding.Finding) ([]finding.Incident, []finding.Finding) {
	incidents, fs := Group(ctx, base)
	if len(extra) == 0 {
		return incidents, fs
	}
	more, extraFs := Group(ctx, extra)
	incidents, fs = append(incidents, more...), append(fs, extraFs...)
	SortFindings(fs)
	ctx.sortIncidents(incidents)
	return incidents, fs
}

// sortIncidents orders incidents worst first, then by the catalogue rank of their root cause,
// its cluster and object.
func (c *Context) sortIncidents(incidents []finding.Incident) {
	sort.SliceStable(incidents, func(i, j int) bool {
		a, b := incidents[i].RootCause, incidents[j].RootCause
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if ra, rb := c.rank(a.ID), c.rank(b.ID); ra != rb {
			return ra > rb
		}
		if a.Cluster != b.Cluster {
			return a.Cluster < b.Cluster
		}
		return a.Object.String() < b.Object.String()
	})
}

func (c *Context) rank(id string) int {
	if e, ok := c.Catalog.Get(id); ok {
		return e.Rank
	}
	return 0
}

// causeBefore orders an incident's findings: an error or worse before a warning or lower (an
// error is never the symptom of a warning), then a finding about a workload before one that
// waited for it (awaits), then higher catalogue rank, then worse severity,
// then the one that started first.
func (c *Context) causeBefore(a, b finding.Finding) bool {
	if ea, eb := a.Severity >= finding.Error, b.Severity >= finding.Error; ea != eb {
		return ea
	}
	if awaits(a, b) != awaits(b, a) {
		return awaits(b, a)
	}
	if ra, rb := c.rank(a.ID), c.rank(b.ID); ra != rb {
		return ra > rb
	}
	if a.Severity != b.Severity {
		return a.Severity > b.Severity
	}
	if ta, tb := sinceOr(a), sinceOr(b); !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if a.Cluster != b.Cluster {
		return a.Cluster < b.Cluster
	}
	return a.Object.String() < b.Object.String()
}

func sinceOr(f finding.Finding) time.Time {
	if f.Since != nil {
		return *f.Since
	}
	return time.Time{}
}

// affected names the cluster an incident is about: the downstream cluster it names in its
// keys (agent:<fleet-namespace>/<name> or a cluster name), else the finding's cluster.
func affected(inc finding.Incident) string {
	for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
		if f.Affects != "" {
			return f.Affects
		}
	}
	return inc.RootCause.Cluster
}
