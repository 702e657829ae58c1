package cli

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// readmeFlagTable reads the README's "Shared flags: which verb has which" table: for each
// verb, each flag of the header and whether the README says the verb has it.
func readmeFlagTable(t *testing.T) map[string]map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "#### Shared flags: which verb has which")
	if !ok {
		t.Fatal("README.md has no section \"Shared flags: which verb has which\"")
	}
	var flags []string
	table := map[string]map[string]bool{}
	for _, ln := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(ln, "|") {
			if len(flags) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(ln, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		switch {
		case cells[0] == "verb":
			flags = cells[1:]
		case strings.HasPrefix(cells[0], "---"):
		default:
			row := map[string]bool{}
			for i, f := range flags {
				row[strings.TrimPrefix(f, "--")] = strings.HasPrefix(cells[i+1], "yes")
			}
			table[cells[0]] = row
		}
	}
	if len(flags) == 0 || len(table) == 0 {
		t.Fatal("the README's shared-flags table is empty")
	}
	return table
}

// TestSharedFlagsAsDocumented holds the README's table of shared flags and the commands
// together: every verb has each flag marked yes and none marked no, and every verb whose
// flags include one of the shared set is in the table.
func TestSharedFlagsAsDocumented(t *testing.T) {
	table := readmeFlagTable(t)
	root := newRoot(Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}, "unstick")
	shared := map[string]bool{}
	for _, row := range table {
		for f := range row {
			shared[f] = true
		}
	}
	for _, cmd := range root.Commands() {
		row, documented := table[cmd.Name()]
		for f := range shared {
			has := cmd.Flags().Lookup(f) != nil
			switch {
			case !documented && has:
				t.Errorf("%s has --%s but is not in the README's shared-flags table", cmd.Name(), f)
			case documented && has != row[f]:
				t.Errorf("%s --%s: the README says %s, the command %s", cmd.Name(), f, yesNo(row[f]), yesNo(has))
			}
		}
		if documented {
			acceptsDocumented(t, cmd, row)
		}
	}
	for verb := range table {
		if c, _, err := root.Find([]string{verb}); err != nil || c == root {
			t.Errorf("the README's shared-flags table names %q, which is no verb", verb)
		}
	}
}

// acceptsDocumented parses every flag the README says the verb has, with a valid value.
func acceptsDocumented(t *testing.T, cmd *cobra.Command, row map[string]bool) {
	t.Helper()
	value := map[string]string{"now": "2026-11-28T09:30:00Z", "threshold": "helm.pendingAfter=5m", "catalog": "catalog.yaml",
		"fail-on": "warning", "only": "helm/", "only-cluster": "prod-eu-1"}
	var args []string
	for f, has := range row {
		if !has {
			continue
		}
		if f == "allow-incomplete" {
			args = append(args, "--allow-incomplete")
			continue
		}
		args = append(args, "--"+f+"="+value[f])
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Errorf("%s %s: %v", cmd.Name(), strings.Join(args, " "), err)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
