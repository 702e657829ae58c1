package report

import (
	"fmt"
	"github.com/unstick-dev/unstick/internal/plural"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/textsafe"
	"github.com/unstick-dev/unstick/internal/textwrap"
)

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

type tableWriter struct {
	w     io.Writer
	color bool
	width int
	name  string // how the tool is invoked, for hints
	now   time.Time
	err   error
}

func (t *tableWriter) printf(format string, args ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format, args...)
	}
}

func (t *tableWriter) paint(code, s string) string {
	if !t.color {
		return s
	}
	return code + s + ansiReset
}

func (t *tableWriter) sev(s finding.Severity) string {
	label := fmt.Sprintf("%-8s", strings.ToUpper(s.String()))
	switch s {
	case finding.Critical:
		return t.paint(ansiBold+ansiRed, label)
	case finding.Error:
		return t.paint(ansiRed, label)
	case finding.Warning:
		return t.paint(ansiYellow, label)
	}
	return t.paint(ansiCyan, label)
}

// wrap writes text indented, folded to the table width (textwrap: a word that fits a line
// is never split).
func (t *tableWriter) wrap(indent, text string) {
	width := t.width - utf8.RuneCountInString(indent)
	if width < 20 {
		width = 20
	}
	for _, para := range strings.Split(text, "\n") {
		for _, line := range textwrap.Lines(para, width) {
			t.printf("%s%s\n", indent, line)
		}
	}
}

func renderTable(w io.Writer, r *Report, o Options) error {
	t := &tableWriter{w: w, color: o.Color, width: o.Width, name: o.name(), now: r.EvaluatedAt}
	if t.width <= 0 {
		t.width = 100
	}
	t.printf("%s %s, %s, %s, %s (evaluated at %s)\n",
		t.paint(ansiBold, "unstick scan:"), plural.Forms(len(r.Clusters), "cluster", "clusters"), plural.Forms(len(r.Incidents), "incident", "incidents"),
		plural.Forms(len(r.Findings), "finding", "findings"), plural.Forms(len(r.Errors), "error", "errors"), r.EvaluatedAt.Format(time.RFC3339))
	t.preamble(r)
	if line := contextLine(r.Clusters); line != "" {
		t.wrap("", line)
	}
	if len(r.Incidents) == 0 {
		t.verdictLine(r)
	} else {
		t.printf("\n%s (%s)\n", t.paint(ansiBold, "INCIDENTS"), strings.Join(countBySeverity(r.Incidents), ", "))
		for i, inc := range r.Incidents {
			t.incident(i+1, inc)
		}
	}
	t.clusters(r)
	if len(r.Errors) > 0 {
		t.printf("\n%s\n", t.paint(ansiBold, "ERRORS (the scan went on)"))
		for _, e := range r.Errors {
			t.wrap("  ", "- "+e.String())
		}
	}
	if len(r.Skipped) > 0 {
		t.printf("\n%s\n", t.paint(ansiBold, "SKIPPED "+plural.Forms(len(r.Skipped), "document that was not read as a Kubernetes object", "documents that were not read as Kubernetes objects")))
		for i, s := range r.Skipped {
			if i == 10 {
				t.printf("  … and %d more (see -o json)\n", len(r.Skipped)-10)
				break
			}
			t.wrap("  ", "- "+s.File+": "+s.Reason)
		}
	}
	return t.err
}

func (t *tableWriter) incident(n int, inc finding.Incident) {
	rc := inc.RootCause
	t.printf("\n%s %s %s  %s\n", t.paint(ansiBold, fmt.Sprintf("%2d.", n)), t.sev(rc.Severity), t.paint(ansiBold, rc.ID), clusterLabel(rc))
	t.wrap("    ", rc.Summary)
	t.printf("    %s %s\n", t.paint(ansiDim, "object:"), rc.Object.String())
	for i, e := range rc.Evidence {
		if i == 4 {
			t.printf("    %s\n", t.paint(ansiDim, fmt.Sprintf("(+%d more evidence, see -o json)", len(rc.Evidence)-4)))
			break
		}
		t.wrap("      ", "• "+e.Text+"  ["+e.Source+"]")
	}
	if len(inc.Symptoms) > 0 {
		t.printf("    %s\n", t.paint(ansiDim, "symptoms:"))
		lines := symptomLines(inc)
		for i, l := range lines {
			if i == 8 {
				t.printf("      … and %d more\n", len(lines)-8)
				break
			}
			t.wrap("      ", l)
		}
	}
	if inc.NextStep != nil {
		step := *inc.NextStep
		t.printf("    %s\n", t.paint(ansiDim, "next safe step ("+step.Rung+"):"))
		t.wrap("      ", step.Action)
		// A command stands whole on its own line, however long: a folded command pasted
		// into a shell runs as two.
		for _, c := range step.Commands {
			t.printf("        $ %s\n", c)
		}
		for _, n := range step.Notes {
			t.wrap("        ", "("+n+")")
		}
		t.printf("    %s\n", t.paint(ansiDim, "full ladder: "+t.name+" explain "+rc.ID))
	}
}

