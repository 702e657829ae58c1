package remediate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/textsafe"
	"github.com/unstick-dev/unstick/internal/textwrap"
)

// WriteJSON writes the plan as indented JSON.
func WriteJSON(w io.Writer, p *Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// Number returns each step's 1-based number in the printed plan, by ID.
func (p *Plan) Number() map[string]int {
	out := map[string]int{}
	for i, s := range p.Steps() {
		out[s.ID] = i + 1
	}
	return out
}

// WriteTable renders the plan for a terminal: each incident, its ladder in execution order,
// and for every step what it changes, why, what must hold, how it is verified and the command
// an operator would type instead. Secret payloads never appear: steps only name Secrets.
// TableOptions tune the plan table.
type TableOptions struct {
	// Applying says the plan is being carried out (--apply).
	Applying bool
	// Hint is the closing line of a printed plan with steps: how to carry it out.
	Hint string
	// Width is the width prose is folded to (the terminal's, or $COLUMNS); 0 means 100.
	// Commands stand whole on their line whatever the width.
	Width int
}

// WriteTable writes the plan for a person.
func WriteTable(w io.Writer, p *Plan, o TableOptions) error {
	applying := o.Applying
	width := o.Width
	if width <= 0 {
		width = 100
	}
	b := &strings.Builder{}
	steps := len(p.Steps())
	if applying {
		fmt.Fprintf(b, "Fix plan: %s, %s; max risk %s.\n", plural.Of(len(p.Incidents), "incident"), plural.Of(steps, "step"), p.MaxRisk)
	} else {
		fmt.Fprintf(b, "Fix plan: %s, %s; max risk %s. Nothing is changed without --apply.\n", plural.Of(len(p.Incidents), "incident"), plural.Of(steps, "step"), p.MaxRisk)
	}
	n := 0
	above := 0
	for i, inc := range p.Incidents {
		r := inc.RootCause
		fmt.Fprintf(b, "\nIncident %d: %s on %s — %s\n", i+1, r.FindingID, textsafe.Line(r.Cluster), textsafe.Line(r.Object.String()))
		wrap(b, width, "  ", r.Summary)
		if len(inc.Symptoms) > 0 {
			var sy []string
			for _, s := range inc.Symptoms {
				sy = append(sy, s.FindingID+" ("+s.Cluster+")")
			}
			wrap(b, width, "  ", "symptoms: "+strings.Join(sy, ", "))
		}
		for _, a := range inc.Attempts {
			if len(a.Steps) > 1 {
				fmt.Fprintf(b, "\n  steps %d–%d run together as one %s attempt (risk %s): each is useless without the one before\n", n+1, n+len(a.Steps), a.Rung, a.Risk)
			}
			for _, s := range a.Steps {
				n++
				status := ""
				switch {
				case a.Blocked != "":
					status = " · BLOCKED"
				case a.AboveMaxRisk:
					status = fmt.Sprintf(" · above --max-risk %s: not run", p.MaxRisk)
					above++
				}
				fmt.Fprintf(b, "\n  %d. %s · risk %s · %s on %s%s\n", n, s.Rung, s.Risk, textsafe.Line(s.Target.Ref()), textsafe.Line(s.Cluster), status)
				field(b, width, "change", s.Change)
				if s.Action.Mutating() {
					var why []string
					for _, r := range s.Why {
						why = append(why, r.FindingID+": "+r.Summary)
					}
					field(b, width, "why", strings.Join(why, "; "))
					if len(s.Why) > 0 && len(s.Why[0].Evidence) > 0 {
						e := s.Why[0].Evidence[0]
						field(b, width, "evidence", e.Text+" ["+e.Source+"]")
					}
					field(b, width, "requires", s.Precondition)
					field(b, width, "verify", s.Verify)
				}
				for _, c := range s.Commands {
					label := "kubectl"
					switch {
					case strings.HasPrefix(c, "helm "):
						label = "helm"
					case shellcmd.IsWithheld(c):
						label = "command"
					}
					fmt.Fprintf(b, "     %-9s %s\n", label+":", textsafe.Line(c))
				}
				for _, note := range s.Notes {
					field(b, width, "note", note)
				}
			}
			if a.Blocked != "" {
				field(b, width, "blocked", a.Blocked)
			}
		}
	}
	if len(p.Manual) > 0 {
		fmt.Fprintf(b, "\nNo automatic fix (%d):\n", len(p.Manual))
		for _, m := range p.Manual {
			fmt.Fprintf(b, "  %s on %s — %s\n", m.Finding.FindingID, textsafe.Line(m.Finding.Cluster), textsafe.Line(m.Finding.Object.String()))
			wrap(b, width, "    ", m.Hint)
		}
	}
	if !applying && steps > 0 && o.Hint != "" {
		b.WriteString("\n" + o.Hint + "\n")
		if above > 0 {
			fmt.Fprintf(b, "%s above --max-risk %s listed but would not run.\n", plural.Forms(above, "step is", "steps are"), p.MaxRisk)
		}
	}
	if len(p.Incidents) == 0 && len(p.Manual) == 0 {
		b.WriteString("\nNothing to fix.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func field(b *strings.Builder, width int, name, text string) {
	if text == "" {
		return
	}
	prefix := fmt.Sprintf("     %-9s ", name+":")
	lines := wrapLines(text, max(width-len(prefix), 20))
	for i, l := range lines {
		if i == 0 {
			b.WriteString(prefix + l + "\n")
		} else {
			b.WriteString(strings.Repeat(" ", len(prefix)) + l + "\n")
		}
	}
}

func wrap(b *strings.Builder, width int, indent, text string) {
	for _, l := range wrapLines(text, max(width-len(indent), 20)) {
		b.WriteString(indent + l + "\n")
	}
}

// wrapLines folds text to width (textwrap: a word that fits a line is never split).
// Text from the input is made safe to print first: escape sequences go, and a line break it
// holds shows as ⏎ rather than starting a line that would pass for the plan's own.
func wrapLines(text string, width int) []string {
	return textwrap.Lines(textsafe.Line(text), width)
}
