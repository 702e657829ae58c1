package remediate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
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
	b := &planText{width: width}
	steps := len(p.Steps())
	if applying {
		fmt.Fprintf(b, "Fix plan: %s, %s; max risk %s.\n", plural.Of(len(p.Incidents), "incident"), plural.Of(steps, "step"), p.MaxRisk)
	} else {
		fmt.Fprintf(b, "Fix plan: %s, %s; max risk %s. Nothing is changed without --apply.\n", plural.Of(len(p.Incidents), "incident"), plural.Of(steps, "step"), p.MaxRisk)
	}
	n, above := 0, 0
	for i, inc := range p.Incidents {
		writeIncident(b, p, i, inc, &n, &above)
	}
	if len(p.Manual) > 0 {
		fmt.Fprintf(b, "\nNo automatic fix (%d):\n", len(p.Manual))
		for _, m := range p.Manual {
			writeManual(b, m)
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

// writeIncident writes one incident's ladder, numbering its steps after the n before it and
// counting those above --max-risk in above.
func writeIncident(b *planText, p *Plan, i int, inc IncidentPlan, n, above *int) {
	r := inc.RootCause
	fmt.Fprintf(b, "\nIncident %d: %s on %s — %s\n", i+1, r.FindingID, textsafe.Line(r.Cluster), textsafe.Line(r.Object.String()))
	wrap(b, "  ", r.Summary)
	if len(inc.Symptoms) > 0 {
		var sy []string
		for _, s := range inc.Symptoms {
			sy = append(sy, s.FindingID+" ("+s.Cluster+")")
		}
		wrap(b, "  ", "symptoms: "+strings.Join(sy, ", "))
	}
	advised := false
	for _, a := range inc.Attempts {
		if len(a.Steps) > 1 {
			fmt.Fprintf(b, "\n  steps %d–%d run together as one %s attempt (risk %s): each is useless without the one before\n", *n+1, *n+len(a.Steps), a.Rung, a.Risk)
		}
		for _, s := range a.Steps {
			*n++
			status := ""
			switch {
			case a.Blocked != "":
				status = " · BLOCKED"
			case a.AboveMaxRisk:
				status = fmt.Sprintf(" · above --max-risk %s: not run", p.MaxRisk)
				*above++
			}
			fmt.Fprintf(b, "\n  %d. %s · risk %s · %s on %s%s\n", *n, s.Rung, s.Risk, textsafe.Line(s.Target.Ref()), textsafe.Line(s.Cluster), status)
			writeStep(b, s)
			if !advised && inc.NextStep != nil && s.Action.Mutating() && s.Rung == inc.NextStep.Rung {
				advised = true
				writeAdvice(b, *inc.NextStep)
			}
		}
		if a.Blocked != "" {
			field(b, "blocked", a.Blocked)
		}
	}
	if !advised && inc.NextStep != nil {
		b.WriteString("\n")
		writeNextStep(b, "  ", *inc.NextStep)
	}
}

// writeStep writes what a step changes, why, what must hold, how it is verified, and the
// command an operator would type instead.
func writeStep(b *planText, s Step) {
	field(b, "change", s.Change)
	if s.Action.Mutating() {
		var why []string
		for _, r := range s.Why {
			why = append(why, r.FindingID+": "+r.Summary)
		}
		field(b, "why", strings.Join(why, "; "))
		if len(s.Why) > 0 && len(s.Why[0].Evidence) > 0 {
			e := s.Why[0].Evidence[0]
			field(b, "evidence", e.Text+" ["+e.Source+"]")
		}
		field(b, "requires", s.Precondition)
		field(b, "verify", s.Verify)
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
		field(b, "note", note)
	}
}

// writeAdvice writes, with the plan's step of the same rung, what scan says about the
// incident's next safe step: its words (the caveats under which it is enough) and its notes.
func writeAdvice(b *planText, st finding.Step) {
	field(b, "advice", st.Action)
	for _, note := range st.Notes {
		field(b, "note", note)
	}
}

// writeManual writes an incident unstick takes no step for: the clusters it affects, the
// rule's hint, and the incident's next safe step filled in as scan prints it.
func writeManual(b *planText, m Manual) {
	fmt.Fprintf(b, "  %s on %s — %s\n", m.Finding.FindingID, textsafe.Line(m.Finding.Cluster), textsafe.Line(m.Finding.Object.String()))
	if len(m.Clusters) > 0 {
		wrap(b, "    ", "affects: "+strings.Join(m.Clusters, ", "))
	}
	wrap(b, "    ", m.Hint)
	if m.NextStep != nil {
		writeNextStep(b, "    ", *m.NextStep)
	}
}

// writeNextStep writes an incident's next safe step as scan prints it: its rung and risk, its
// words, each command whole on its own line, and its notes.
func writeNextStep(b *planText, indent string, st finding.Step) {
	head := "next safe step (" + st.Rung
	if st.Risk != "" {
		head += ", risk " + st.Risk
	}
	wrap(b, indent, head+"): "+st.Action)
	for _, c := range st.Commands {
		fmt.Fprintf(b, "%s  $ %s\n", indent, textsafe.Line(c))
	}
	for _, note := range st.Notes {
		wrap(b, indent+"  ", "("+note+")")
	}
}

// planText is the plan's text being written and the width its prose is folded to.
type planText struct {
	strings.Builder
	width int
}

func field(b *planText, name, text string) {
	if text == "" {
		return
	}
	prefix := fmt.Sprintf("     %-9s ", name+":")
	lines := wrapLines(text, max(b.width-len(prefix), 20))
	for i, l := range lines {
		if i == 0 {
			b.WriteString(prefix + l + "\n")
		} else {
			b.WriteString(strings.Repeat(" ", len(prefix)) + l + "\n")
		}
	}
}

func wrap(b *planText, indent, text string) {
	for _, l := range wrapLines(text, max(b.width-len(indent), 20)) {
		b.WriteString(indent + l + "\n")
	}
}

// wrapLines folds text to width (textwrap: a word that fits a line is never split).
// Text from the input is made safe to print first: escape sequences go, and a line break it
// holds shows as ⏎ rather than starting a line that would pass for the plan's own.
func wrapLines(text string, width int) []string {
	return textwrap.Lines(textsafe.Line(text), width)
}
