package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/report/reporttest"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

func render(t testing.TB, r *report.Report, format string, o report.Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := report.Render(&b, r, format, o); err != nil {
		t.Fatalf("rendering %s: %v", format, err)
	}
	return b.Bytes()
}

// The synthetic fleet looks like a real one: incidents of several kinds, a fleet-wide one.
func TestSyntheticFleetShape(t *testing.T) {
	r := reporttest.Fleet(2000)
	if len(r.Clusters) != 2001 {
		t.Fatalf("%d clusters, want 2001", len(r.Clusters))
	}
	ids := map[string]int{}
	for _, inc := range r.Incidents {
		ids[inc.RootCause.ID]++
	}
	if len(r.Incidents) < 150 || ids["fleet/fleetwide-failure"] != 1 || len(ids) < 7 {
		t.Errorf("unexpected shape: %d incidents, root causes %v", len(r.Incidents), ids)
	}
}

var (
	externalRef = regexp.MustCompile(`(?i)(<link\b|<img\b|<iframe\b|\bsrc\s*=|@import|url\(|https?://[^"<\s]*\.(?:js|css)\b)`)
	hrefAttr    = regexp.MustCompile(`\bhref\s*=\s*"([^"]*)"`)
)

// One self-contained file: no external script, style, font or image; every link an anchor.
func TestHTMLIsSelfContained(t *testing.T) {
	out := string(render(t, reporttest.Fleet(300), "html", report.Options{ToolVersion: "v0.0.0-test"}))
	if m := externalRef.FindString(out); m != "" {
		t.Errorf("the HTML report references something outside itself: %q", m)
	}
	for _, m := range hrefAttr.FindAllStringSubmatch(out, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("link to %q: the report must not link out", m[1])
		}
	}
	for _, want := range []string{"<!DOCTYPE html>", "<style>", "<script>", "<svg", "v0.0.0-test"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}

// Every incident, every cluster and every command of every fix ladder is in the page.
func TestHTMLShowsEveryIncidentAndCluster(t *testing.T) {
	r := reporttest.Fleet(2000)
	out := string(render(t, r, "html", report.Options{}))
	if n := strings.Count(out, `<article class="incident `); n != len(r.Incidents) {
		t.Errorf("%d incidents rendered, want %d", n, len(r.Incidents))
	}
	for i, inc := range r.Incidents {
		if !strings.Contains(out, fmt.Sprintf(`id="incident-%d"`, i+1)) {
			t.Errorf("incident %d (%s) missing", i+1, inc.RootCause.ID)
		}
	}
	if n := strings.Count(out, `<button type="button" class="tile `); n != len(r.Clusters) {
		t.Errorf("%d cluster tiles, want %d", n, len(r.Clusters))
	}
	if n, want := strings.Count(out, `<button type="button" class="copy">`), commands(r); n != want {
		t.Errorf("%d copy buttons, want one per command of every root cause's ladder (%d)", n, want)
	}
}

func commands(r *report.Report) int {
	n := 0
	for _, inc := range r.Incidents {
		for _, s := range inc.RootCause.Remediation {
			n += len(s.Commands)
		}
	}
	return n
}

// Finding text is data: markup in a summary, evidence or cluster name is escaped.
func TestHTMLEscapesFindingText(t *testing.T) {
	r := reporttest.Fleet(10)
	bad := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	r.Incidents[0].RootCause.Summary = bad
	r.Incidents[0].RootCause.Evidence = append(r.Incidents[0].RootCause.Evidence, finding.Evidence{Source: bad, Text: bad})
	r.Clusters[1].Name = `x" onmouseover="alert(1)`
	out := string(render(t, r, "html", report.Options{}))
	if strings.Contains(out, bad) || strings.Contains(out, `<img`) || strings.Contains(out, `x" onmouseover`) {
		t.Error("markup from a finding reached the page unescaped")
	}
	if !strings.Contains(out, "&lt;script&gt;") {
		t.Error("the escaped summary is missing")
	}
}

