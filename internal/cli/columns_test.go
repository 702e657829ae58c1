package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// With stdout a pipe, $COLUMNS sets the width the table folds its prose to, and folding
// never splits a word that fits a line: the 72-column table holds every word of the
// 1000-column one (where nothing is folded) that is shorter than a line.
func TestTableHonoursColumns(t *testing.T) {
	args := []string{"scan", "--from", example, "--now", "2026-11-28T09:30:00Z", "--color", "never"}
	t.Setenv("COLUMNS", "1000")
	wide, _, _ := run(t, args...)
	t.Setenv("COLUMNS", "72")
	narrow, _, _ := run(t, args...)
	incidents, _, _ := strings.Cut(narrow, "\nCLUSTERS")
	for i, line := range strings.Split(incidents, "\n") {
		trimmed := strings.TrimSpace(line)
		if i == 0 || strings.HasPrefix(trimmed, "$ ") || strings.HasPrefix(trimmed, "object:") {
			continue // the title, commands and object names stand whole
		}
		if n := utf8.RuneCountInString(line); n > 72 {
			t.Errorf("COLUMNS=72, line %d is %d columns: %q", i+1, n, line)
		}
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(narrow) {
		words[w] = true
	}
	for _, w := range strings.Fields(wide) {
		if utf8.RuneCountInString(w) <= 60 && !words[w] {
			t.Errorf("%q is split at 72 columns though it fits a line", w)
		}
	}
}

// fix's plan folds its prose to $COLUMNS too; its commands stand whole.
func TestFixPlanHonoursColumns(t *testing.T) {
	t.Setenv("COLUMNS", "72")
	out, _, _ := run(t, "fix", "--from", example, "--now", "2026-11-28T09:30:00Z", "--offline-registry")
	folded := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, strings.Repeat(" ", 15)) {
			continue // a field's continuation lines: prose only
		}
		folded++
		if n := utf8.RuneCountInString(line); n > 72 {
			t.Errorf("COLUMNS=72, a line of %d columns: %q", n, line)
		}
	}
	if folded == 0 {
		t.Errorf("no folded field in the plan:\n%s", out)
	}
}
