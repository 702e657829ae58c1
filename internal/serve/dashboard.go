package serve

import (
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

//go:embed dashboard.html
var dashboardHTML string

// dashboardTmpl is parsed on the first page served, not by every process at start.
var dashboardTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("dashboard").Parse(dashboardHTML))
})

type dashPage struct {
	Version     string
	Ready       bool
	EvaluatedAt string
	Refresh     int
	// Verdict is the report's verdict at --fail-on (findings, incomplete, clear), and
	// VerdictNote what it means for this serve's flags.
	Verdict, VerdictNote string
	Counts               []dashCount
	Incidents            []dashIncident
	Clusters             []dashCluster
	Errors               []finding.ScanError

	// Shard says which part of the fleet this replica shows when serve is sharded.
	Shard string
}

type dashCount struct {
	Severity string
	N        int
}

type dashIncident struct {
	Severity, ID, Cluster, Summary, Age, Object string
	// Affects are the clusters the incident affects (finding.Incident.Clusters).
	Affects  []string
	Symptoms int
	Evidence []finding.Evidence
	// Next is the incident's next safe step, as every report prints it.
	Next    *finding.Step
	Explain string
}

type dashCluster struct {
	Name, Role string
	// Status is the report's status of the cluster (report.StatusOf): a severity, ok,
	// incomplete, no data or hidden; Worst is the severity among them, for the badge.
	Status, Worst string
	Drift         string // how long the Fleet agent has not been the one wanted, or "–"
	Heartbeat     string
	Pending       []string // namespace/release (age)
	Plans         []string // plan (age)
	Cordoned      int
	Incidents     int // incidents affecting the cluster, wherever their evidence is
}

func (s *Server) dashboard(w http.ResponseWriter, _ *http.Request) {
	p := s.page()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page is self-contained: nothing is loaded from anywhere else.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := dashboardTmpl().Execute(w, p); err != nil {
		s.o.Log.Error("rendering the dashboard", "err", err)
	}
}

// page renders the last evaluation: everything it shows is the report's (incidents, their
// evidence and next steps, cluster statuses, the verdict) or the measured ages.
func (s *Server) page() dashPage {
	p := dashPage{Version: s.o.Version, Ready: s.Ready(), Refresh: 15}
	st := s.snapshotState()
	if st == nil {
		return p
	}
	rep := st.report
	p.EvaluatedAt = rep.EvaluatedAt.Format(time.RFC3339)
	p.Verdict, p.VerdictNote = rep.Verdict, s.verdictNote(rep)
	p.Shard = st.fleet.describe()
	p.Counts = severityCounts(rep.Findings)
	for _, inc := range rep.Incidents {
		p.Incidents = append(p.Incidents, dashIncidentOf(inc, rep.EvaluatedAt))
	}
	p.Clusters = clusterRows(rep, st.ages, st.fleet)
	p.Errors = rep.Errors
	p.clean()
	return p
}

// verdictNote says what the verdict means as scan's exit code would.
func (s *Server) verdictNote(rep *report.Report) string {
	switch rep.Verdict {
	case report.VerdictFindings:
		return "findings at or above --fail-on " + rep.FailOn
	case report.VerdictIncomplete:
		if s.o.AllowIncomplete {
			return "part of the fleet could not be read (accepted: --allow-incomplete)"
		}
		return "part of the fleet could not be read: not an all-clear"
	}
	if rep.FailOn == "none" {
		return "everything read; --fail-on none: no finding fails the verdict"
	}
	return "everything read, nothing at or above --fail-on " + rep.FailOn
}

func severityCounts(fs []finding.Finding) []dashCount {
	count := map[finding.Severity]int{}
	for _, f := range fs {
		count[f.Severity]++
	}
	var out []dashCount
	for _, sev := range []finding.Severity{finding.Critical, finding.Error, finding.Warning, finding.Info} {
		out = append(out, dashCount{sev.String(), count[sev]})
	}
	return out
}

func dashIncidentOf(inc finding.Incident, now time.Time) dashIncident {
	f := inc.RootCause
	d := dashIncident{Severity: inc.Worst().String(), ID: f.ID, Cluster: about(f), Summary: f.Summary, Symptoms: len(inc.Symptoms),
		Object: f.Object.Kind + " " + strings.TrimPrefix(f.Object.Namespace+"/"+f.Object.Name, "/"), Explain: "unstick explain " + f.ID,
		Affects: append([]string(nil), inc.Clusters...), Evidence: append([]finding.Evidence(nil), f.Evidence...)}
	if inc.NextStep != nil {
		st := *inc.NextStep
		st.Commands, st.Notes = append([]string(nil), st.Commands...), append([]string(nil), st.Notes...)
		d.Next = &st
	}
	if f.Since != nil {
		d.Age = human(now.Sub(*f.Since))
	}
	return d
}

