package report

import (
	"fmt"
	"github.com/unstick-dev/unstick/internal/plural"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Verdicts. A scan says "clear" only when every input was read and judged: a cluster that
// could not be read, a forbidden list or an unreadable file makes the result incomplete.
const (
	VerdictFindings   = "findings"   // something at or above --fail-on (the input may still be incomplete: see Incomplete)
	VerdictIncomplete = "incomplete" // nothing at or above --fail-on, but input was not all read
	VerdictClear      = "clear"      // everything read, nothing at or above --fail-on
)

// Cluster statuses besides a severity.
const (
	StatusOK         = "ok"
	StatusIncomplete = "incomplete"
	StatusNoData     = "no data"
	StatusHidden     = "hidden" // its findings were all filtered or suppressed
)

// Hidden counts the findings the user's filters and suppressions kept out of the report.
type Hidden struct {
	Filtered   int `json:"filtered"`
	Suppressed int `json:"suppressed"`
}

// Clock says at what time the fleet was judged and why.
type Clock struct {
	// Source is one of now-flag (--now), live (read just now), recorded (the bundle's collection
	// metadata), newest (the newest timestamp in the bundle) or wall-clock.
	Source string `json:"source"`
	// Ignored are timestamps left out of "newest" as outliers.
	Ignored []snapshot.IgnoredTime `json:"ignored"`
}

// SetClusterStatuses gives every cluster its status from the incidents that affect it
// (finding.Incident.Clusters), whichever cluster holds their evidence: the one place a
// cluster's status is decided; the renderers only show it.
func (r *Report) SetClusterStatuses() {
	for i := range r.Clusters {
		c := &r.Clusters[i]
		worst, n := affectedBy(r.Incidents, c.Name)
		c.Incidents, c.Worst = n, ""
		if worst > 0 {
			c.Worst = worst.String()
		}
		c.Status = clusterStatus(*c, r.Errors)
	}
}

// affectedBy is the worst severity of the incidents affecting cluster, and their number.
func affectedBy(incs []finding.Incident, cluster string) (finding.Severity, int) {
	var worst finding.Severity
	n := 0
	for _, inc := range incs {
		if inc.Affects(cluster) {
			worst = max(worst, inc.Worst())
			n++
		}
	}
	return worst, n
}

// StatusOf is the status of a cluster as every view shows it, with the number of incidents
// affecting it: a read cluster's Status, or, for a cluster the incidents name that was not
// read itself (a Fleet cluster known to the management cluster), the worst severity of
// those incidents.
func (r *Report) StatusOf(name string) (string, int) {
	for _, c := range r.Clusters {
		if c.Name == name {
			if c.Status == "" {
				return StatusOK, c.Incidents
			}
			return c.Status, c.Incidents
		}
	}
	worst, n := affectedBy(r.Incidents, name)
	if worst > 0 {
		return worst.String(), n
	}
	return StatusOK, n
}

func clusterStatus(c Cluster, errs []finding.ScanError) string {
	switch {
	case c.Worst != "":
		return c.Worst
	case c.Objects == 0:
		return StatusNoData
	}
	for _, e := range errs {
		if e.Cluster == c.Name {
			return StatusIncomplete
		}
	}
	return StatusOK
}

// Incomplete says whether some input was not read or judged: an error while loading or
// judging, what the input did not let unstick judge (NotJudged), or a cluster with no
// objects at all.
func (r *Report) Incomplete() bool {
	if len(r.Errors) > 0 || len(r.NotJudged) > 0 {
		return true
	}
	for _, c := range r.Clusters {
		if c.Objects == 0 {
			return true
		}
	}
	return len(r.Clusters) == 0
}

// judge is the verdict at failOn (0: no finding fails).
func (r *Report) judge(failOn finding.Severity) string {
	if failOn > 0 {
		for _, f := range r.Findings {
			if f.Severity >= failOn {
				return VerdictFindings
			}
		}
	}
	if r.Incomplete() {
		return VerdictIncomplete
	}
	return VerdictClear
}

// SetVerdict judges the report at failOn (0 or FailNever: no finding fails it).
func (r *Report) SetVerdict(failOn finding.Severity) {
	if failOn >= FailNever {
		failOn = 0
	}
	r.Verdict = r.judge(failOn)
	r.InputComplete = !r.Incomplete()
	r.FailOn = "none"
	if failOn > 0 {
		r.FailOn = failOn.String()
	}
}

// Gaps lists, in words, why a verdict is incomplete: what was not read.
func (r *Report) Gaps() []string {
	var out []string
	if len(r.Clusters) == 0 {
		out = append(out, "no cluster was read")
	}
	var noData []string
	for _, c := range r.Clusters {
		if c.Objects == 0 {
			noData = append(noData, c.Name)
		}
	}
	if len(noData) > 0 {
		out = append(out, fmt.Sprintf("no objects were read for %s %s", plural.Forms(len(noData), "cluster", "clusters"), strings.Join(noData, ", ")))
	}
	if n := len(r.Errors); n > 0 {
		out = append(out, fmt.Sprintf("%s while reading or judging (listed under errors)", plural.Forms(n, "error", "errors")))
	}
	return append(out, r.NotJudged...)
}

// ClearSentence is what a clear verdict says: the all-clear, unless filters hid findings, in
// which case it says that nothing matched them rather than that nothing is stuck.
func (r *Report) ClearSentence() string {
	if n := r.Hidden.Filtered; n > 0 {
		return fmt.Sprintf("Nothing stuck matches the filters; they hid %s (drop --only/--only-cluster to see them).", plural.Forms(n, "finding", "findings"))
	}
	return "No stuck upgrades found."
}

// HiddenSummary says in words what filters and suppressions hid; empty when nothing was.
func (r *Report) HiddenSummary() string {
	var parts []string
	if n := r.Hidden.Filtered; n > 0 {
		parts = append(parts, fmt.Sprintf("%s hidden by filters (--only, --only-cluster)", plural.Forms(n, "finding", "findings")))
	}
	if n := r.Hidden.Suppressed; n > 0 {
		parts = append(parts, fmt.Sprintf("%s hidden by suppressions in the config file", plural.Forms(n, "finding", "findings")))
	}
	return strings.Join(parts, "; ")
}
