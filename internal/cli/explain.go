package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/removedapi"
)

type explainOptions struct {
	s       Streams
	id      string
	catalog string
	name    string // how unstick was called: "unstick" or "kubectl unstick"
	table   bool   // print the removed-API table (api/ IDs)
}

func newExplainCmd(s Streams) *cobra.Command {
	o := &explainOptions{s: s}
	cmd := &cobra.Command{
		Use:   "explain [ID]",
		Short: "Explain a finding: what it means, how it is detected, and its fix ladder",
		Long: `Without an ID, lists every finding ID of the catalogue with its severity and title; with a
family (helm/, helm/* or helm), the IDs of that family. With an ID, prints the catalogue entry:
the explanation, the detection rule and its thresholds, and the fix ladder from the lowest-risk
rung up, with the equivalent kubectl and helm commands.

The api/ entries (api/removed, api/removed-in-target, api/deprecated-in-target) also name the
table they judge by: which built-in group/version/kind each Kubernetes minor deprecates and stops
serving and what replaces it, kept row by row from the Kubernetes deprecation guide and checked
against the prerelease-lifecycle methods of the k8s.io/api version unstick is built with.
--table prints the removed and the deprecated tables, with each row's source.`,
		Example: `  unstick explain
  unstick explain helm/
  unstick explain helm/release-pending
  unstick explain suc/image-missing
  unstick explain api/removed-in-target --table`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			c, err := catalog.Load()
			if err != nil || len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return c.IDs(), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.id = args[0]
			}
			o.name = cmd.Root().DisplayName()
			return o.run()
		},
	}
	cmd.Flags().StringVar(&o.catalog, "catalog", "", "YAML file of catalogue entries that override the built-in wording, severity or ladder")
	cmd.Flags().BoolVar(&o.table, "table", false, "with an api/ ID: print the removed-API and deprecated-API tables (group/version, kind, releases, replacement, source)")
	return cmd
}

func (o *explainOptions) run() error {
	cat, err := catalog.LoadWithOverrides(o.catalog)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if o.id == "" {
		return listCatalog(o.s.Out, cat, cat.IDs())
	}
	e, ok := cat.Get(o.id)
	if !ok {
		if ids := familyIDs(cat, o.id); len(ids) > 0 {
			return listCatalog(o.s.Out, cat, ids)
		}
		msg := fmt.Sprintf("unknown finding ID %q", o.id)
		if s := cat.Suggest(o.id); len(s) > 0 {
			msg += "; did you mean: " + strings.Join(s, ", ") + "?"
		}
		return usageErrorf("%s (run '%s explain' for the list)", msg, o.name)
	}
	if o.table && !strings.HasPrefix(e.ID, "api/") {
		return usageErrorf("--table prints the removed-API table of the api/ entries, not of %s", e.ID)
	}
	if err := printEntry(o.s.Out, e, o.name); err != nil {
		return err
	}
	if strings.HasPrefix(e.ID, "api/") {
		return printRemovedTable(o.s.Out, o.table, e.ID, o.name)
	}
	return nil
}

