package report

import (
	"fmt"
	"github.com/unstick-dev/unstick/internal/plural"
	"io"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

func renderMarkdown(w io.Writer, r *Report, o Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# unstick scan\n\nEvaluated at %s: %s, %s, %s, %s.\n",
		r.EvaluatedAt.Format(time.RFC3339), plural.Forms(len(r.Clusters), "cluster", "clusters"), plural.Forms(len(r.Incidents), "incident", "incidents"),
		plural.Forms(len(r.Findings), "finding", "findings"), plural.Forms(len(r.Errors), "error", "errors"))
	fmt.Fprintf(&b, "\n**Verdict: %s**", r.Verdict)
	switch r.Verdict {
	case VerdictIncomplete:
		fmt.Fprintf(&b, " — nothing at or above %s was found in what was read, but %s.", r.FailOn, mdEscape(strings.Join(r.Gaps(), "; ")))
	case VerdictClear:
		b.WriteString(" — " + r.ClearSentence())
	case VerdictFindings:
		if r.Incomplete() {
			fmt.Fprintf(&b, " — and part of the input could not be read (%s): more may be stuck than this report shows.", mdEscape(strings.Join(r.Gaps(), "; ")))
		}
	}
	b.WriteString("\n")
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s\n", mdEscape(w))
	}
	if h := r.HiddenSummary(); h != "" {
		fmt.Fprintf(&b, "\nHidden: %s.\n", mdEscape(h))
	}
	if line := contextLine(r.Clusters); line != "" {
		fmt.Fprintf(&b, "\n%s\n", mdEscape(line))
	}
	if len(r.Incidents) > 0 {
		b.WriteString("\n## Incidents\n")
		for i, inc := range r.Incidents {
			rc := inc.RootCause
			fmt.Fprintf(&b, "\n### %d. %s (%s) on %s\n\n%s\n\n- Object: %s\n", i+1, codeSpan(rc.ID), rc.Severity, mdCluster(rc), mdEscape(rc.Summary), codeSpan(rc.Object.String()))
			if rc.Since != nil {
				fmt.Fprintf(&b, "- Since: %s\n", rc.Since.Format(time.RFC3339))
			}
			if len(rc.Evidence) > 0 {
				b.WriteString("\n**Evidence**\n\n")
				for _, e := range rc.Evidence {
					fmt.Fprintf(&b, "- %s: %s\n", codeSpan(e.Source), mdEscape(e.Text))
				}
			}
			if len(inc.Symptoms) > 0 {
				b.WriteString("\n**Symptoms**\n\n")
				for _, s := range inc.Symptoms {
					fmt.Fprintf(&b, "- %s on %s: %s\n", codeSpan(s.ID), mdCluster(s), mdEscape(s.Summary))
				}
			}
			if len(rc.Remediation) > 0 {
				b.WriteString("\n**Fix ladder** (lowest risk first)\n\n")
				for n, s := range rc.Remediation {
					fmt.Fprintf(&b, "%d. *%s* (risk %s): %s\n", n+1, s.Rung, orNone(s.Risk), mdEscape(s.Action))
					if len(s.Commands) > 0 {
						fence := codeFence(s.Commands)
						fmt.Fprintf(&b, "   %ssh\n", fence)
						for _, c := range s.Commands {
							fmt.Fprintf(&b, "   %s\n", c)
						}
						fmt.Fprintf(&b, "   %s\n", fence)
					}
					for _, n := range s.Notes {
						fmt.Fprintf(&b, "   - %s\n", mdEscape(n))
					}
				}
			}
		}
	}
	if len(r.Clusters) > 0 {
		b.WriteString("\n## Clusters\n\n| Cluster | Role | Objects | Findings | Incidents | Status | Context |\n|---|---|---:|---:|---:|---|---|\n")
		for _, c := range r.Clusters {
			status, _ := r.StatusOf(c.Name)
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s | %s |\n", mdEscape(c.Name), mdEscape(c.Role), c.Objects, c.Findings, c.Incidents, status, mdEscape(contextLabel(c)))
		}
	}
	if len(r.Errors) > 0 {
		b.WriteString("\n## Errors\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- %s\n", mdEscape(e.String()))
		}
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "\n## Skipped files\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s: %s\n", codeSpan(s.File), mdEscape(s.Reason))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdCluster(f finding.Finding) string {
	if f.Affects != "" && f.Affects != f.Cluster {
		return fmt.Sprintf("%s (about %s)", mdEscape(f.Cluster), mdEscape(f.Affects))
	}
	return mdEscape(f.Cluster)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// mdReplacer escapes what Markdown would read as markup in text from the input: emphasis,
// links and images, code spans, table cells, headings, and raw HTML.
var mdReplacer = strings.NewReplacer(
	"\\", `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "!", `\!`, "#", `\#`, "~", `\~`,
	"|", `\|`, "&", "&amp;", "<", "&lt;", ">", "&gt;", "\n", " ", "\r", " ")

func mdEscape(s string) string { return mdReplacer.Replace(s) }

// codeSpan quotes s as inline code whatever it holds: the delimiter is one backtick more
// than the longest run inside, so a backtick in a name cannot close the span early, and
// inside a code span raw HTML is text. Newlines would end the list item: they become spaces.
func codeSpan(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	if s == "" {
		return "` `"
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// codeFence is a fence for a code block holding lines: longer than any backtick run in them.
func codeFence(lines []string) string {
	n := 3
	for _, l := range lines {
		n = max(n, longestRun(l, '`')+1)
	}
	return strings.Repeat("`", n)
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}
