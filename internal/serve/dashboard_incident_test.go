package serve

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/source"
)

// exampleReport is the example bundle judged as scan judges it, at --fail-on error.
func exampleReport(t *testing.T) *report.Report {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: example}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return judge.Judge(snap, judge.Options{Thresholds: check.NewThresholds(cat), Catalog: cat, FailOn: finding.Error}).Report
}

// The dashboard tells each incident as the reports do: its root cause's evidence and the
// incident's next safe step with its filled-in commands, taken from the report
// (finding.Incident.NextStep), and the verdict scan would give.
func TestDashboardShowsEvidenceAndNextStep(t *testing.T) {
	rep := exampleReport(t)
	s := &Server{o: Options{Version: "test"}, ready: true, last: &state{report: rep}}
	rec := httptest.NewRecorder()
	s.dashboard(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	page := html.UnescapeString(string(body)) // html/template escapes more than markup: '+' is &#43;
	commands := 0
	for _, inc := range rep.Incidents {
		for _, e := range inc.RootCause.Evidence {
			if !strings.Contains(page, e.Text) {
				t.Errorf("%s: the dashboard lacks the evidence %q", inc.RootCause.ID, e.Text)
			}
		}
		if inc.NextStep == nil {
			continue
		}
		if !strings.Contains(page, inc.NextStep.Action) {
			t.Errorf("%s: the dashboard lacks the next step %q", inc.RootCause.ID, inc.NextStep.Action)
		}
		for _, c := range inc.NextStep.Commands {
			commands++
			if !strings.Contains(page, c) {
				t.Errorf("%s: the dashboard lacks the command %q", inc.RootCause.ID, c)
			}
		}
	}
	if commands == 0 {
		t.Fatal("the example's incidents have no next-step commands: the test shows nothing")
	}
	if !strings.Contains(page, "verdict: findings") {
		t.Errorf("the dashboard does not give the verdict (findings at --fail-on error)")
	}
}

// /metrics takes every cluster's status and the verdict from the report, as the dashboard
// and /api/v1/findings do: on the example prod-eu-2, whose blocked drain is read on the
// management cluster, is in error.
func TestMetricsClusterStatusIsTheReports(t *testing.T) {
	rep := exampleReport(t)
	st := &state{report: rep}
	reg := prometheus.NewRegistry()
	newMetrics(reg, "test", func() *state { return st })
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, mf := range mfs {
		if mf.GetName() == "unstick_cluster_status" && len(mf.GetMetric()) != len(statusClusters(rep, nil)) {
			t.Errorf("%d unstick_cluster_status series, want one per cluster (%d)", len(mf.GetMetric()), len(statusClusters(rep, nil)))
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			fmt.Fprintf(&text, "%s %v\n", mf.GetName(), labels)
		}
	}
	for _, line := range []string{"unstick_cluster_status map[cluster:prod-eu-2 status:error]", "unstick_verdict map[verdict:findings]", "unstick_verdict_failing map[]"} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	for _, c := range statusClusters(rep, nil) {
		status, _ := rep.StatusOf(c)
		if !strings.Contains(text.String(), fmt.Sprintf("unstick_cluster_status map[cluster:%s status:%s]", c, status)) {
			t.Errorf("/metrics does not give %s the report's status %s", c, status)
		}
	}
}
