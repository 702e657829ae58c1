package report

import (
	_ "embed"
	"fmt"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/plural"
	"html"
	"html/template"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// The HTML report is one self-contained file: the page, its CSS, a small script for the
// filters and copy buttons, and an inline SVG chart. Nothing is loaded from anywhere, so it
// can be attached to a ticket and opened offline. Everything is rendered on the server
// side; the script only filters, regroups and copies, and the page reads fine without it.

//go:embed html.tmpl
var htmlSource string

// htmlTemplate is parsed on the first HTML report, not by every process at start.
var htmlTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"upper": strings.ToUpper,
	}).Parse(htmlSource))
})

// severities in display order, worst first; "ok" is a cluster with no finding about it.
var gridOrder = []string{"critical", "error", "warning", "info", "ok"}

// openIncidents is how many incidents are shown expanded; the rest start folded (their
// summary lines stay visible) so a report of a large fleet stays scannable.
const openIncidents = 20

// tilesOpen is how many tiles a grid group may hold and still start unfolded.
const tilesOpen = 300

// symptomsShown is how many symptoms an incident lists before folding the rest.
const symptomsShown = 12

type htmlPage struct {
	EvaluatedAt string
	ContextLine string // which kubeconfig context the commands carry
	Name        string // how the tool is invoked, for hints
	Version     string
	Clusters    int
	Scanned     int
	Findings    int
	Incidents   []htmlIncident
	SevCounts   []sevCount
	Groups      []tileGroup
	Chart       template.HTML
	Unknown     int // stuck incidents without a since
	Risks       []chartRisk
	Errors      []string
	Skipped     []snapshot.Skipped
	Verdict     string
	Gaps        string
	FailOn      string
	Warnings    []string
	Hidden      string
	Clear       string
}

type sevCount struct {
	Sev   string
	Count int
}

type tileGroup struct {
	Sev   string
	Label string
	Open  bool
	Tiles []tile
}

type tile struct {
	Name, Sev, Role, Prefix, Title string
}

type htmlIncident struct {
	N         int
	Open      bool
	Sev       string
	Clusters  string // space-separated, for the filter
	Where     string
	Age       string
	Root      htmlFinding
	Symptoms  []htmlFinding
	More      []htmlFinding // symptoms beyond symptomsShown
	NSymptoms int
	Ladder    []finding.Step
}

type htmlFinding struct {
	ID, Sev, Where, Object, Summary, Since, Age string
	Evidence                                    []finding.Evidence
}

func renderHTML(w io.Writer, r *Report, o Options) error {
	return htmlTemplate().Execute(w, buildPage(r, o))
}

func buildPage(r *Report, o Options) htmlPage {
	p := htmlPage{
		EvaluatedAt: r.EvaluatedAt.UTC().Format(time.RFC3339),
		ContextLine: contextLine(r.Clusters),
		Name:        o.name(),
		Version:     o.ToolVersion,
		Scanned:     len(r.Clusters),
		Findings:    len(r.Findings),
		Skipped:     r.Skipped,
		Verdict:     r.Verdict,
		Gaps:        strings.Join(r.Gaps(), "; "),
		FailOn:      r.FailOn,
		Warnings:    r.Warnings,
		Hidden:      r.HiddenSummary(),
		Clear:       r.ClearSentence(),
	}
	for _, e := range r.Errors {
		p.Errors = append(p.Errors, e.String())
	}
	counts := map[string]int{}
	for _, inc := range r.Incidents {
		counts[inc.RootCause.Severity.String()]++
	}
	for _, s := range gridOrder[:4] {
		p.SevCounts = append(p.SevCounts, sevCount{s, counts[s]})
	}
	p.Groups, p.Clusters = clusterGrid(r)
	for i, inc := range r.Incidents {
		p.Incidents = append(p.Incidents, htmlIncidentOf(r, i+1, inc))
	}
	cat, _ := catalogOf(o)
	p.Chart, p.Unknown, p.Risks = stuckChart(r, cat)
	return p
}