// The chart puts every stuck incident with a start time into exactly one bar, and leaves out
// the incidents whose root cause the catalogue marks a risk.
func TestHTMLChartCountsIncidents(t *testing.T) {
	r := reporttest.Fleet(500)
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	stuck := 0
	for _, inc := range r.Incidents {
		if e, ok := cat.Get(inc.RootCause.ID); !ok || !e.Risk {
			stuck++
		}
	}
	out := string(render(t, r, "html", report.Options{}))
	re := regexp.MustCompile(`<title>[^<]*: (\d+) incidents?</title>`)
	total := 0
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		var n int
		fmt.Sscan(m[1], &n)
		total += n
	}
	if total != stuck || stuck == len(r.Incidents) {
		t.Errorf("the chart counts %d incidents, want the %d stuck of %d", total, stuck, len(r.Incidents))
	}
}

// An empty fleet renders, too.
func TestEveryFormatRendersAnEmptyReport(t *testing.T) {
	r := &report.Report{SchemaVersion: report.SchemaVersion, EvaluatedAt: reporttest.EvaluatedAt}
	for _, f := range report.Formats {
		if out := render(t, r, f, report.Options{}); len(out) == 0 {
			t.Errorf("%s: empty output", f)
		}
	}
	if err := reporttest.ValidateSARIF(t, render(t, r, "sarif", report.Options{})); err != nil {
		t.Errorf("SARIF of an empty report: %v", err)
	}
}

// SARIF validates against the official 2.1.0 schema, with errors, skipped files and a
// finding whose ID this catalogue does not know.
func TestSARIFValidatesAgainstTheSchema(t *testing.T) {
	r := reporttest.Fleet(200)
	r.Skipped = append(r.Skipped, snapshot.Skipped{File: "README.md", Reason: "documentation, not a Kubernetes object"})
	r.Errors = append(r.Errors, finding.ScanError{File: "clusters/a b/broken.yaml", Line: 5, Message: "yaml: line 5: mapping values are not allowed"})
	odd := r.Incidents[0].RootCause
	odd.ID = "future/not-in-this-catalogue"
	r.Findings = append(r.Findings, odd)
	out := render(t, r, "sarif", report.Options{ToolVersion: "v1.2.3"})
	if err := reporttest.ValidateSARIF(t, out); err != nil {
		t.Fatalf("SARIF does not validate against the SARIF 2.1.0 schema: %v", err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Version string
					Rules   []struct{ ID string }
				}
			}
			Results []struct {
				RuleID    string
				RuleIndex int
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct{ URI, URIBaseID string }
						Region           *struct{ StartLine int }
					}
					LogicalLocations []struct{ Name, FullyQualifiedName, Kind string }
				}
			}
		}
	}
	if err := json.Unmarshal(out, &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if run.Tool.Driver.Version != "v1.2.3" || len(run.Tool.Driver.Rules) < 50 {
		t.Errorf("driver: version %q, %d rules", run.Tool.Driver.Version, len(run.Tool.Driver.Rules))
	}
	if len(run.Results) != len(r.Findings) {
		t.Errorf("%d results, want one per finding (%d)", len(run.Results), len(r.Findings))
	}
	physical := 0
	for _, res := range run.Results {
		if res.RuleIndex >= 0 && run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %s points at rule %d (%s)", res.RuleID, res.RuleIndex, run.Tool.Driver.Rules[res.RuleIndex].ID)
		}
		if res.RuleID == odd.ID && res.RuleIndex != -1 {
			t.Errorf("unknown rule %s has index %d", res.RuleID, res.RuleIndex)
		}
		l := res.Locations[0]
		if len(l.LogicalLocations) != 1 || l.LogicalLocations[0].Kind != "resource" || l.LogicalLocations[0].Name == "" {
			t.Errorf("%s: logical location %+v", res.RuleID, l.LogicalLocations)
		}
		if p := l.PhysicalLocation; p != nil {
			physical++
			if strings.HasPrefix(p.ArtifactLocation.URI, "event") || strings.Contains(p.ArtifactLocation.URI, " ") {
				t.Errorf("%s: %q is not a file", res.RuleID, p.ArtifactLocation.URI)
			}
		}
	}
	if physical == 0 {
		t.Error("no result has a physical location, though the evidence names files")
	}
}