// clusterRows are one row per cluster read or affected by an incident, with the report's
// status, worst first.
func clusterRows(rep *report.Report, ages []finding.Finding, f *fleetMap) []dashCluster {
	rows := map[string]*dashCluster{}
	for _, name := range statusClusters(rep, f) {
		rows[name] = &dashCluster{Name: name, Drift: "–", Heartbeat: "–"}
	}
	for _, c := range rep.Clusters {
		rows[c.Name].Role = c.Role
	}
	for _, f := range ages {
		if f.Since != nil {
			addAge(rows, f, human(rep.EvaluatedAt.Sub(*f.Since)))
		}
	}
	out := make([]dashCluster, 0, len(rows))
	for name, r := range rows {
		r.Status, r.Incidents = rep.StatusOf(name)
		if _, err := finding.ParseSeverity(r.Status); err == nil {
			r.Worst = r.Status
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank(a.Worst) != rank(b.Worst) {
			return rank(a.Worst) > rank(b.Worst)
		}
		return a.Name < b.Name
	})
	return out
}

// addAge puts one measured age in its cluster's row (a row is added for a cluster only the
// ages name: a Fleet cluster whose agent never checked in).
func addAge(rows map[string]*dashCluster, f finding.Finding, age string) {
	r := rows[about(f)]
	if r == nil {
		r = &dashCluster{Name: about(f), Drift: "–", Heartbeat: "–"}
		rows[r.Name] = r
	}
	switch f.ID {
	case "fleet/agent-heartbeat-stale":
		r.Heartbeat = age
		if r.Role == "" {
			r.Role = "downstream (via Fleet)"
		}
	case "fleet/agent-upgrade-stuck":
		r.Drift = age
	case "helm/release-pending":
		r.Pending = append(r.Pending, fmt.Sprintf("%s/%s (%s)", f.Object.Namespace, f.Vars["release"], age))
	case "suc/plan-stuck":
		r.Plans = append(r.Plans, fmt.Sprintf("%s (%s)", f.Object.Name, age))
	case "suc/node-left-cordoned":
		r.Cordoned++
	}
}

func rank(w string) int {
	sev, err := finding.ParseSeverity(w)
	if err != nil {
		return 0
	}
	return int(sev)
}

// clean strips what a terminal or a browser's copy buffer could act on from every text the
// page shows: names, summaries, evidence, commands and errors come from cluster objects, and
// html/template escapes markup but passes an ESC or an OSC 52 sequence through as it is.
func (p *dashPage) clean() {
	line := textsafe.Line
	for i := range p.Incidents {
		d := &p.Incidents[i]
		d.ID, d.Cluster, d.Summary, d.Object, d.Explain = line(d.ID), line(d.Cluster), line(d.Summary), line(d.Object), line(d.Explain)
		d.Affects = cleanLines(d.Affects)
		for j := range d.Evidence {
			d.Evidence[j].Source, d.Evidence[j].Text = line(d.Evidence[j].Source), line(d.Evidence[j].Text)
		}
		if d.Next != nil {
			d.Next.Rung, d.Next.Action, d.Next.Risk = line(d.Next.Rung), line(d.Next.Action), line(d.Next.Risk)
			d.Next.Commands, d.Next.Notes = cleanLines(d.Next.Commands), cleanLines(d.Next.Notes)
		}
	}
	for i := range p.Clusters {
		c := &p.Clusters[i]
		c.Name, c.Role, c.Status, c.Drift, c.Heartbeat = line(c.Name), line(c.Role), line(c.Status), line(c.Drift), line(c.Heartbeat)
		c.Pending, c.Plans = cleanLines(c.Pending), cleanLines(c.Plans)
	}
	errs := make([]finding.ScanError, len(p.Errors))
	for i, e := range p.Errors {
		e.Cluster, e.Check, e.File, e.Message = line(e.Cluster), line(e.Check), line(e.File), line(e.Message)
		errs[i] = e
	}
	p.Errors = errs
}

func cleanLines(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = textsafe.Line(s)
	}
	return out
}

// human prints a duration the way an operator says it: 3d4h, 2h5m, 40s.
func human(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	case d >= time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
