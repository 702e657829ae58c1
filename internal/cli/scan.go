package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/report"
)

type scanOptions struct {
	s Streams
	g *globalOptions

	from   string
	output string
	quiet  bool
	color  string
	judge  judgeFlags
	kube   *kubeFlags
	reg    *registryFlags
	// probeBundle asks registries about the images of an offline bundle too (--registry).
	probeBundle bool
	live        bool
	outputFile  string
}

func newScanCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &scanOptions{s: s, g: g, kube: newKubeFlags(), reg: &registryFlags{}, judge: judgeFlags{filterVerb: "report"}}
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Find stuck upgrades and explain their root cause",
		Long: `Reads a fleet — live clusters through your kubeconfig, or an offline bundle (--from) —
runs every check, and prints the findings grouped into incidents: root cause first,
symptoms linked, evidence quoted, and the next safe step. Nothing is changed.

Live, unstick reads the current context, the contexts named with --context (repeatable), or
--all-contexts: the Rancher management cluster (the one serving clusters.fleet.cattle.io)
and downstream clusters, matched to their Fleet Clusters by name, Rancher display name or
the /k8s/clusters/<id> in their server URL. A cluster that two contexts of a Rancher
kubeconfig reach (through Rancher and through an authorized cluster endpoint) is read once.

With --rancher, the context points at Rancher (https://rancher.example.com, or any
https://<rancher>/k8s/clusters/<id> context of a Rancher kubeconfig): unstick lists the
clusters its token may see (Rancher's /v1/management.cattle.io.clusters, filtered by the
user's access) and reads each one through Rancher's proxy, https://<rancher>/k8s/clusters/<id>,
with the same credentials: one token for the whole fleet, "local" included when the user may
see it. --concurrency and --timeout bound the clusters read at once and each cluster's read;
a cluster that cannot be read is listed under errors and the others are judged. Clusters are
named by their Rancher display name. Without a kubeconfig, --rancher-url URL takes the token
from the environment variable RANCHER_TOKEN (never from a flag). Printed commands use the
kubeconfig's own context for a cluster when it has one, else the Rancher context with
--server https://<rancher>/k8s/clusters/<id>.

Lists are paginated and run in parallel; only
the namespaces upgrades depend on are read (cattle-*, fleet-*, cluster-fleet-*,
system-upgrade, kube-system), Helm release Secrets by label owner=helm. A resource that is
forbidden or not served is listed under errors and the scan goes on.

An offline bundle is a directory or .tar.gz of Kubernetes objects as YAML or JSON (single
objects, multi-document files, List objects, Fleet dumps), with pod logs under
logs/<namespace>/<pod>/<container>.log and one sub-directory per cluster under
clusters/<name>/. It is judged at its collection time (its unstick-bundle.yaml, else the
newest timestamp in it) unless --now says otherwise.

Reports: -o table (default), json, yaml, markdown, html (one self-contained file), sarif
(SARIF 2.1.0 for code-scanning services) or junit (one test case per check per cluster);
--output-file writes the report to a file instead of stdout.

The configuration file (~/.config/unstick/config.yaml, or --config) sets thresholds,
severity overrides, suppressed findings (each with a reason and an expiry) and registry
settings; --threshold flags win over it.

Exit codes: 0 everything was read and nothing is at or above --fail-on; 3 findings at or
above it; ` + exitIncompleteHelp + `; 1 unstick itself failed, or the input held no Kubernetes
object at all; 2 usage error (including an --only-cluster that names no cluster of the input).`,
		Example: `  # The bundled example fleet
  unstick scan --from examples/fleet-upgrade-stuck

  # The current kube context, and then three clusters at once
  unstick scan
  unstick scan --context rancher --context prod-eu-1 --context prod-us-1

  # Every cluster a Rancher user may see, through Rancher, from one context
  unstick scan --rancher --context rancher

  # The same without a kubeconfig: the token comes from the environment, never a flag
  export RANCHER_TOKEN=token-abc12:...   # an API key from Rancher's "Account & API Keys"
  unstick scan --rancher-url https://rancher.example.com

  # A support bundle, as JSON, judged at a fixed time
  unstick scan --from support-bundle.tar.gz --now 2026-11-28T09:30:00Z -o json

  # Only Helm and Fleet findings about one downstream cluster
  unstick scan --from bundle/ --only helm/ --only fleet/ --only-cluster prod-eu-1

  # Treat a release as stuck after 5 minutes instead of 15, fail CI on warnings
  unstick scan --from bundle/ --threshold helm.pendingAfter=5m --fail-on warning

  # A report to attach to a ticket, and SARIF and JUnit for CI
  unstick scan --from bundle/ -o html --output-file report.html
  unstick scan --from bundle/ -o sarif --output-file unstick.sarif
  unstick scan --from bundle/ -o junit --output-file unstick-junit.xml`,
		Args: noArgsFrom,
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
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(report.Formats, "|"))
	o.judge.addFlags(f, "error", "exit 3 when a finding is at or above this severity: critical|error|warning|info|none")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	f.StringVar(&o.color, "color", "auto", "colour the table: auto|always|never (auto: on a terminal, unless NO_COLOR is set or TERM=dumb)")
	f.StringVar(&o.outputFile, "output-file", "", "write the report to this file instead of stdout (the exit code is the same)")
	o.kube.addFlags(f)
	o.reg.addFlags(f)
	f.BoolVar(&o.probeBundle, "registry", false, "with --from, also ask the image registries whether the bundle's images exist (live scans always do, unless --offline-registry)")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(report.Formats...))
	o.judge.registerCompletions(cmd, "critical", "error", "warning", "info", "none")
	_ = cmd.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
	_ = cmd.RegisterFlagCompletionFunc("from", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"tar.gz", "tgz"}, cobra.ShellCompDirectiveFilterFileExt
	})
	return cmd
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

func yamlFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

func (o *scanOptions) complete() error {
	return o.judge.complete(o.g, "helm.pendingAfter=5m")
}

func (o *scanOptions) validate() error {
	if err := o.reg.validate(); err != nil {
		return err
	}
	if err := validateOutputFile(o.outputFile); err != nil {
		return err
	}
	if o.from != "" && o.live {
		return usageErrorf("--from reads an offline bundle; it cannot be combined with the flags that reach a live cluster (--context, --all-contexts, --rancher, --rancher-url, --kubeconfig, --as, --server, --request-timeout, ...)")
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
	log := o.g.log
	start := time.Now()
	// Images are judged by what their registries say when the fleet is read live (or the
	// user asks for it with --registry); an offline bundle is otherwise judged by its events
	// and logs alone, without contacting anything.
	l := &upgradeLoader{g: o.g, from: o.from, live: o.live, kube: o.kube, reg: o.reg, cfg: o.judge.cfg, quiet: o.quiet, noBundleProbe: !o.probeBundle}
	in, err := l.load(ctx)
	if err != nil {
		return err
	}
	snap := in.snap
	log.Info("loaded", "clusters", len(snap.Clusters), "skipped", len(snap.Skipped), "errors", len(snap.Errors), "took", time.Since(start))
	if err := requireData(snap, l.inputName()); err != nil {
		return err
	}
	if err := checkFilters(snap, o.judge.clusters); err != nil {
		return err
	}
	start = time.Now()
	opts := o.judge.options(o.g)
	opts.Filter = o.judge.filter()
	opts.Images = in.facts
	opts.Errors = in.registryErrors
	res := judge.Judge(snap, opts)
	rep := res.Report
	cfg := o.judge.cfg
	for i, n := range res.Suppressed.Count {
		s := cfg.Suppress[i]
		log.Info(fmt.Sprintf("suppressed %s of %s by %s:%d (%s, until %s)", plural.Of(n, "finding"), s.ID, cfg.Path, s.Line, s.Reason, s.ExpiresText))
	}
	for _, w := range rep.Warnings {
		log.Warn(w)
	}
	log.Debug("evaluated", "at", rep.EvaluatedAt.Format(time.RFC3339), "clock", rep.Clock.Source, "checks", len(check.All()), "incidents", len(rep.Incidents), "findings", len(rep.Findings), "suppressed", res.Suppressed.Total, "took", time.Since(start))
	if err := o.write(rep); err != nil {
		return err
	}
	return o.judge.verdictError(rep)
}

// write renders the report to stdout or --output-file (see writeOutput).
func (o *scanOptions) write(rep *report.Report) error {
	opts := report.Options{Color: o.useColor(), Width: terminalWidth(o.s.Out), Name: o.g.displayName, Catalog: o.judge.cat, ToolVersion: versionString(), FailOn: o.judge.failSev, Checks: checkInfos()}
	if o.judge.failSev == 0 {
		opts.FailOn = report.FailNever
	}
	start := time.Now()
	err := writeOutput(o.outputFile, o.s.Out, func(w io.Writer) error { return report.Render(w, rep, o.output, opts) })
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	if o.outputFile != "" {
		o.g.log.Info("wrote the report", "file", o.outputFile, "format", o.output, "took", time.Since(start))
	}
	return nil
}

// checkInfos lists the registered checks for the junit report.
func checkInfos() []report.CheckInfo {
	var out []report.CheckInfo
	for _, c := range check.All() {
		out = append(out, report.CheckInfo{Name: c.Name, Emits: c.Emits})
	}
	return out
}

func (o *scanOptions) useColor() bool {
	switch o.color {
	case "always":
		return true
	case "never":
		return false
	}
	return colorTerminal(o.s.Out)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
