package serve

import (
	"slices"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
)

// ownReport narrows a judged report to this replica's clusters: the findings about them,
// the incidents affecting one of them, their cluster lines and errors (and the errors of no
// cluster, such as a failed cluster list), with the verdict taken again over what is left.
// The judgement itself saw everything watched, the management cluster included, so an
// incident whose evidence is there still names this replica's cluster and its status.
func ownReport(rep *report.Report, f *fleetMap, failOn finding.Severity) {
	if !f.shard.sharded() {
		return
	}
	rep.Findings = slices.DeleteFunc(rep.Findings, func(x finding.Finding) bool { return !f.owns(about(x)) })
	rep.Incidents = slices.DeleteFunc(rep.Incidents, func(inc finding.Incident) bool { return !ownsAny(f, inc) })
	rep.Clusters = slices.DeleteFunc(rep.Clusters, func(c report.Cluster) bool { return !f.owns(c.Name) })
	rep.Errors = slices.DeleteFunc(rep.Errors, func(e finding.ScanError) bool { return !f.owns(e.Cluster) })
	rep.SetVerdict(failOn)
}

func ownsAny(f *fleetMap, inc finding.Incident) bool {
	if len(inc.Clusters) == 0 {
		return f.owns(about(inc.RootCause))
	}
	for _, c := range inc.Clusters {
		if f.owns(c) {
			return true
		}
	}
	return false
}

// ownAges keeps the measured ages about this replica's clusters.
func ownAges(ages []finding.Finding, f *fleetMap) []finding.Finding {
	if !f.shard.sharded() {
		return ages
	}
	return slices.DeleteFunc(ages, func(x finding.Finding) bool { return !f.owns(about(x)) })
}
