package cli

import (
	"errors"
	"fmt"
	"github.com/unstick-dev/unstick/internal/plural"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// judgeFlags are the flags every verb that judges a fleet shares — --now, --threshold,
// --catalog, --fail-on, --allow-incomplete, and --only/--only-cluster — completed once into
// the options of judge.Judge, the one path from a snapshot to a verdict (as kubectl composes
// PrintFlags). The README's table of shared flags says which verb has which; a test holds
// the two together.
type judgeFlags struct {
	now             string
	thresholds      []string
	catalog         string
	failOn          string
	allowIncomplete bool
	only, clusters  []string
	// noVerdict leaves --fail-on and --allow-incomplete out (a verb with no verdict to
	// give).
	noVerdict bool
	// noNow leaves --now out (a verb that judges only at the wall clock).
	noNow bool
	// filterVerb, when set, adds --only and --only-cluster; it says what the verb does with
	// what they keep ("report", "fix", "judge").
	filterVerb string

	nowTime time.Time
	failSev finding.Severity
	cat     *catalog.Catalog
	th      *check.Thresholds
	cfg     *config.Config
}

// exitIncompleteHelp is the sentence every verb's help gives about exit 4.
const exitIncompleteHelp = `4 no finding at or above --fail-on, but part of the input could not be read (a cluster,
a forbidden list, a file, a refused archive member): not an all-clear (--allow-incomplete
accepts a partial read and exits 0)`

func (j *judgeFlags) addFlags(fs *pflag.FlagSet, failOnDefault, failOnUse string) {
	if !j.noNow {
		fs.StringVar(&j.now, "now", "", "judge as of this RFC 3339 time (default: when the input was read: now live, a bundle's collection time)")
	}
	fs.StringArrayVar(&j.thresholds, "threshold", nil, "override a detection threshold, NAME=VALUE (repeatable; see 'unstick explain ID')")
	fs.StringVar(&j.catalog, "catalog", "", "YAML file of catalogue entries that override the built-in wording, severity or ladder")
	if !j.noVerdict {
		j.failOn = failOnDefault
		fs.StringVar(&j.failOn, "fail-on", failOnDefault, failOnUse)
	}
	if !j.noVerdict {
		fs.BoolVar(&j.allowIncomplete, "allow-incomplete", false, "exit 0 rather than 4 when nothing was found but part of the input could not be read")
	}
	if j.filterVerb != "" {
		fs.StringArrayVar(&j.only, "only", nil, j.filterVerb+" only findings with this ID, or a family such as helm/ (repeatable); the others are counted as hidden, and an incident whose root cause is left out is rooted at the next finding kept")
		fs.StringArrayVar(&j.clusters, "only-cluster", nil, j.filterVerb+" only findings on or about this cluster (repeatable)")
	}
}

// registerCompletions completes the values of the flags addFlags added.
func (j *judgeFlags) registerCompletions(cmd *cobra.Command, failOn ...string) {
	if !j.noVerdict {
		_ = cmd.RegisterFlagCompletionFunc("fail-on", fixedCompletion(failOn...))
	}
	if j.filterVerb != "" {
		_ = cmd.RegisterFlagCompletionFunc("only", findingIDCompletion)
		_ = cmd.RegisterFlagCompletionFunc("only-cluster", bundleClusterCompletion)
	}
	_ = cmd.RegisterFlagCompletionFunc("catalog", yamlFiles)
}

// complete parses the flags and reads the catalogue, the configuration and the thresholds.
func (j *judgeFlags) complete(g *globalOptions, example string) error {
	var err error
	if j.now != "" {
		if j.nowTime, err = time.Parse(time.RFC3339, j.now); err != nil {
			return usageErrorf("--now %q is not an RFC 3339 time such as 2026-11-28T09:30:00Z", j.now)
		}
	}
	if !j.noVerdict && j.failOn != "none" {
		if j.failSev, err = finding.ParseSeverity(j.failOn); err != nil {
			return usageErrorf("--fail-on: %v (or none)", err)
		}
	}
	if j.cat, err = catalog.LoadWithOverrides(j.catalog); err != nil {
		return usageErrorf("--catalog: %v", err)
	}
	if j.cfg, err = g.config(); err != nil {
		return err
	}
	if j.cat, j.th, err = g.applyConfig(j.cfg, j.cat); err != nil {
		return err
	}
	for _, id := range j.only {
		if err := knownID(j.cat, id); err != nil {
			return usageErrorf("--only: %v", err)
		}
	}
	return setThresholds(j.th, j.thresholds, example)
}

// filter is what --only and --only-cluster keep.
func (j *judgeFlags) filter() check.Filter {
	return check.Filter{Only: j.only, Clusters: j.clusters}
}

// options are judge.Options for these flags; the verb adds what it loaded.
func (j *judgeFlags) options(g *globalOptions) judge.Options {
	return judge.Options{Now: j.nowTime, Wallclock: g.clock(), Thresholds: j.th, Catalog: j.cat, Config: j.cfg, FailOn: j.failSev}
}

// checkFilters refuses --only-cluster names that no cluster of the input answers to: a
// misspelt name would otherwise hide every finding and read as the all-clear.
func checkFilters(s *snapshot.Snapshot, clusters []string) error {
	if bad := judge.UnknownClusters(s, clusters); len(bad) > 0 {
		known := judge.KnownClusters(s)
		return usageErrorf("--only-cluster %s: no such cluster in the input (known: %s)", strings.Join(quoted(bad), ", "), strings.Join(known, ", "))
	}
	return nil
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// requireData fails a run whose input held no Kubernetes object at all: there is nothing to
// judge, and saying "no stuck upgrades" would be a lie.
func requireData(s *snapshot.Snapshot, input string) error {
	if judge.Objects(s) > 0 {
		return nil
	}
	var why []string
	if len(s.Clusters) == 0 {
		why = append(why, "no cluster was found in it")
	}
	if n := len(s.Skipped); n > 0 {
		ex := s.Skipped[0]
		why = append(why, fmt.Sprintf("%s skipped (e.g. %s: %s)", plural.Forms(n, "document was", "documents were"), ex.File, ex.Reason))
	}
	if n := len(s.Errors); n > 0 {
		why = append(why, fmt.Sprintf("%s (e.g. %s)", plural.Forms(n, "error", "errors"), s.Errors[0].String()))
	}
	if len(why) == 0 {
		why = append(why, "it holds no YAML or JSON documents")
	}
	return &NoDataError{Input: input, Why: strings.Join(why, "; ")}
}

// NoDataError says the input held nothing to judge: exit 1.
type NoDataError struct{ Input, Why string }

func (e *NoDataError) Error() string {
	return fmt.Sprintf("no Kubernetes objects were read from %s, so there is nothing to judge: %s", e.Input, e.Why)
}

// IncompleteError says nothing at or above --fail-on was found, but not all of the input
// was read: exit 4.
type IncompleteError struct{ Gaps []string }

func (e *IncompleteError) Error() string {
	return "incomplete: " + strings.Join(e.Gaps, "; ")
}

// verdictError turns a judged report into the verb's exit: 3 findings, 4 incomplete, else nil.
func (j *judgeFlags) verdictError(r *report.Report) error {
	switch r.Verdict {
	case report.VerdictFindings:
		n := 0
		for _, f := range r.Findings {
			if f.Severity >= j.failSev {
				n++
			}
		}
		return &FindingsError{Count: n, Severity: j.failSev.String()}
	case report.VerdictIncomplete:
		if j.allowIncomplete {
			return nil
		}
		return &IncompleteError{Gaps: r.Gaps()}
	}
	return nil
}

func isIncomplete(err error) bool {
	var ie *IncompleteError
	return errors.As(err, &ie)
}