// JUnit parses with a standard JUnit XML parser: one test case per check per cluster, the
// incidents at or above --fail-on as failures in the suite of every cluster they affect
// (a fleet-wide incident in each of its clusters), the rest in system-out; a suite fails
// exactly when its cluster's status is at or above --fail-on.
func TestJUnitParses(t *testing.T) {
	r := reporttest.Fleet(300)
	checks := []report.CheckInfo{
		{Name: "helm/releases", Emits: []string{"helm/release-pending", "helm/release-failed"}},
		{Name: "fleet/agent", Emits: []string{"fleet/agent-upgrade-stuck", "fleet/agent-heartbeat-stale", "fleet/agent-version-skew"}},
		{Name: "fleet/bundles", Emits: []string{"fleet/bundle-err-applied"}},
		{Name: "pods", Emits: []string{"pod/crashloop", "pod/unschedulable-taints", "image/pull-not-found"}},
		{Name: "workloads", Emits: []string{"workload/rollout-stalled"}},
		{Name: "agent/logs", Emits: []string{"agent/crd-missing", "agent/config-invalid"}},
		{Name: "suc", Emits: []string{"suc/image-missing", "suc/node-left-cordoned", "suc/plan-stuck"}},
	}
	out := render(t, r, "junit", report.Options{Checks: checks, FailOn: finding.Error})
	suites, err := junit.Ingest(out)
	if err != nil {
		t.Fatalf("JUnit does not parse: %v", err)
	}
	if len(suites) != len(r.Clusters) { // every check's IDs are owned: no fleet-wide suite
		t.Fatalf("%d suites, want %d", len(suites), len(r.Clusters))
	}
	failed, errored := map[string]bool{}, 0
	for _, s := range suites {
		if len(s.Tests) != len(checks) {
			t.Errorf("suite %s: %d tests, want one per check (%d)", s.Name, len(s.Tests), len(checks))
		}
		for _, tc := range s.Tests {
			switch tc.Status {
			case junit.StatusFailed:
				failed[s.Name] = true
				e, ok := tc.Error.(junit.Error)
				if !ok || !strings.Contains(e.Message, "incident") || !strings.Contains(e.Body, "unstick explain") {
					t.Errorf("%s/%s: a failure that does not carry its incidents: %+v", s.Name, tc.Name, tc.Error)
				}
			case junit.StatusError:
				errored++
			}
		}
		status, _ := r.StatusOf(s.Name)
		if s.Properties["status"] != status {
			t.Errorf("suite %s: status property %q, the report says %q", s.Name, s.Properties["status"], status)
		}
		sev, err := finding.ParseSeverity(status)
		if atOrAbove := err == nil && sev >= finding.Error; atOrAbove != failed[s.Name] {
			t.Errorf("suite %s: failed %v, but the cluster's status is %s", s.Name, failed[s.Name], status)
		}
	}
	fleetwide := 0
	for _, inc := range r.Incidents {
		if inc.RootCause.ID == "fleet/fleetwide-failure" {
			fleetwide++
			for _, c := range inc.Clusters {
				if !failed[c] {
					t.Errorf("the fleet-wide incident affects %s, whose suite does not fail", c)
				}
			}
		}
	}
	if fleetwide == 0 {
		t.Error("the synthetic fleet has no fleet-wide incident: the test lost its case")
	}
	if errored != 1 {
		t.Errorf("%d test cases errored, want 1 (the forbidden check)", errored)
	}

	// With --fail-on none nothing fails, and every finding is still listed.
	out = render(t, r, "junit", report.Options{Checks: checks, FailOn: report.FailNever})
	suites, err = junit.Ingest(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range suites {
		if s.Totals.Failed != 0 {
			t.Errorf("suite %s has %d failures with FailNever", s.Name, s.Totals.Failed)
		}
	}
	if !strings.Contains(string(out), "below the failure threshold") {
		t.Error("findings below --fail-on are not listed")
	}
}

func BenchmarkHTML2000(b *testing.B) {
	r := reporttest.Fleet(2000)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := report.Render(&buf, r, "html", report.Options{}); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "bytes/report")
}

func BenchmarkSARIF2000(b *testing.B) {
	r := reporttest.Fleet(2000)
	for b.Loop() {
		var buf bytes.Buffer
		if err := report.Render(&buf, r, "sarif", report.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
