package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/textsafe"
	"github.com/unstick-dev/unstick/internal/textwrap"
)

// Formats are the output formats of a trace.
func Formats() []string { return []string{"table", "json", "html"} }

// RenderOptions shape the table.
type RenderOptions struct {
	// Width is the terminal's width; 0 means 100.
	Width int
	// Name is how the tool is invoked ("unstick", "kubectl unstick").
	Name string
	// Version is the tool's version, for the HTML page.
	Version string
}

// Render writes tr in format.
func Render(w io.Writer, tr *Trace, format string, o RenderOptions) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(tr)
	case "html":
		return renderHTML(w, tr, o)
	case "table", "":
		return renderTable(w, tr, o)
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(Formats(), ", "))
}

// rowsListed is how many per-cluster rows the table lists before summarising: every stopped
// row is listed, up to this many, and the reached rows only when all fit.
const rowsListed = 20

func renderTable(w io.Writer, tr *Trace, o RenderOptions) error {
	width := o.Width
	if width <= 0 {
		width = 100
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s trace %s: %s\n", nameOr(o.Name), textsafe.Line(tr.Input), headline(tr))
	if tr.Note != "" {
		fmt.Fprintf(b, "note: %s\n", textsafe.Line(tr.Note))
	}
	fmt.Fprintf(b, "%s\n\n", tableVerdict(tr))
	stageTable(b, tr.Stages, width)
	clusterTable(b, tr, width)
	incidentBlock(b, tr, width)
	_, err := io.WriteString(w, b.String())
	return err
}

func nameOr(n string) string {
	if n == "" {
		return "unstick"
	}
	return n
}

func headline(tr *Trace) string {
	var parts []string
	if tr.GitRepo != "" {
		parts = append(parts, "GitRepo "+tr.GitRepo)
	}
	if tr.Commit != "" {
		parts = append(parts, "commit "+short(tr.Commit))
	}
	parts = append(parts, fmt.Sprintf("%d %s", len(tr.Bundles), plural(len(tr.Bundles), "Bundle", "Bundles")))
	parts = append(parts, "evaluated at "+tr.EvaluatedAt.UTC().Format(time.RFC3339))
	return textsafe.Line(strings.Join(parts, ", "))
}

func tableVerdict(tr *Trace) string {
	switch tr.Verdict {
	case VerdictStopped:
		return "STOPPED at " + tr.StoppedAt
	case VerdictPending:
		return "PENDING at " + tr.StoppedAt + ": no incident says it is stuck (within scan's thresholds)"
	}
	return "REACHED: the change is rolled out wherever it was read"
}

// stageTable prints one line per stage; the detail folds under the DETAIL column.
func stageTable(b *strings.Builder, stages []Stage, width int) {
	const head = "   %-17s %-9s %-20s "
	fmt.Fprintf(b, head+"%s\n", "STAGE", "STATUS", "REACHED AT", "DETAIL")
	indent := len(fmt.Sprintf(head, "", "", ""))
	for _, st := range stages {
		mark := "  "
		if st.Stopped {
			mark = "▶ "
		}
		lines := textwrap.Lines(textsafe.Line(st.Detail), max(width-indent, 30))
		fmt.Fprintf(b, " %s%-17s %-9s %-20s %s\n", mark, st.Name, st.Status, at(st.At), first(lines))
		for _, l := range rest(lines) {
			fmt.Fprintf(b, "%s%s\n", strings.Repeat(" ", indent), l)
		}
	}
}

func at(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func first(ls []string) string {
	if len(ls) == 0 {
		return ""
	}
	return ls[0]
}

func rest(ls []string) []string {
	if len(ls) < 2 {
		return nil
	}
	return ls[1:]
}

// clusterTable lists the per-cluster rows: every one when they fit, else the stopped ones
// and a count of the rest.
func clusterTable(b *strings.Builder, tr *Trace, width int) {
	if len(tr.Clusters) == 0 {
		return
	}
	rows, hidden := listedRows(tr.Clusters)
	fmt.Fprintf(b, "\nPER CLUSTER (%s)\n", rowCount(len(tr.Clusters), hidden))
	for _, r := range rows {
		mark := "  "
		if r.StoppedAt != "" {
			mark = "▶ "
		}
		fmt.Fprintf(b, " %s%s  %s\n", mark, textsafe.Line(r.Cluster), textsafe.Line(r.Bundle))
		for _, st := range r.Stages {
			lines := textwrap.Lines(textsafe.Line(st.Detail), max(width-42, 30))
			fmt.Fprintf(b, "     %-17s %-9s %-9s %s\n", st.Name, st.Status, shortAt(st.At), first(lines))
			for _, l := range rest(lines) {
				fmt.Fprintf(b, "%s%s\n", strings.Repeat(" ", 42), l)
			}
		}
	}
}

func shortAt(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("01-02 15:04")
}

func listedRows(rows []ClusterRow) ([]ClusterRow, int) {
	if len(rows) <= rowsListed {
		return rows, 0
	}
	var out []ClusterRow
	for _, r := range rows {
		if r.StoppedAt != "" && len(out) < rowsListed {
			out = append(out, r)
		}
	}
	return out, len(rows) - len(out)
}

func rowCount(n, hidden int) string {
	s := fmt.Sprintf("%s %s", num(n), plural(n, "row", "rows"))
	if hidden > 0 {
		s += fmt.Sprintf("; %s not listed: reached, or beyond the first %d stopped", num(hidden), rowsListed)
	}
	return s
}

func incidentBlock(b *strings.Builder, tr *Trace, width int) {
	if inc := tr.Incident; inc != nil {
		fmt.Fprintf(b, "\nWHY: incident %d of scan, %s %s [%s]\n", inc.Number, strings.ToUpper(inc.Severity), inc.RootCause, where(inc))
		for _, l := range textwrap.Lines(textsafe.Line(inc.Summary), max(width-4, 30)) {
			fmt.Fprintf(b, "    %s\n", l)
		}
		fmt.Fprintf(b, "    object: %s\n", textsafe.Line(inc.Object))
		if len(inc.Symptoms) > 0 {
			fmt.Fprintf(b, "    symptoms: %s\n", strings.Join(inc.Symptoms, ", "))
		}
		if inc.NextStep != "" {
			fmt.Fprintf(b, "    next safe step: %s\n", textsafe.Line(inc.NextStep))
		}
		fmt.Fprintf(b, "    full ladder: unstick explain %s\n", inc.RootCause)
	}
	if len(tr.Related) > 0 {
		fmt.Fprintf(b, "\nALSO ABOUT THIS CHAIN\n")
		for _, r := range tr.Related {
			fmt.Fprintf(b, "  incident %d: %s %s [%s]\n", r.Number, strings.ToUpper(r.Severity), r.RootCause, where(&r))
		}
	}
}

func where(inc *IncidentRef) string {
	if inc.Affects != "" && inc.Affects != inc.Cluster {
		return textsafe.Line(inc.Cluster + " → " + inc.Affects)
	}
	return textsafe.Line(inc.Cluster)
}
