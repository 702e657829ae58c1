package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/trace"
)

type traceOptions struct {
	s Streams
	g *globalOptions

	from, output, commit, outputFile string
	quiet, live                      bool
	judge                            judgeFlags
	kube                             *kubeFlags
	reg                              *registryFlags
	target                           trace.Target
}

// traceLong and traceExample are trace's help.
const traceLong = `Answers "where is my change?": follows a GitRepo's commit, a Bundle, or a commit (--commit,
a prefix is enough) through Fleet's pipeline, commit → gitjob Job → Bundle → BundleDeployment
per cluster → Helm release revision → workload rollout, with the time each stage was reached
as its objects record it, and marks the first stage that has not moved. The incident scan
reports about that stage (same number, same root cause) says why, with the next safe step.

NAME alone is a GitRepo, else a Bundle, in any namespace. Clusters fan out at the
BundleDeployment: one row per Bundle and cluster, summarised when there are many.

It reads what scan reads, from the same flags: an offline bundle (--from), the current kube
context, --context/--all-contexts, or every cluster behind Rancher (--rancher). Nothing is
changed.

Reports: -o table (default), json (schemaVersion 1, docs/trace.md) or html (one
self-contained page styled as scan's report); --output-file writes it to a file.

Exit codes: 0 the change reached every stage that was read, or is pending with no incident
saying it is stuck (scan judges it within its thresholds), or stopped on a warning; 3 it
stopped: scan holds an incident of severity error or worse about the stage that has not
moved; 4 the input matched nothing (the name, namespace or commit is named) or held nothing
to trace; 1 unstick itself failed; 2 usage error.`

const traceExample = `  # Where did prod-eu-1's Fleet agent upgrade stop? (the bundled example fleet; exits 3)
  unstick trace fleet-agent-c-m-4x7kq2zt --from examples/fleet-upgrade-stuck

  # Where is the platform GitRepo's latest commit?
  unstick trace platform --from examples/fleet-upgrade-stuck

  # One Bundle, and a commit by its prefix
  unstick trace bundle/fleet-default/platform-apf --from examples/fleet-upgrade-stuck
  unstick trace --commit a1462e4 --from examples/fleet-upgrade-stuck

  # Live: the current context, or every cluster a Rancher user may see through Rancher
  unstick trace gitrepo/fleet-default/platform
  unstick trace gitrepo/fleet-default/platform --rancher --context rancher

  # As JSON for a script, or a page to attach to a ticket
  unstick trace platform --from bundle.tar.gz -o json
  unstick trace platform --from bundle.tar.gz -o html --output-file trace.html`

func newTraceCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &traceOptions{s: s, g: g, kube: newKubeFlags(), reg: &registryFlags{}, judge: judgeFlags{noVerdict: true}}
	cmd := &cobra.Command{
		Use:     "trace (gitrepo/NS/NAME | bundle/NS/NAME | NAME | --commit SHA)",
		Short:   "Follow a change from commit to pods and name the stage where it stopped",
		Long:    traceLong,
		Example: traceExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.live = o.from == "" || o.kube.used(cmd.Flags())
			if err := o.complete(args); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.from, "from", "", "offline bundle to read: a directory or a .tar.gz/.tgz file")
	f.StringVar(&o.commit, "commit", "", "follow this commit (a SHA or a prefix of at least 4 hex digits) instead of a named GitRepo or Bundle")
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(trace.Formats(), "|"))
	f.StringVar(&o.outputFile, "output-file", "", "write the trace to this file instead of stdout (the exit code is the same)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	o.judge.addFlags(f, "", "")
	o.kube.addFlags(f)
	o.reg.addFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(trace.Formats()...))
	o.judge.registerCompletions(cmd)
	return cmd
}

func (o *traceOptions) complete(args []string) error {
	arg := ""
	if len(args) == 1 {
		arg = args[0]
	}
	t, err := trace.ParseTarget(arg, o.commit)
	if err != nil {
		return usageErrorf("%v", err)
	}
	o.target = t
	return o.judge.complete(o.g, "helm.pendingAfter=5m")
}

func (o *traceOptions) validate() error {
	if err := o.reg.validate(); err != nil {
		return err
	}
	if err := validateOutputFile(o.outputFile); err != nil {
		return err
	}
	if err := validateFrom(o.from, o.live); err != nil {
		return err
	}
	for _, f := range trace.Formats() {
		if f == o.output {
			return nil
		}
	}
	return usageErrorf("-o %q: unknown output format (want one of %s)", o.output, strings.Join(trace.Formats(), ", "))
}

// run loads and judges the input as scan does, then follows the target through it.
func (o *traceOptions) run(ctx context.Context) error {
	l := &upgradeLoader{g: o.g, from: o.from, live: o.live, kube: o.kube, reg: o.reg, cfg: o.judge.cfg, quiet: o.quiet, noBundleProbe: true}
	in, err := l.load(ctx)
	if err != nil {
		return err
	}
	if err := requireData(in.snap, l.inputName()); err != nil {
		return &NoMatchError{Err: err}
	}
	subj, err := trace.Resolve(in.snap, o.target)
	if err != nil {
		return o.resolveError(err, l.inputName())
	}
	opts := o.judge.options(o.g)
	opts.Images = in.facts
	opts.Errors = in.registryErrors
	res := judge.Judge(in.snap, opts)
	// A part of the input not read shows as not-read stages; say what it was.
	for _, gap := range res.Report.Gaps() {
		o.g.log.Warn("not read: " + gap)
	}
	tr := trace.Build(in.snap, res.Report, o.judge.cat, o.target, subj)
	ropts := trace.RenderOptions{Width: terminalWidth(o.s.Out), Name: o.g.displayName, Version: versionString()}
	if err := writeOutput(o.outputFile, o.s.Out, func(w io.Writer) error { return trace.Render(w, tr, o.output, ropts) }); err != nil {
		return fmt.Errorf("writing the trace: %w", err)
	}
	if tr.ExitStopped() {
		return &TraceStoppedError{Stage: tr.StoppedAt}
	}
	return nil
}

// resolveError names the input a target matched nothing in (exit 4), or says which of
// several it matched (a usage error: name one).
func (o *traceOptions) resolveError(err error, input string) error {
	var amb *trace.AmbiguousError
	if errors.As(err, &amb) {
		return usageErrorf("%v", err)
	}
	return &NoMatchError{Err: fmt.Errorf("%w; read from %s", err, input)}
}

// TraceStoppedError says the change traced stopped at a stage: exit 3.
type TraceStoppedError struct{ Stage string }

func (e *TraceStoppedError) Error() string { return "the change stopped at the " + e.Stage + " stage" }

// NoMatchError says a trace's input held nothing the target names: exit 4.
type NoMatchError struct{ Err error }

func (e *NoMatchError) Error() string { return e.Err.Error() }
func (e *NoMatchError) Unwrap() error { return e.Err }
