// Package cli is unstick's command line: one file per verb, each with Options that are
// completed, validated and run. Run is the whole program; only main exits.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/plural"
)

// Streams are the program's standard streams.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Exit codes (SPEC §2.2).
const (
	ExitOK       = 0
	ExitFailed   = 1
	ExitUsage    = 2
	ExitFindings = 3
	// ExitIncomplete: nothing at or above --fail-on, but part of the input was not read.
	ExitIncomplete = 4
)

// UsageError is a mistake in how unstick was called: exit 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// FindingsError says findings at or above --fail-on were reported: exit 3.
type FindingsError struct {
	Count    int
	Severity string
}

func (e *FindingsError) Error() string {
	return fmt.Sprintf("%s at or above severity %s", plural.Of(e.Count, "finding"), e.Severity)
}

// Run executes unstick with args and returns the exit code.
func Run(ctx context.Context, s Streams, args []string) int {
	return runAs(ctx, s, os.Args[0], args)
}

// runAs runs unstick as if invoked through argv0: "kubectl-unstick" makes it the kubectl
// plugin, whose help and messages say "kubectl unstick".
func runAs(ctx context.Context, s Streams, argv0 string, args []string) int {
	prof := &profiler{}
	root := newRoot(s, argv0)
	prof.addFlags(root.PersistentFlags())
	pre := root.PersistentPreRun
	root.PersistentPreRun = nil
	root.PersistentPreRunE = func(c *cobra.Command, a []string) error {
		pre(c, a)
		return prof.start()
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	prof.stop(s.ErrOut)
	return exitCode(s, displayName(argv0), helpFor(displayName(argv0), root, cmd), err)
}

// helpFor is the command whose --help a usage error points at: the subcommand that failed
// ("unstick fix --help"), as the user invoked unstick.
func helpFor(name string, root, cmd *cobra.Command) string {
	var path []string
	for c := cmd; c != nil && c != root; c = c.Parent() {
		path = append([]string{c.Name()}, path...)
	}
	return strings.Join(append([]string{name}, path...), " ")
}

// displayName is how the user called unstick: "kubectl unstick" when the binary is the
// kubectl plugin (kubectl runs kubectl-unstick for `kubectl unstick`), else "unstick".
func displayName(argv0 string) string {
	name := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if strings.HasPrefix(name, "kubectl-") {
		return "kubectl " + strings.ReplaceAll(strings.TrimPrefix(name, "kubectl-"), "_", "-")
	}
	return "unstick"
}

func exitCode(s Streams, name, help string, err error) int {
	if err == nil {
		return ExitOK
	}
	var fe *FindingsError
	if errors.As(err, &fe) {
		return ExitFindings
	}
	var ts *TraceStoppedError
	if errors.As(err, &ts) {
		return ExitFindings
	}
	var nm *NoMatchError
	if errors.As(err, &nm) {
		fmt.Fprintf(s.ErrOut, "%s: nothing to trace: %v (exit %d)\n", name, err, ExitIncomplete)
		return ExitIncomplete
	}
	var ie *IncompleteError
	if errors.As(err, &ie) {
		fmt.Fprintf(s.ErrOut, "%s: %v; this is not an all-clear (exit %d; --allow-incomplete accepts a partial read)\n", name, err, ExitIncomplete)
		return ExitIncomplete
	}
	var ue *UsageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(s.ErrOut, "error: %v\nSee '%s --help'.\n", err, help)
		return ExitUsage
	}
	fmt.Fprintf(s.ErrOut, "error: %v\n", err)
	return ExitFailed
}

// isCobraUsage recognises the flag and argument errors cobra itself returns.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand flag", "unknown command", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "if any flags in the group"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// NewRoot builds the command tree for the program as invoked (os.Args[0]).
func NewRoot(s Streams) *cobra.Command { return newRoot(s, os.Args[0]) }

func newRoot(s Streams, argv0 string) *cobra.Command {
	name := displayName(argv0)
	g := newGlobals(s, name)
	root := &cobra.Command{
		Use:   "unstick",
		Short: "Find, explain and safely fix stuck upgrades in Rancher fleets",
		Long: `unstick finds every stuck upgrade across a Rancher fleet — Fleet agents left behind a
pending Helm release, agent pods that cannot be scheduled or pulled, agents crash-looping
after CRDs changed, system-upgrade-controller Plans stalled on a missing image — explains
the root cause with evidence, and says the next safe step.

It is read-only: nothing in a cluster is changed by scan or explain.`,
		Example: `  # Scan the bundled example fleet (an offline bundle)
  unstick scan --from examples/fleet-upgrade-stuck

  # The same as JSON, judged at a fixed time
  unstick scan --from bundle.tar.gz --now 2026-11-28T09:30:00Z -o json

  # What a finding means and how to fix it
  unstick explain helm/release-pending`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &UsageError{Err: err} })
	root.SetUsageFunc(usage)
	g.addFlags(root.PersistentFlags())
	_ = root.RegisterFlagCompletionFunc("config", yamlFiles)
	root.PersistentPreRun = func(*cobra.Command, []string) { g.init() }
	root.AddCommand(newScanCmd(s, g), newExplainCmd(s), newCollectCmd(s), newVersionCmd(s))
	root.AddCommand(newImagesCmd(s, g), newPreflightCmd(s, g))
	root.AddCommand(newFixCmd(s, g), newRestoreCmd(s, g))
	root.AddCommand(newServeCmd(s, g))
	root.AddCommand(newTraceCmd(s, g))
	strictCompletion(root)
	if name != "unstick" {
		asPlugin(root, name)
	}
	registerKubeCompletions(root)
	return root
}

// asPlugin makes help read as kubectl users type it: usage lines, examples, descriptions and
// flag help say "kubectl unstick scan", not "unstick scan".
func asPlugin(root *cobra.Command, name string) {
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Example = pluginExample().ReplaceAllString(c.Example, "${1}"+name+" ")
		c.Long = pluginMention().ReplaceAllString(c.Long, "${1}"+name+" ")
		c.Short = pluginMention().ReplaceAllString(c.Short, "${1}"+name+" ")
		c.Flags().VisitAll(func(f *pflag.Flag) { f.Usage = pluginMention().ReplaceAllString(f.Usage, "${1}"+name+" ") })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// pluginExample matches "unstick " where a command line starts in an example.
var pluginExample = lazyre.New(`(?m)^(\s*(?:\$ )?)unstick `)

// pluginMention matches a command quoted in prose: 'unstick explain ID', `unstick restore DIR`.
var pluginMention = lazyre.New("(['`(]|\\$ )unstick ")