func clusterLabel(f finding.Finding) string {
	l := "[" + f.Cluster + "]"
	if f.Affects != "" && f.Affects != f.Cluster {
		l = "[" + f.Cluster + " → " + f.Affects + "]"
	}
	return l
}

func (t *tableWriter) clusters(r *Report) {
	if len(r.Clusters) == 0 {
		return
	}
	t.printf("\n%s\n", t.paint(ansiBold, "CLUSTERS"))
	t.printf("  %-24s %-11s %8s %9s %9s  %-10s  %s\n", "NAME", "ROLE", "OBJECTS", "FINDINGS", "INCIDENTS", "STATUS", "CONTEXT")
	for _, c := range r.Clusters {
		status, _ := r.StatusOf(c.Name)
		t.printf("  %s %-11s %8d %9d %9d  %-10s  %s\n", pad(textsafe.ClipRunes(c.Name, 24), 24), c.Role, c.Objects, c.Findings, c.Incidents, status, contextLabel(c))
	}
}

// pad left-aligns s in n columns, counting characters rather than bytes.
func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

func contextLabel(c Cluster) string {
	if c.ContextSource == "cluster name" {
		return c.Context + " (name)" // explained by contextLine
	}
	if c.ContextSource == string(snapshot.ContextUnknown) {
		return snapshot.ContextPlaceholder + " (not recorded)" // explained by contextLine
	}
	return c.Context
}

// contextLine says which kubeconfig context the commands carry, and says so loudest when
// it is only the cluster's name because nothing recorded the context.
func contextLine(cs []Cluster) string {
	var guessed, unknown []string
	for _, c := range cs {
		switch c.ContextSource {
		case "cluster name":
			guessed = append(guessed, c.Name)
		case string(snapshot.ContextUnknown):
			unknown = append(unknown, c.Name)
		}
	}
	switch {
	case len(cs) == 0:
		return ""
	case len(unknown) == len(cs):
		return "Commands carry --context " + snapshot.ContextPlaceholder + ": the bundle recorded no kubeconfig context for " + strings.Join(unknown, ", ") + "; put yours in its place."
	case len(unknown) > 0:
		return "Commands carry --context " + snapshot.ContextPlaceholder + " for " + strings.Join(unknown, ", ") + " (the bundle recorded no context for it), elsewhere the context in CONTEXT below."
	case len(guessed) == 0 && kubeconfigOf(cs) != "":
		return "Commands carry --kubeconfig " + kubeconfigOf(cs) + " and --context: the context each cluster was read through (CONTEXT below)."
	case len(guessed) == 0:
		return "Commands carry --context: the kubeconfig context each cluster was read through or collected from (CONTEXT below)."
	case len(guessed) == len(cs):
		return "Commands carry --context with each cluster's name: the input recorded no kubeconfig context; change it where yours differs."
	}
	if len(guessed) > 5 {
		guessed = append(guessed[:5], "…")
	}
	return fmt.Sprintf("Commands carry --context: the recorded kubeconfig context, except for %s, where nothing recorded one and the cluster's name stands in.", strings.Join(guessed, ", "))
}

// kubeconfigOf is the kubeconfig file every cluster's commands name, if they all name one.
func kubeconfigOf(cs []Cluster) string {
	file := cs[0].Kubeconfig
	for _, c := range cs[1:] {
		if c.Kubeconfig != file {
			return ""
		}
	}
	return file
}

// preamble prints what the reader must know before the incidents: timestamps left out of the
// evaluation time, other warnings, and what filters and suppressions hid.
func (t *tableWriter) preamble(r *Report) {
	for _, w := range r.Warnings {
		t.wrap("", t.paint(ansiYellow, "WARNING: ")+w)
	}
	if h := r.HiddenSummary(); h != "" {
		t.wrap("", "Hidden: "+h+".")
	}
	if r.Verdict == VerdictFindings && r.Incomplete() {
		t.wrap("", t.paint(ansiYellow, "WARNING: ")+"part of the input could not be read ("+strings.Join(r.Gaps(), "; ")+"): more may be stuck than this report shows.")
	}
}

// verdictLine says what an empty incident list means: the all-clear only when everything
// was read.
func (t *tableWriter) verdictLine(r *Report) {
	switch r.Verdict {
	case VerdictIncomplete:
		t.printf("\n%s\n", t.paint(ansiBold, "INCOMPLETE: no verdict for what could not be read."))
		t.wrap("  ", fmt.Sprintf("Nothing at or above %s was found in what was read, but %s. Fix the input (see below) or pass --allow-incomplete to accept a partial read.", r.FailOn, strings.Join(r.Gaps(), "; ")))
	case VerdictFindings:
		t.printf("\nNo incidents; findings at or above %s are listed in -o json.\n", r.FailOn)
	default:
		t.printf("\n%s\n", t.paint(ansiBold, r.ClearSentence()))
	}
}
