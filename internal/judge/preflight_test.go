package judge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/source"
)

// A preflight reports what a scan reports and more (a Fleet agent without resource requests
// where nothing shows it biting yet), but the more never joins an incident scan reports: on a
// real crash loop of an agent whose management cluster lacks a CRD, a preflight that grouped
// the downstream agent's missing requests with it made the incident affect down-1 and moved
// its status. Every scan incident is in the preflight with the same root cause, symptoms and
// clusters; every other preflight incident holds only findings marked PreflightOnly.
func TestPreflightKeepsScansIncidents(t *testing.T) {
	for _, dir := range []string{example, "../../testdata/scenarios/real/agent-crd-missing"} {
		t.Run(dir, func(t *testing.T) {
			snap, err := (&source.Offline{Path: dir}).Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			o := options(t, nil)
			scan := judge.Judge(snap, o).Report
			o.Preflight = true
			pre := judge.Judge(snap, o).Report
			want := map[string]bool{}
			for _, inc := range scan.Incidents {
				want[shape(inc)] = true
			}
			own := 0
			for _, inc := range pre.Incidents {
				if want[shape(inc)] {
					delete(want, shape(inc))
					continue
				}
				own++
				for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
					if !f.PreflightOnly {
						t.Errorf("preflight incident %s holds %s, which scan reports, apart from scan's incidents", shape(inc), f.ID)
					}
				}
			}
			for k := range want {
				t.Errorf("scan's incident %s is not in the preflight as scan reports it", k)
			}
			if own == 0 {
				t.Error("the preflight reports nothing of its own here: the test would pass on anything")
			}
			for _, f := range scan.Findings {
				if f.PreflightOnly {
					t.Errorf("scan marks %s as preflight-only", f.ID)
				}
			}
		})
	}
}

// shape is an incident's root cause, symptoms and clusters.
func shape(inc finding.Incident) string {
	var ids []string
	for _, f := range inc.Symptoms {
		ids = append(ids, f.ID+"@"+f.Cluster)
	}
	rc := inc.RootCause
	return rc.ID + " " + rc.Cluster + " " + rc.Object.String() + " [" + strings.Join(ids, " ") + "] " + strings.Join(inc.Clusters, ",")
}