// clusterGrid groups every cluster by its status (Report.StatusOf): the worst incident
// affecting it, whichever cluster holds the evidence.
func clusterGrid(r *Report) ([]tileGroup, int) {
	roles := map[string]string{}
	contexts := map[string]string{}
	for _, c := range r.Clusters {
		roles[c.Name] = c.Role
		contexts[c.Name] = contextLabel(c)
	}
	bySev := map[string][]tile{}
	names := clusterNames(r)
	for _, n := range names {
		status, incs := r.StatusOf(n)
		sev := status
		if _, err := finding.ParseSeverity(status); err != nil {
			sev = "ok" // ok, hidden, incomplete, no data: no incident affects it
		}
		role := roles[n]
		if role == "" {
			role = "not scanned"
		}
		title := fmt.Sprintf("%s (%s): %s", n, role, plural.Of(incs, "incident"))
		if sev != "ok" {
			title += ", worst " + sev
		} else if status != StatusOK {
			title += ", " + status
		}
		if ctx := contexts[n]; ctx != "" {
			title += "; context " + ctx
		}
		bySev[sev] = append(bySev[sev], tile{Name: n, Sev: sev, Role: role, Prefix: namePrefix(n), Title: title})
	}
	var groups []tileGroup
	for _, s := range gridOrder {
		ts := bySev[s]
		if len(ts) == 0 {
			continue
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
		label := s
		if s == "ok" {
			label = "no incidents"
		}
		groups = append(groups, tileGroup{Sev: s, Label: label, Open: len(ts) <= tilesOpen || s != "ok", Tiles: ts})
	}
	return groups, len(names)
}

var trailingIndex = lazyre.New(`[-_.]?[0-9]+$`)

// namePrefix is a cluster name without its trailing number or last dash-separated part
// ("prod-eu-0042" → "prod-eu", "edge-arm-1" → "edge-arm"), the natural grouping of a fleet.
func namePrefix(name string) string {
	if p := trailingIndex().ReplaceAllString(name, ""); p != "" && p != name {
		return strings.TrimRight(p, "-_.")
	}
	if i := strings.LastIndexAny(name, "-_."); i > 0 {
		return name[:i]
	}
	return name
}

func htmlIncidentOf(r *Report, n int, inc finding.Incident) htmlIncident {
	rc := inc.RootCause
	h := htmlIncident{
		N:         n,
		Open:      n <= openIncidents,
		Sev:       rc.Severity.String(),
		Where:     where(rc),
		Root:      htmlFindingOf(r, rc),
		Ladder:    rc.Remediation,
		NSymptoms: len(inc.Symptoms),
	}
	h.Clusters = strings.Join(inc.Clusters, " ")
	if s := earliest(inc); s != nil {
		h.Age = humanDuration(r.EvaluatedAt.Sub(*s))
	}
	for i, s := range inc.Symptoms {
		hf := htmlFindingOf(r, s)
		if i < symptomsShown {
			h.Symptoms = append(h.Symptoms, hf)
		} else {
			h.More = append(h.More, hf)
		}
	}
	return h
}

func htmlFindingOf(r *Report, f finding.Finding) htmlFinding {
	h := htmlFinding{ID: f.ID, Sev: f.Severity.String(), Where: where(f), Object: f.Object.String(), Summary: f.Summary, Evidence: f.Evidence}
	if f.Since != nil {
		h.Since = f.Since.UTC().Format(time.RFC3339)
		h.Age = humanDuration(r.EvaluatedAt.Sub(*f.Since))
	}
	return h
}

func where(f finding.Finding) string {
	if f.Affects != "" && f.Affects != f.Cluster {
		return f.Cluster + " → " + f.Affects
	}
	return f.Cluster
}

// earliest is when the incident started: the earliest since among its findings.
func earliest(inc finding.Incident) *time.Time {
	var t *time.Time
	for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
		if f.Since != nil && (t == nil || f.Since.Before(*t)) {
			t = f.Since
		}
	}
	return t
}

// humanDuration prints a duration the way an operator says it: 45m, 2h17m, 3d4h.
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0m"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) - h*60; m != 0 {
			return fmt.Sprintf("%dh%dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	}
	days := int(d.Hours()) / 24
	if h := int(d.Hours()) - days*24; h != 0 {
		return fmt.Sprintf("%dd%dh", days, h)
	}
	return fmt.Sprintf("%dd", days)
}

