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
	return fmt.Sprintf("%d findings at or above severity %s", e.Count, e.Severity)
}

// Run executes unstick with args and returns the exit code.
func Run(ctx context.Context, s Streams, args []string) int {
	root := NewRoot(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return exitCode(s, err)
}

func exitCode(s Streams, err error) int {
	if err == nil {
		return ExitOK
	}
	var fe *FindingsError
	if errors.As(err, &fe) {
		return ExitFindings
	}
	var ue *UsageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(s.ErrOut, "error: %v\nSee 'unstick --help'.\n", err)
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

// NewRoot builds the command tree.
func NewRoot(s Streams) *cobra.Command {
	name := filepath.Base(os.Args[0])
	if !strings.HasPrefix(name, "kubectl-") {
		name = "unstick"
	}
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
	if name != "unstick" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl unstick"}
	}
	root.AddCommand(newScanCmd(s), newExplainCmd(s), newCollectCmd(s), newVersionCmd(s))
	return root
}
