package serve

import (
	"context"
	"testing"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/source"
)

// The dashboard's cluster table shows the report's status of every cluster, the one every
// scan format shows: on the example, prod-eu-2 (whose Rancher drain is blocked, read on the
// management cluster) is an error cluster, and local holds incidents too. No API server is
// needed: the dashboard renders a judged report, here the example bundle's.
func TestDashboardShowsTheReportsClusterStatus(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: "../../examples/fleet-upgrade-stuck"}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep := judge.Judge(snap, judge.Options{Thresholds: check.NewThresholds(cat), Catalog: cat}).Report
	s := &Server{o: Options{Version: "test"}, last: &state{report: rep}}
	rows := map[string]dashCluster{}
	for _, c := range s.page().Clusters {
		rows[c.Name] = c
	}
	if len(rows) != len(rep.Clusters) {
		t.Errorf("%d dashboard rows, %d clusters in the report", len(rows), len(rep.Clusters))
	}
	for _, c := range rep.Clusters {
		worst := rows[c.Name].Worst
		if worst == "" {
			worst = "ok"
		}
		if worst != c.Status || rows[c.Name].Incidents != c.Incidents {
			t.Errorf("cluster %s: dashboard %s with %d incidents, report %s with %d", c.Name, worst, rows[c.Name].Incidents, c.Status, c.Incidents)
		}
	}
	if rows["prod-eu-2"].Worst != "error" || rows["local"].Worst == "" {
		t.Errorf("prod-eu-2 %q, local %q: want error and a severity", rows["prod-eu-2"].Worst, rows["local"].Worst)
	}
}
