package cli

import (
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
	"github.com/unstick-dev/unstick/internal/report"
)

// remaining counts the incidents of plan that keep fix's exit at 3 under --fail-on: those
// whose most severe finding is at or above it, among the planned incidents (after an --apply
// run, res, only those it did not fix) and the guided ones. An incident the report does not
// hold counts, so that a gap never reads as fixed.
func (o *fixOptions) remaining(plan *remediate.Plan, rep *report.Report, res *execute.Result) int {
	if o.judge.failOn == "none" {
		return 0
	}
	sev := incidentSeverities(rep)
	counts := func(r remediate.Reason) bool {
		s, ok := sev[rootKey(r.FindingID, r.Cluster, r.Object)]
		return !ok || s >= o.judge.failSev
	}
	var isOpen map[string]bool
	if res != nil {
		isOpen = map[string]bool{}
		for _, io := range res.Incidents {
			isOpen[io.ID] = io.Outcome != execute.IncidentFixed
		}
	}
	n := 0
	for _, inc := range plan.Incidents {
		if (res == nil || isOpen[inc.ID]) && counts(inc.RootCause) {
			n++
		}
	}
	for _, m := range plan.Manual {
		if counts(m.Finding) {
			n++
		}
	}
	return n
}

// incidentSeverities is each incident's most severe finding, by its root cause.
func incidentSeverities(rep *report.Report) map[string]finding.Severity {
	out := map[string]finding.Severity{}
	if rep == nil {
		return out
	}
	for _, inc := range rep.Incidents {
		r := inc.RootCause
		max := r.Severity
		for _, s := range inc.Symptoms {
			max = maxSeverity(max, s.Severity)
		}
		k := rootKey(r.ID, r.Cluster, r.Object)
		out[k] = maxSeverity(out[k], max)
	}
	return out
}

func maxSeverity(a, b finding.Severity) finding.Severity {
	if b > a {
		return b
	}
	return a
}

func rootKey(id, cluster string, obj finding.ObjectRef) string {
	return id + "|" + cluster + "|" + obj.String()
}
