package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the widest line --help prints: flag descriptions are folded to it, and a test
// holds every other line (long descriptions, examples) to it.
const helpWidth = 100

// usage is cobra's usage text with the flag descriptions folded to helpWidth columns (cobra
// prints each on one line, however long).
func usage(c *cobra.Command) error {
	w := c.OutOrStderr()
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\n\nFlags:\n%s", foldedFlags(c.LocalFlags()))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\n\nGlobal Flags:\n%s", foldedFlags(c.InheritedFlags()))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func foldedFlags(fs *pflag.FlagSet) string {
	return strings.TrimRight(fs.FlagUsagesWrapped(helpWidth), " \n")
}

// strictCompletion makes `completion SHELL` refuse a shell cobra cannot write a script for
// (tcsh, sh): cobra would print the help and exit 0, and the user's shell would then source
// that help text.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		var shells []string
		for _, sub := range c.Commands() {
			shells = append(shells, sub.Name())
		}
		c.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("completion %s: no script for that shell; want one of %s", args[0], strings.Join(shells, ", "))
			}
			return nil
		}
		c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
}
