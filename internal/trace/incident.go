package trace

import (
	"sort"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
)

// attachIncidents ties the trace to the judgement: the incident about the objects where the
// change stopped is the trace's incident (a stage not reached that an incident is about has
// stopped, not merely not arrived yet); the other incidents about objects of the chain are
// related. An incident whose root cause the catalogue marks a risk (what an upgrade will run
// into, not something stuck) never explains a stop: it is related.
func attachIncidents(tr *Trace, rep *report.Report, cat *catalog.Catalog) {
	about := incidentIndex(rep.Incidents, func(id string) bool { return !isRisk(cat, id) })
	if tr.StoppedAt != "" {
		if n := firstMatch(about, stoppedRefs(tr)); n > 0 {
			tr.Incident = incidentRef(rep.Incidents, n)
		}
		if tr.Incident != nil {
			tr.Verdict = VerdictStopped
		}
	}
	for _, n := range allMatches(incidentIndex(rep.Incidents, nil), chainRefs(tr)) {
		if tr.Incident == nil || n != tr.Incident.Number {
			tr.Related = append(tr.Related, *incidentRef(rep.Incidents, n))
		}
	}
}

// incidentIndex maps each object a finding is about to the numbers (1-based) of the incidents
// holding such a finding, among those whose root cause keep accepts (nil: all).
func incidentIndex(incs []finding.Incident, keep func(id string) bool) map[objKey][]int {
	out := map[objKey][]int{}
	for i, inc := range incs {
		if keep != nil && !keep(inc.RootCause.ID) {
			continue
		}
		for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
			k := objKey{f.Cluster, f.Object.Kind, f.Object.Namespace, f.Object.Name}
			out[k] = append(out[k], i+1)
			k.cluster = ""
			out[k] = append(out[k], i+1)
		}
	}
	return out
}

func firstMatch(about map[objKey][]int, refs []objKey) int {
	if m := allMatches(about, refs); len(m) > 0 {
		return m[0]
	}
	return 0
}

// allMatches are the incidents about any of refs, by number. A ref without a cluster
// matches the object on any cluster.
func allMatches(about map[objKey][]int, refs []objKey) []int {
	seen := map[int]bool{}
	var out []int
	for _, r := range refs {
		for _, n := range about[r] {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out
}

// stoppedRefs are the objects of the stage where the change stopped: on the management side
// (commit, job, Bundle) the GitRepo's pipeline, whose objects share one story; for a
// per-cluster stage, those of the rows stopped there, at that stage and after it.
func stoppedRefs(tr *Trace) []objKey {
	if !perCluster(tr.StoppedAt) {
		var out []objKey
		for _, st := range tr.Stages {
			if !perCluster(st.Name) {
				out = append(out, st.refs...)
			}
		}
		return out
	}
	var out []objKey
	for _, r := range tr.Clusters {
		if r.StoppedAt != tr.StoppedAt {
			continue
		}
		for _, st := range r.Stages {
			out = append(out, st.refs...)
		}
	}
	return out
}

func chainRefs(tr *Trace) []objKey {
	var out []objKey
	for _, st := range tr.Stages {
		out = append(out, st.refs...)
	}
	return out
}

func perCluster(stage string) bool {
	return stage == StageDeployment || stage == StageRelease || stage == StageRollout
}

func isRisk(cat *catalog.Catalog, id string) bool {
	if cat == nil {
		return false
	}
	e, ok := cat.Get(id)
	return ok && e.Risk
}

func incidentRef(incs []finding.Incident, n int) *IncidentRef {
	inc := incs[n-1]
	f := inc.RootCause
	ref := &IncidentRef{Number: n, RootCause: f.ID, Severity: f.Severity.String(), Cluster: f.Cluster, Affects: f.Affects,
		Object: f.Object.String(), Summary: f.Summary, Clusters: inc.Clusters}
	for _, s := range inc.Symptoms {
		ref.Symptoms = append(ref.Symptoms, s.ID)
	}
	if st := inc.NextStep; st != nil {
		ref.NextStep = firstLine(st.Action)
		if len(st.Commands) > 0 {
			ref.NextStep = st.Commands[0]
		}
	}
	return ref
}
