package check

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
)

// Filter narrows what a scan reports.
type Filter struct {
	// Only keeps these IDs; an entry ending in "/" or "/*" keeps a whole family.
	Only []string
	// Clusters keeps findings on, or about, these clusters.
	Clusters []string
}

// Keep reports whether the filter lets x through.
func (f Filter) Keep(x finding.Finding) bool {
	if len(f.Only) > 0 {
		ok := false
		for _, o := range f.Only {
			o = strings.TrimSuffix(o, "*")
			if x.ID == o || (strings.HasSuffix(o, "/") && strings.HasPrefix(x.ID, o)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Clusters) > 0 {
		for _, c := range f.Clusters {
			if x.Cluster == c || x.Affects == c {
				return true
			}
		}
		return false
	}
	return true
}

// Evaluate runs every registered check over the snapshot and groups the findings into
// incidents.
func Evaluate(ctx *Context, filter Filter) ([]finding.Incident, []finding.Finding, []finding.ScanError) {
	res := Run(ctx, All())
	kept := res.Findings[:0]
	for _, f := range res.Findings {
		if filter.Keep(f) {
			kept = append(kept, f)
		}
	}
	incidents, fs := Group(ctx, kept)
	return incidents, fs, res.Errors
}