// printRemovedTable names the removed-API table's source and, with all, lists it and the
// deprecated-API table.
func printRemovedTable(w io.Writer, all bool, id, name string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nREMOVED-API TABLE\n%s\n", indent("Source: "+removedapi.Source()+".", "  "))
	if !all {
		fmt.Fprintf(&b, "  '%s explain %s --table' lists the removed and the deprecated APIs.\n", name, id)
		_, err := io.WriteString(w, b.String())
		return err
	}
	latest := removedapi.LatestMinor()
	fmt.Fprintf(&b, "  Removed by Kubernetes 1.%d:\n", latest)
	writeAPIRows(&b, func(r removedapi.Removal) bool { return r.RemovedIn != "" && !r.Planned() })
	fmt.Fprintf(&b, "\nDEPRECATED-API TABLE\n  Served deprecated by Kubernetes 1.%d (api/deprecated-in-target); a removal after it is a plan:\n", latest)
	writeAPIRows(&b, func(r removedapi.Removal) bool { return r.DeprecatedIn != "" && (r.RemovedIn == "" || r.Planned()) })
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAPIRows lists the table's rows that keep holds.
func writeAPIRows(b *strings.Builder, keep func(removedapi.Removal) bool) {
	fmt.Fprintf(b, "  %-40s %-34s %-10s %-13s %s\n", "apiVersion", "KIND", "DEPRECATED", "REMOVED", "REPLACEMENT [SOURCE]")
	for _, r := range removedapi.Table() {
		if !keep(r) {
			continue
		}
		out, dep := r.RemovedIn, r.DeprecatedIn
		switch {
		case out == "":
			out = "(none)"
		case r.Planned():
			out += " (plan)"
		}
		if dep == "" {
			dep = "-"
		}
		fmt.Fprintf(b, "  %-40s %-34s %-10s %-13s %s\n", r.APIVersion(), r.Kind, dep, out, replacementCell(r))
	}
}

// replacementCell is a row's replacement, its review note and its source.
func replacementCell(r removedapi.Removal) string {
	rp := r.ReplacementText()
	if rp == "" {
		rp = "(none)"
	}
	if r.Review != "" {
		rp += " — review: " + r.Review
	}
	return rp + " [" + r.Source + "]"
}

// familyIDs are the IDs of the family id names: "helm/", "helm/*" or plain "helm".
func familyIDs(cat *catalog.Catalog, id string) []string {
	prefix := strings.TrimSuffix(strings.TrimSuffix(id, "*"), "/") + "/"
	var out []string
	for _, k := range cat.IDs() {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

func listCatalog(w io.Writer, cat *catalog.Catalog, ids []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-34s %-9s %s\n", "ID", "SEVERITY", "TITLE")
	for _, id := range ids {
		e, _ := cat.Get(id)
		fmt.Fprintf(&b, "%-34s %-9s %s\n", id, e.Severity, e.Title)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func printEntry(w io.Writer, e *catalog.Entry, name string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s\nSeverity: %s\n\n", e.ID, e.Title, e.Severity)
	fmt.Fprintf(&b, "WHAT IT MEANS\n%s\n\n", indent(strings.TrimSpace(e.Explanation), "  "))
	fmt.Fprintf(&b, "HOW IT IS DETECTED\n%s\n", indent(strings.TrimSpace(e.Detection), "  "))
	if len(e.Thresholds) > 0 {
		b.WriteString("\nTHRESHOLDS (override with --threshold NAME=VALUE)\n")
		for _, t := range e.Thresholds {
			fmt.Fprintf(&b, "  %s = %s\n      %s\n", t.Name, t.Default, t.Description)
		}
	}
	fmt.Fprintf(&b, "\nFIX LADDER (lowest risk first; %s fix never goes above --max-risk)\n", name)
	for i, r := range e.Ladder {
		risk := r.Risk
		if risk == "" {
			risk = "none"
		}
		fmt.Fprintf(&b, "  %d. %s (risk: %s)\n%s\n", i+1, r.Rung, risk, indent(strings.TrimSpace(r.Action), "     "))
		for _, c := range r.Commands {
			fmt.Fprintf(&b, "       $ %s\n", c)
		}
	}
	if len(e.References) > 0 {
		b.WriteString("\nREFERENCES\n")
		for _, r := range e.References {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// indent folds each paragraph of s to 100 columns and indents it with prefix.
func indent(s, prefix string) string {
	const width = 100
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, w := range strings.Fields(para) {
			if line != "" && len(prefix)+len(line)+1+len(w) > width {
				out = append(out, prefix+line)
				line = w
				continue
			}
			if line == "" {
				line = w
			} else {
				line += " " + w
			}
		}
		if line == "" {
			out = append(out, "")
		} else {
			out = append(out, prefix+line)
		}
	}
	return strings.Join(out, "\n")
}
