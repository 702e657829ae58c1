package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

type scanOptions struct {
	s Streams

	from       string
	now        string
	output     string
	failOn     string
	thresholds []string
	only       []string
	clusters   []string
	quiet      bool
	color      string
	catalog    string
	kube       *kubeFlags
	live       bool

	// completed
	nowTime time.Time
	failSev finding.Severity
	cat     *catalog.Catalog
	th      *check.Thresholds
}

func newScanCmd(s Streams) *cobra.Command {
	o := &scanOptions{s: s, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Find stuck upgrades and explain their root cause",
		Long: `Reads a fleet — live clusters through your kubeconfig, or an offline bundle (--from) —
runs every check, and prints the findings grouped into incidents: root cause first,
symptoms linked, evidence quoted, and the next safe step. Nothing is changed.

Live, unstick reads the current context, the contexts named with --context (repeatable), or
--all-contexts: the Rancher management cluster (the one serving clusters.fleet.cattle.io)
and downstream clusters, matched to their Fleet Clusters by name, Rancher display name or
the /k8s/clusters/<id> in their server URL. Lists are paginated and run in parallel; only
the namespaces upgrades depend on are read (cattle-*, fleet-*, cluster-fleet-*,
system-upgrade, kube-system), Helm release Secrets by label owner=helm. A resource that is
forbidden or not served is listed under errors and the scan goes on.

An offline bundle is a directory or .tar.gz of Kubernetes objects as YAML or JSON (single
objects, multi-document files, List objects, Fleet dumps), with pod logs under
logs/<namespace>/<pod>/<container>.log and one sub-directory per cluster under
clusters/<name>/. It is judged at its collection time (its unstick-bundle.yaml, else the
newest timestamp in it) unless --now says otherwise.

Exit codes: 0 nothing at or above --fail-on, 3 findings at or above it, 1 unstick itself
failed, 2 usage error.`,
		Example: `  # The bundled example fleet
  unstick scan --from examples/fleet-upgrade-stuck

  # The current kube context, and then three clusters at once
  unstick scan
  unstick scan --context rancher --context prod-eu-1 --context prod-us-1

  # A support bundle, as JSON, judged at a fixed time
  unstick scan --from support-bundle.tar.gz --now 2026-11-28T09:30:00Z -o json

  # Only Helm and Fleet findings about one downstream cluster
  unstick scan --from bundle/ --only helm/ --only fleet/ --only-cluster prod-eu-1

  # Treat a release as stuck after 5 minutes instead of 15, fail CI on warnings
  unstick scan --from bundle/ --threshold helm.pendingAfter=5m --fail-on warning`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.live = o.from == "" || o.kube.used(cmd.Flags())
			if err := o.complete(); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "offline bundle to scan: a directory or a .tar.gz/.tgz file")
	f.StringVar(&o.now, "now", "", "judge the fleet as of this RFC 3339 time (default: the bundle's collection time)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(report.Formats, "|"))
	f.StringVar(&o.failOn, "fail-on", "error", "exit 3 when a finding is at or above this severity: critical|error|warning|info|none")
	f.StringArrayVar(&o.thresholds, "threshold", nil, "override a detection threshold, NAME=VALUE (repeatable; see 'unstick explain ID')")
	f.StringArrayVar(&o.only, "only", nil, "report only this finding ID, or a family such as helm/ (repeatable)")
	f.StringArrayVar(&o.clusters, "only-cluster", nil, "report only findings on or about this cluster (repeatable)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	f.StringVar(&o.color, "color", "auto", "colour the table: auto|always|never (auto: when stdout is a terminal and NO_COLOR is unset)")
	f.StringVar(&o.catalog, "catalog", "", "YAML file of catalogue entries that override the built-in wording, severity or ladder")
	o.kube.addFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(report.Formats...))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", fixedCompletion("critical", "error", "warning", "info", "none"))
	_ = cmd.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
	_ = cmd.RegisterFlagCompletionFunc("only", catalogCompletion)
	return cmd
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

func catalogCompletion(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	c, err := catalog.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.IDs(), cobra.ShellCompDirectiveNoFileComp
}

func (o *scanOptions) complete() error {
	var err error
	if o.now != "" {
		if o.nowTime, err = time.Parse(time.RFC3339, o.now); err != nil {
			return usageErrorf("--now %q is not an RFC 3339 time such as 2026-11-28T09:30:00Z", o.now)
		}
	}
	if o.failOn != "none" {
		if o.failSev, err = finding.ParseSeverity(o.failOn); err != nil {
			return usageErrorf("--fail-on: %v (or none)", err)
		}
	}
	if o.cat, err = catalog.LoadWithOverrides(o.catalog); err != nil {
		return usageErrorf("--catalog: %v", err)
	}
	o.th = check.NewThresholds(o.cat)
	for _, kv := range o.thresholds {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usageErrorf("--threshold %q: want NAME=VALUE, e.g. helm.pendingAfter=5m", kv)
		}
		if err := o.th.Set(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return usageErrorf("--threshold: %v", err)
		}
	}
	return nil
}

func (o *scanOptions) validate() error {
	if o.from != "" && o.live {
		return usageErrorf("--from reads an offline bundle; it cannot be combined with --context, --all-contexts or --kubeconfig")
	}
	if o.from != "" {
		if _, err := os.Stat(o.from); err != nil {
			return usageErrorf("--from %s: %v", o.from, unwrapPathError(err))
		}
	}
	valid := false
	for _, f := range report.Formats {
		valid = valid || f == o.output
	}
	if !valid && o.output != "md" {
		return usageErrorf("-o %q: unknown output format (want one of %s)", o.output, strings.Join(report.Formats, ", "))
	}
	for _, id := range o.only {
		id = strings.TrimSuffix(id, "*")
		if strings.HasSuffix(id, "/") {
			continue
		}
		if _, ok := o.cat.Get(id); !ok {
			msg := fmt.Sprintf("--only %q: unknown finding ID", id)
			if s := o.cat.Suggest(id); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, ", ") + "?"
			}
			return usageErrorf("%s", msg)
		}
	}
	switch o.color {
	case "auto", "always", "never":
	default:
		return usageErrorf("--color %q: want auto, always or never", o.color)
	}
	return nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func (o *scanOptions) run(ctx context.Context) error {
	snap, err := o.load(ctx)
	if err != nil {
		return err
	}
	rep := Evaluate(snap, o.evalTime(snap), o.th, o.cat, check.Filter{Only: o.only, Clusters: o.clusters})
	if err := report.Render(o.s.Out, rep, o.output, report.Options{Color: o.useColor()}); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return failOn(rep, o.failSev)
}

