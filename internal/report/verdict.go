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

// Incomplete says whether some input was not read: an error while loading or judging, or a
// cluster with no objects at all.
func (r *Report) Incomplete() bool {
	if len(r.Errors) > 0 {
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
	return out
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
