package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/source"
)

type collectOptions struct {
	s    Streams
	kube *kubeFlags
	to   string
	// output is the deprecated -o/--output: kubectl's -o names a format, not a destination.
	output string
	quiet  bool
}

func newCollectCmd(s Streams) *cobra.Command {
	o := &collectOptions{s: s, kube: newKubeFlags()}
	cmd := &cobra.Command{
		Use:   "collect --to FILE.tar.gz|DIR",
		Short: "Write a redacted offline bundle of live clusters, for support or a later scan",
		Long: `Reads the same objects and logs a live scan reads — from the current context, the contexts
named with --context, or --all-contexts — and writes them as an offline bundle: one
sub-directory per cluster under clusters/<name>/, pod logs under logs/, and
unstick-bundle.yaml with the collection time, the clusters and what was redacted.

'unstick scan --from' on the bundle gives the findings the live scan gave at that time.

Only an allowlist leaves the cluster: per kind, the fields the checks read. Everything else
is dropped and named in the object's unstick.dev/removed-fields annotation — annotations
(last-applied, objectset applied), Fleet Bundle Helm values and resources, BundleDeployment
options' values, container args and commands, SUC Plan envs, args and commands. Secrets keep
their keys, never a value (Helm release Secrets keep a re-encoded record of their metadata:
name, revision, status, times, chart, redacted description — never values or manifests);
ConfigMap and environment values are replaced by [redacted] except the system-upgrade-
controller settings SYSTEM_UPGRADE_*. Free text that is kept — event, condition and status
messages, termination messages, log lines — passes one redactor (tokens in key=value, key:
value, --flag value, JSON and header forms, cookies and session keys, passwords in URLs, PEM
blocks, base64 that decodes to a credential). What was redacted is printed and listed in
unstick-bundle.yaml. The archive and every file of a directory bundle are written 0600
(directories 0700), through a temporary name renamed into place; a symlink at the
destination and a non-empty directory are refused.`,
		Example: `  # The current context, as a tar.gz to attach to a ticket
  unstick collect --to fleet-$(date +%F).tar.gz

  # The management cluster and two downstream clusters, as a directory
  unstick collect --context rancher --context prod-eu-1 --context prod-us-1 --to ./bundle

  # Every cluster the Rancher context's token may see, through Rancher's proxy
  unstick collect --rancher --context rancher --to fleet.tar.gz

  # Later, anywhere
  unstick scan --from fleet-2026-11-28.tar.gz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.to, "to", "", "where to write the bundle: a .tar.gz/.tgz file or a new directory")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "deprecated: use --to")
	_ = cmd.Flags().MarkHidden("output")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	o.kube.addFlags(cmd.Flags())
	return cmd
}

// validate takes the destination from --to, or from the deprecated -o with a warning, and
// refuses negative limits before any cluster is read.
func (o *collectOptions) validate(cmd *cobra.Command) error {
	if cmd.Flags().Changed("output") {
		if o.to != "" {
			return usageErrorf("--to and -o/--output both name the destination; use --to alone")
		}
		fmt.Fprintf(o.s.ErrOut, "warning: collect -o/--output is deprecated and will be removed in a later release; use --to %s\n", o.output)
		o.to = o.output
	}
	if o.to == "" {
		return usageErrorf("collect needs --to FILE.tar.gz or --to DIR")
	}
	return o.kube.validate()
}

func (o *collectOptions) run(ctx context.Context) error {
	prog := newProgress(o.s.ErrOut, o.quiet)
	live, err := o.kube.live(ctx, func(done, total int) { prog.count("collecting clusters", done, total, "clusters") })
	if err != nil {
		return err
	}
	w := source.NewBundleWriter("unstick "+versionString(), time.Now())
	err = live.Read(ctx, w)
	prog.done()
	if err != nil {
		return err
	}
	n, err := w.Write(o.to)
	if err != nil {
		return fmt.Errorf("writing the bundle: %w", err)
	}
	red := w.Redacted()
	msg := fmt.Sprintf("wrote %s: %s, %s", o.to, plural.Of(len(live.Targets), "cluster"), plural.Of(n, "file"))
	if len(red) > 0 {
		msg += "; redacted " + strings.Join(red, ", ")
	}
	_, err = fmt.Fprintln(o.s.ErrOut, msg)
	return err
}