// load reads the bundle or the live clusters.
func (o *scanOptions) load(ctx context.Context) (*snapshot.Snapshot, error) {
	prog := newProgress(o.s.ErrOut, o.quiet)
	defer prog.done()
	if !o.live {
		src := &source.Offline{Path: o.from, Progress: func(n int) { prog.update("reading %s: %d files", o.from, n) }}
		return src.Load(ctx)
	}
	live, err := o.kube.live(func(done, total int) { prog.update("reading clusters: %d/%d", done, total) })
	if err != nil {
		return nil, err
	}
	return live.Load(ctx)
}

// evalTime is --now, else the bundle's collection time, else the clock.
func (o *scanOptions) evalTime(s *snapshot.Snapshot) time.Time {
	switch {
	case !o.nowTime.IsZero():
		return o.nowTime
	case !s.CollectedAt.IsZero():
		return s.CollectedAt
	}
	return time.Now()
}

// Evaluate judges a snapshot at now and assembles the report: the one path shared by every
// verb that reports findings.
func Evaluate(s *snapshot.Snapshot, now time.Time, th *check.Thresholds, cat *catalog.Catalog, filter check.Filter) *report.Report {
	ctx := &check.Context{Snap: s, Now: now, Thresholds: th, Catalog: cat}
	incidents, fs, errs := check.Evaluate(ctx, filter)
	return report.New(s, now, incidents, fs, errs)
}

func failOn(r *report.Report, sev finding.Severity) error {
	if sev == 0 {
		return nil
	}
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= sev {
			n++
		}
	}
	if n > 0 {
		return &FindingsError{Count: n, Severity: sev.String()}
	}
	return nil
}

func (o *scanOptions) useColor() bool {
	switch o.color {
	case "always":
		return true
	case "never":
		return false
	}
	return os.Getenv("NO_COLOR") == "" && isTerminal(o.s.Out)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
