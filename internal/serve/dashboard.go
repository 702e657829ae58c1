package serve

import (
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

//go:embed dashboard.html
var dashboardHTML string

var dashboardTmpl = template.Must(template.New("dashboard").Parse(dashboardHTML))

type dashPage struct {
	Version     string
	Ready       bool
	EvaluatedAt string
	Refresh     int
	Counts      []dashCount
	Incidents   []dashIncident
	Clusters    []dashCluster
	Errors      []finding.ScanError
}

type dashCount struct {
	Severity string
	N        int
}

type dashIncident struct {
	Severity, ID, Cluster, Summary, Age, Object string
	Symptoms                                    int
	Explain                                     string
}

type dashCluster struct {
	Name, Role, Worst string
	Agent             string // "ok", or how long the agent has drifted
	Heartbeat         string
	Pending           []string // namespace/release (age)
	Plans             []string // plan (age)
	Cordoned          int
	Incidents         int // incidents affecting the cluster, wherever their evidence is
}

func (s *Server) dashboard(w http.ResponseWriter, _ *http.Request) {
	p := s.page()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// The page is self-contained: nothing is loaded from anywhere else.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if err := dashboardTmpl.Execute(w, p); err != nil {
		s.o.Log.Error("rendering the dashboard", "err", err)
	}
}

func (s *Server) page() dashPage {
	p := dashPage{Version: s.o.Version, Ready: s.Ready(), Refresh: 15}
	st := s.snapshotState()
	if st == nil {
		return p
	}
	rep := st.report
	now := rep.EvaluatedAt
	p.EvaluatedAt = now.Format(time.RFC3339)
	count := map[finding.Severity]int{}
	for _, f := range rep.Findings {
		count[f.Severity]++
	}
	for _, sev := range []finding.Severity{finding.Critical, finding.Error, finding.Warning, finding.Info} {
		p.Counts = append(p.Counts, dashCount{sev.String(), count[sev]})
	}
	for _, inc := range rep.Incidents {
		f := inc.RootCause
		d := dashIncident{Severity: f.Severity.String(), ID: f.ID, Cluster: about(f), Summary: f.Summary, Symptoms: len(inc.Symptoms),
			Object: f.Object.Kind + " " + strings.TrimPrefix(f.Object.Namespace+"/"+f.Object.Name, "/"), Explain: "unstick explain " + f.ID}
		if f.Since != nil {
			d.Age = human(now.Sub(*f.Since))
		}
		p.Incidents = append(p.Incidents, d)
	}
	rows := map[string]*dashCluster{}
	row := func(name string) *dashCluster {
		r := rows[name]
		if r == nil {
			r = &dashCluster{Name: name, Agent: "ok", Heartbeat: "–"}
			rows[name] = r
		}
		return r
	}
	for _, c := range rep.Clusters {
		r := row(c.Name)
		r.Role = c.Role
	}
	for _, inc := range rep.Incidents {
		for _, c := range inc.Clusters {
			row(c)
		}
	}
	for _, f := range st.ages {
		if f.Since == nil {
			continue
		}
		age := human(now.Sub(*f.Since))
		r := row(about(f))
		switch f.ID {
		case "fleet/agent-heartbeat-stale":
			r.Heartbeat = age
			if r.Role == "" {
				r.Role = "downstream (via Fleet)"
			}
		case "fleet/agent-upgrade-stuck":
			r.Agent = "drifted " + age
		case "helm/release-pending":
			r.Pending = append(r.Pending, fmt.Sprintf("%s/%s (%s)", f.Object.Namespace, f.Vars["release"], age))
		case "suc/plan-stuck":
			r.Plans = append(r.Plans, fmt.Sprintf("%s (%s)", f.Object.Name, age))
		case "suc/node-left-cordoned":
			r.Cordoned++
		}
	}
	// Every row shows the report's status of its cluster: the incidents that affect it.
	for name, r := range rows {
		status, n := rep.StatusOf(name)
		r.Incidents = n
		if _, err := finding.ParseSeverity(status); err == nil {
			r.Worst = status
		}
	}
	for _, r := range rows {
		p.Clusters = append(p.Clusters, *r)
	}
	rank := func(w string) int {
		sev, err := finding.ParseSeverity(w)
		if err != nil {
			return 0
		}
		return int(sev)
	}
	sort.Slice(p.Clusters, func(i, j int) bool {
		a, b := p.Clusters[i], p.Clusters[j]
		if rank(a.Worst) != rank(b.Worst) {
			return rank(a.Worst) > rank(b.Worst)
		}
		return a.Name < b.Name
	})
	p.Errors = rep.Errors
	p.clean()
	return p
}

// clean strips what a terminal or a browser's copy buffer could act on from every text the
// page shows: names, summaries and errors come from cluster objects, and html/template
// escapes markup but passes an ESC or an OSC 52 sequence through as it is.
func (p *dashPage) clean() {
	line := textsafe.Line
	for i := range p.Incidents {
		d := &p.Incidents[i]
		d.ID, d.Cluster, d.Summary, d.Object, d.Explain = line(d.ID), line(d.Cluster), line(d.Summary), line(d.Object), line(d.Explain)
	}
	for i := range p.Clusters {
		c := &p.Clusters[i]
		c.Name, c.Role, c.Agent, c.Heartbeat = line(c.Name), line(c.Role), line(c.Agent), line(c.Heartbeat)
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