// ageBuckets are the chart's columns: how long incidents have been stuck.
var ageBuckets = []struct {
	label string
	upTo  time.Duration
}{
	{"< 1h", time.Hour},
	{"1–6h", 6 * time.Hour},
	{"6–24h", 24 * time.Hour},
	{"1–3d", 72 * time.Hour},
	{"3–7d", 7 * 24 * time.Hour},
	{"1–4w", 28 * 24 * time.Hour},
	{"> 4w", 1<<63 - 1},
}

var sevColor = map[string]string{"critical": "#8e0b1f", "error": "#d93025", "warning": "#e8a200", "info": "#1a73e8"}

// chartRisk is an incident the duration chart leaves out because the catalogue marks its root
// cause a risk (catalog Entry.Risk): something an upgrade will run into, not something stuck.
type chartRisk struct {
	N  int
	ID string
}

// stuckChart is an inline SVG bar chart of the stuck incidents by how long they have been
// stuck (from the earliest since of their findings, root cause or symptom), stacked by
// severity; it also returns how many stuck incidents have no since and the risks it leaves
// out. Its text is fixed labels (escaped) and numbers, so it is built here and trusted by the
// template.
func stuckChart(r *Report, cat *catalog.Catalog) (template.HTML, int, []chartRisk) {
	counts := make([]map[string]int, len(ageBuckets))
	for i := range counts {
		counts[i] = map[string]int{}
	}
	unknown := 0
	var risks []chartRisk
	for i, inc := range r.Incidents {
		s := earliest(inc)
		switch {
		case isRisk(cat, inc.RootCause.ID):
			risks = append(risks, chartRisk{N: i + 1, ID: inc.RootCause.ID})
		case s == nil:
			unknown++
		default:
			counts[ageBucket(r.EvaluatedAt.Sub(*s))][inc.RootCause.Severity.String()]++
		}
	}
	return barChart(counts), unknown, risks
}

// isRisk reports whether the catalogue marks id a risk rather than a stuck state.
func isRisk(cat *catalog.Catalog, id string) bool {
	if cat == nil {
		return false
	}
	e, ok := cat.Get(id)
	return ok && e.Risk
}

// ageBucket is the column of ageBuckets an age falls in.
func ageBucket(age time.Duration) int {
	for i, b := range ageBuckets {
		if age < b.upTo {
			return i
		}
	}
	return len(ageBuckets) - 1
}

// barChart draws counts (per age bucket, per severity) as stacked bars.
func barChart(counts []map[string]int) template.HTML {
	peak := 1
	for _, c := range counts {
		total := 0
		for _, n := range c {
			total += n
		}
		peak = max(peak, total)
	}
	const (
		width, height     = 560, 190
		left, bottom, top = 36, 28, 14
		plotH             = height - bottom - top
	)
	colW := (width - left - 8) / len(ageBuckets)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-labelledby="chart-title">`, width, height, width, height)
	b.WriteString(`<title id="chart-title">Incidents by how long they have been stuck</title>`)
	// Horizontal guides at 0, half and the peak.
	for _, v := range []int{0, (peak + 1) / 2, peak} {
		y := top + plotH - v*plotH/peak
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" class="guide"/><text x="%d" y="%d" class="axis" text-anchor="end">%d</text>`, left, width-8, y, y, left-6, y+4, v)
	}
	for i, bucket := range ageBuckets {
		x := left + i*colW + 6
		y := top + plotH
		total := 0
		for _, sev := range gridOrder[:4] {
			n := counts[i][sev]
			if n == 0 {
				continue
			}
			h := n * plotH / peak
			if h < 2 {
				h = 2
			}
			y -= h
			total += n
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" class="bar bar-%s"><title>%s, %s: %s</title></rect>`,
				x, y, colW-12, h, sevColor[sev], sev, html.EscapeString(bucket.label), sev, plural.Of(n, "incident"))
		}
		if total > 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" class="count" text-anchor="middle">%d</text>`, x+(colW-12)/2, y-3, total)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" class="axis" text-anchor="middle">%s</text>`, x+(colW-12)/2, height-10, html.EscapeString(bucket.label))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // fixed labels and numbers only
}
