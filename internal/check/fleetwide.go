package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

// fleetwideBucket is the incidents whose root causes share one ID and failure signature,
// and the clusters they affect.
type fleetwideBucket struct {
	idx      []int
	clusters map[string]bool
}

// fleetwide merges the incidents whose root causes share an ID and a signature on at least
// fleet.fleetwideMinClusters clusters into one fleet/fleetwide-failure incident each.
func (c *Context) fleetwide(incs []finding.Incident, fs []finding.Finding) ([]finding.Incident, []finding.Finding) {
	buckets, keys := fleetwideBuckets(incs)
	minClusters := c.Thresholds.Int("fleet.fleetwideMinClusters")
	merged := map[int]bool{}
	out := make([]finding.Incident, 0, len(incs))
	for _, k := range keys {
		b := buckets[k]
		if len(b.clusters) < minClusters {
			continue
		}
		for _, i := range b.idx {
			merged[i] = true
		}
		inc := c.fleetwideIncident(incs, b)
		fs = append(fs, inc.RootCause)
		out = append(out, inc)
	}
	for i, inc := range incs {
		if !merged[i] {
			out = append(out, inc)
		}
	}
	SortFindings(fs)
	return out, fs
}

func fleetwideBuckets(incs []finding.Incident) (map[string]*fleetwideBucket, []string) {
	buckets := map[string]*fleetwideBucket{}
	var keys []string
	for i, inc := range incs {
		sig := inc.RootCause.Signature
		if sig == "" {
			continue
		}
		k := inc.RootCause.ID + "\x00" + sig
		b := buckets[k]
		if b == nil {
			b = &fleetwideBucket{clusters: map[string]bool{}}
			buckets[k] = b
			keys = append(keys, k)
		}
		b.idx = append(b.idx, i)
		b.clusters[affected(inc)] = true
	}
	return buckets, keys
}

// fleetwideIncident is one bucket as one incident: a fleet/fleetwide-failure root cause that
// names the shared cause and quotes the error every member shares once, lists the affected
// clusters, and whose ladder puts the members' own fix before the resync, with every member
// finding as a symptom.
func (c *Context) fleetwideIncident(incs []finding.Incident, b *fleetwideBucket) finding.Incident {
	first := incs[b.idx[0]].RootCause
	names := make([]string, 0, len(b.clusters))
	for n := range b.clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	var symptoms []finding.Finding
	var since *time.Time
	for _, i := range b.idx {
		inc := incs[i]
		root := inc.RootCause
		root.LinkedBy = "signature:" + root.Signature
		symptoms = append(symptoms, root)
		symptoms = append(symptoms, inc.Symptoms...)
		if s := inc.RootCause.Since; s != nil && (since == nil || s.Before(*since)) {
			since = s
		}
	}
	cause := sharedText(incs, b)
	if cause == "" {
		cause = first.Summary
	}
	fw := c.New("fleet/fleetwide-failure", nil, first.Object, fmt.Sprintf("%d clusters fail the same way (%s): %s", len(names), first.ID, cause))
	// The finding points at the first member's object, so it names that object's cluster
	// (a downstream cluster for a Helm release, the management cluster for a
	// BundleDeployment); the evidence names every affected cluster.
	fw.Cluster = first.Cluster
	fw.Since = since
	fw.Evidence = []finding.Evidence{{Source: fmt.Sprintf("%d affected clusters", len(names)), Text: strings.Join(names, ", ")}}
	if !c.Measure && c.Snap != nil {
		personalise(indexSnapshot(c.Snap), &fw)
	}
	fw.Remediation = withMemberFix(fw.Remediation, first, len(names))
	sort.SliceStable(symptoms, func(i, j int) bool { return c.causeBefore(symptoms[i], symptoms[j]) })
	return finding.NewIncident(fw, symptoms)
}

// sharedText is the longest evidence text every merged incident quotes (in its root cause
// or a symptom): the error the clusters share, such as Helm's refusal or a removed API's
// mapping error. "" when they share none.
func sharedText(incs []finding.Incident, b *fleetwideBucket) string {
	count := map[string]int{}
	for _, i := range b.idx {
		seen := map[string]bool{}
		for _, f := range append([]finding.Finding{incs[i].RootCause}, incs[i].Symptoms...) {
			for _, e := range f.Evidence {
				if !seen[e.Text] {
					seen[e.Text] = true
					count[e.Text]++
				}
			}
		}
	}
	best := ""
	for text, n := range count {
		if n == len(b.idx) && (len(text) > len(best) || len(text) == len(best) && text < best) {
			best = text
		}
	}
	return best
}

// withMemberFix is the fleet-wide ladder with the first member's own steps (its root
// cause's ladder, filled in for its cluster) after the observe rung: the shared cause is
// fixed by what fixes it on one cluster, on each affected one, before any resync.
func withMemberFix(ladder []finding.Step, member finding.Finding, clusters int) []finding.Step {
	var fix []finding.Step
	for _, st := range member.Remediation {
		if st.Rung == "observe" {
			continue
		}
		st.Notes = append(append([]string(nil), st.Notes...),
			fmt.Sprintf("From the ladder of %s, filled in for cluster %s; the same holds on each of the %d affected clusters.", member.ID, subject(&member), clusters))
		fix = append(fix, st)
	}
	out := make([]finding.Step, 0, len(ladder)+len(fix))
	n := 0
	for n < len(ladder) && ladder[n].Rung == "observe" {
		n++
	}
	out = append(out, ladder[:n]...)
	out = append(out, fix...)
	return append(out, ladder[n:]...)
}
