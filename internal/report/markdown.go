package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

func renderMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# unstick scan\n\nEvaluated at %s: %s, %s, %s, %s.\n",
		r.EvaluatedAt.Format(time.RFC3339), Plural(len(r.Clusters), "cluster", "clusters"), Plural(len(r.Incidents), "incident", "incidents"),
		Plural(len(r.Findings), "finding", "findings"), Plural(len(r.Errors), "error", "errors"))
	fmt.Fprintf(&b, "\n**Verdict: %s**", r.Verdict)
	switch r.Verdict {
	case VerdictIncomplete:
		fmt.Fprintf(&b, " — nothing at or above %s was found in what was read, but %s.", r.FailOn, mdEscape(strings.Join(r.Gaps(), "; ")))
	case VerdictClear:
		b.WriteString(" — no stuck upgrades found.")
	}
	b.WriteString("\n")
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "\n> **Warning:** %s\n", mdEscape(w))
	}
	if h := r.HiddenSummary(); h != "" {
		fmt.Fprintf(&b, "\nHidden: %s.\n", mdEscape(h))
	}
	if len(r.Incidents) > 0 {
		b.WriteString("\n## Incidents\n")
		for i, inc := range r.Incidents {
			rc := inc.RootCause
			fmt.Fprintf(&b, "\n### %d. `%s` (%s) on %s\n\n%s\n\n- Object: `%s`\n", i+1, rc.ID, rc.Severity, mdCluster(rc), mdEscape(rc.Summary), rc.Object.String())
			if rc.Since != nil {
				fmt.Fprintf(&b, "- Since: %s\n", rc.Since.Format(time.RFC3339))
			}
			if len(rc.Evidence) > 0 {
				b.WriteString("\n**Evidence**\n\n")
				for _, e := range rc.Evidence {
					fmt.Fprintf(&b, "- `%s`: %s\n", e.Source, mdEscape(e.Text))
				}
			}
			if len(inc.Symptoms) > 0 {
				b.WriteString("\n**Symptoms**\n\n")
				for _, s := range inc.Symptoms {
					fmt.Fprintf(&b, "- `%s` on %s: %s\n", s.ID, mdCluster(s), mdEscape(s.Summary))
				}
			}
			if len(rc.Remediation) > 0 {
				b.WriteString("\n**Fix ladder** (lowest risk first)\n\n")
				for n, s := range rc.Remediation {
					fmt.Fprintf(&b, "%d. *%s* (risk %s): %s\n", n+1, s.Rung, orNone(s.Risk), mdEscape(s.Action))
					if len(s.Commands) > 0 {
						b.WriteString("   ```sh\n")
						for _, c := range s.Commands {
							fmt.Fprintf(&b, "   %s\n", c)
						}
						b.WriteString("   ```\n")
					}
				}
			}
		}
	}
	if len(r.Clusters) > 0 {
		b.WriteString("\n## Clusters\n\n| Cluster | Role | Objects | Findings | Status |\n|---|---|---:|---:|---|\n")
		for _, c := range r.Clusters {
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %s |\n", c.Name, c.Role, c.Objects, c.Findings, orNone(c.Status))
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
			fmt.Fprintf(&b, "- `%s`: %s\n", s.File, s.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdCluster(f finding.Finding) string {
	if f.Affects != "" && f.Affects != f.Cluster {
		return fmt.Sprintf("%s (about %s)", f.Cluster, f.Affects)
	}
	return f.Cluster
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

var mdReplacer = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ")

func mdEscape(s string) string { return mdReplacer.Replace(s) }
