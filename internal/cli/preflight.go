package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/report"
)

// preflightIDs are the preventive checks of SPEC §2 `preflight`: upgrade images present,
// multi-arch enough and pinned, kubectl fit for the drains, CRDs present and served, Helm
// releases settled, agents current and checking in, capacity, etcd snapshots, agent
// configuration — and anything already failing in the SUC and image families.
var preflightIDs = []string{
	"suc/", "image/", "crd/", "helm/", "config/",
	"fleet/agent-upgrade-stuck", "fleet/agent-heartbeat-stale", "fleet/agent-version-skew",
	"cluster/headroom-low", "cluster/etcd-backup-stale", "cluster/clock-skew",
}

var preflightFormats = []string{"table", "json"}

type preflightOptions struct {
	s Streams
	g *globalOptions

	from       string
	now        string
	output     string
	failOn     string
	target     string
	thresholds []string
	quiet      bool
	outputFile string
	kube       *kubeFlags
	reg        *registryFlags
	live       bool

	nowTime time.Time
	failSev finding.Severity
	cat     *catalog.Catalog
	th      *check.Thresholds
	cfg     *config.Config
}

func newPreflightCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &preflightOptions{s: s, g: g, kube: newKubeFlags(), reg: &registryFlags{}}
	cmd := &cobra.Command{
		Use:   "preflight",
		Short: "Go/no-go before an upgrade: images, kubectl, CRDs, Helm, agents, headroom, etcd",
		Long: `Checks, before an upgrade starts, what makes upgrades stick, and says go or no-go:

  - every image of every system-upgrade-controller Plan stage, and the controller's kubectl image,
    exists in its registry for every selected node's architecture, and is pinned
    (suc/image-missing, suc/image-arch, suc/image-floating, suc/controller-image);
  - the kubectl image takes the drain flags the Plans use and is within one minor of the cluster
    (suc/kubectl-skew);
  - required CRDs exist and their stored versions are still served (crd/);
  - no Helm release is pending or failed (helm/); Fleet agents are current and checking in;
  - at least 20 % allocatable CPU and memory is free (cluster/headroom-low);
  - an etcd snapshot newer than 24 h exists where Rancher manages RKE2/K3s
    (cluster/etcd-backup-stale);
  - the agents' configuration (config/).

With --target-version, Kubernetes upgrade Plans (rke2-upgrade, k3s-upgrade) are judged as if moved
to that version: the images they would pull for it, and kubectl against its minor.

Images are checked against their registries (HEAD requests, no layer downloads) with the docker
config credentials and, live, the workloads' imagePullSecrets; --offline-registry judges them by
events and logs only.

Exit codes: 0 go, 3 no-go (a finding at or above --fail-on, or an upgrade image that is missing
or lacks a node's platform), 1 unstick failed, 2 usage error.`,
		Example: `  # The current kube context
  unstick preflight

  # An offline bundle, images checked against a plain-HTTP mirror, before moving to v1.31.4+rke2r1
  unstick preflight --from bundle/ --insecure-registry mirror.local:5000 \
      --target-version v1.31.4+rke2r1

  # As JSON for a pipeline gate
  unstick preflight --context prod -o json`,
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
	f.StringVar(&o.from, "from", "", "offline bundle to read: a directory or a .tar.gz/.tgz file")
	f.StringVar(&o.now, "now", "", "judge as of this RFC 3339 time (default: the bundle's collection time)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(preflightFormats, "|"))
	f.StringVar(&o.failOn, "fail-on", "error", "no-go when a finding is at or above this severity: critical|error|warning|info")
	f.StringVar(&o.target, "target-version", "", "the Kubernetes version the upgrade moves to (e.g. v1.31.4+rke2r1)")
	f.StringArrayVar(&o.thresholds, "threshold", nil, "override a detection threshold, NAME=VALUE (repeatable)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	f.StringVar(&o.outputFile, "output-file", "", "write the verdict to this file instead of stdout (the exit code is the same)")
	o.reg.addFlags(f)
	o.kube.addFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(preflightFormats...))
	_ = cmd.RegisterFlagCompletionFunc("fail-on", fixedCompletion("critical", "error", "warning", "info"))
	return cmd
}

var targetRE = regexp.MustCompile(`^v?1\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$`)

func validTarget(v string) bool { return targetRE.MatchString(v) }

func (o *preflightOptions) complete() error {
	var err error
	if o.now != "" {
		if o.nowTime, err = time.Parse(time.RFC3339, o.now); err != nil {
			return usageErrorf("--now %q is not an RFC 3339 time such as 2026-11-28T09:30:00Z", o.now)
		}
	}
	if o.failSev, err = finding.ParseSeverity(o.failOn); err != nil {
		return usageErrorf("--fail-on: %v", err)
	}
	if o.cat, err = catalog.Load(); err != nil {
		return err
	}
	if o.cfg, err = o.g.config(); err != nil {
		return err
	}
	if o.cat, o.th, err = o.g.applyConfig(o.cfg, o.cat); err != nil {
		return err
	}
	return setThresholds(o.th, o.thresholds, "suc.planStuckAfter=30m")
}

func (o *preflightOptions) validate() error {
	if err := validateFrom(o.from, o.live); err != nil {
		return err
	}
	if err := validateOutputFile(o.outputFile); err != nil {
		return err
	}
	ok := false
	for _, f := range preflightFormats {
		ok = ok || f == o.output
	}
	if !ok {
		return usageErrorf("-o %q: unknown output format (want one of %s)", o.output, strings.Join(preflightFormats, ", "))
	}
	if o.target != "" && !validTarget(o.target) {
		return usageErrorf("--target-version %q: want a Kubernetes version such as v1.31.4 or v1.31.4+rke2r1", o.target)
	}
	return o.reg.validate()
}

// preflightResult is the verdict and what it rests on; its JSON is `unstick preflight -o json`.
type preflightResult struct {
	SchemaVersion string            `json:"schemaVersion"`
	Verdict       string            `json:"verdict"` // "go" or "no-go"
	FailOn        string            `json:"failOn"`
	TargetVersion string            `json:"targetVersion,omitempty"`
	Registry      string            `json:"registry"` // "checked" or "offline"
	Blocking      []finding.Finding `json:"blocking"`
	Warnings      []finding.Finding `json:"warnings"`
	// BlockingImages are upgrade images that are missing or lack a node platform, whether or
	// not a finding names them (an agent image, say).
	BlockingImages []imageRow `json:"blockingImages"`
	// Unverified are images whose registry could not answer.
	Unverified []imageRow     `json:"unverifiedImages"`
	Images     []imageRow     `json:"images"`
	Report     *report.Report `json:"report"`
}

func (o *preflightOptions) run(ctx context.Context) error {
	l := &upgradeLoader{g: o.g, from: o.from, live: o.live, kube: o.kube, reg: o.reg, cfg: o.cfg, target: o.target, quiet: o.quiet}
	in, err := l.load(ctx)
	if err != nil {
		return err
	}
	now := o.nowTime
	if now.IsZero() {
		now = in.snap.CollectedAt
	}
	if now.IsZero() {
		now = time.Now()
	}
	res := judgePreflight(in, now, o.th, o.cat, o.failSev, o.target, l.offline(), o.cfg, o.g.clock())
	err = writeOutput(o.outputFile, o.s.Out, func(w io.Writer) error {
		if o.output == "json" {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		}
		return writePreflightTable(w, res, o.g.displayName)
	})
	if err != nil {
		return err
	}
	if res.Verdict != "go" {
		return &FindingsError{Count: len(res.Blocking) + len(res.BlockingImages), Severity: o.failSev.String()}
	}
	return nil
}

// judgePreflight is the shared judge path with the preflight's inputs: the registry facts,
// the target version, readiness mode, the preventive subset of IDs.
func judgePreflight(in *upgradeInputs, now time.Time, th *check.Thresholds, cat *catalog.Catalog, failOn finding.Severity, target string, offline bool, cfg *config.Config, clock time.Time) *preflightResult {
	cctx := &check.Context{Snap: in.snap, Now: now, Thresholds: th, Catalog: cat, Images: in.facts, TargetVersion: target, Preflight: true}
	incidents, fs, errs := check.Evaluate(cctx, check.Filter{Only: preflightIDs})
	if cfg != nil {
		incidents, fs, _ = cfg.Apply(clock, incidents, fs)
	}
	errs = append(errs, in.registryErrors...)
	rep := report.New(in.snap, now, incidents, fs, errs)
	res := &preflightResult{SchemaVersion: "1", FailOn: failOn.String(), TargetVersion: target, Registry: "checked", Report: rep,
		Blocking: []finding.Finding{}, Warnings: []finding.Finding{}, BlockingImages: []imageRow{}, Unverified: []imageRow{}}
	if offline {
		res.Registry = "offline"
	}
	for _, f := range rep.Findings {
		if f.Severity >= failOn {
			res.Blocking = append(res.Blocking, f)
		} else {
			res.Warnings = append(res.Warnings, f)
		}
	}
	res.Images = imageRows(in)
	named := map[string]bool{} // image keys a blocking finding already names
	for _, f := range fs {
		if f.Severity >= failOn {
			for _, k := range f.Keys {
				named[k] = true
			}
		}
	}
	for _, r := range res.Images {
		switch {
		case r.blocking():
			covered := true
			for _, u := range r.Uses {
				covered = covered && named[check.ImageKey(u.Cluster, r.Ref)]
			}
			if !covered {
				res.BlockingImages = append(res.BlockingImages, r)
			}
		case r.problem() != "":
			res.Unverified = append(res.Unverified, r)
		}
	}
	res.Verdict = "go"
	if len(res.Blocking) > 0 || len(res.BlockingImages) > 0 {
		res.Verdict = "no-go"
	}
	return res
}

func writePreflightTable(w io.Writer, r *preflightResult, name string) error {
	verdict := "GO"
	if r.Verdict != "go" {
		verdict = "NO-GO"
	}
	fmt.Fprintf(w, "%s preflight: %s — %d blocking (at or above %s), %s, %s", name, verdict, len(r.Blocking)+len(r.BlockingImages), r.FailOn,
		plural.Of(len(r.Warnings), "warning"), plural.Of(len(r.Images), "image"))
	if r.TargetVersion != "" {
		fmt.Fprintf(w, ", target %s", r.TargetVersion)
	}
	fmt.Fprintln(w)
	if len(r.Blocking) > 0 || len(r.BlockingImages) > 0 {
		fmt.Fprintln(w, "\nBLOCKING")
		for _, f := range r.Blocking {
			fmt.Fprintf(w, "  %-8s %s [%s] %s\n", strings.ToUpper(f.Severity.String()), f.ID, f.Cluster, f.Summary)
		}
		for _, row := range r.BlockingImages {
			fmt.Fprintf(w, "  %-8s image %s %s; used by %s\n", "IMAGE", row.Ref, row.problem(), strings.Join(row.usedBy(), "; "))
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "\nWARNINGS")
		for _, f := range r.Warnings {
			fmt.Fprintf(w, "  %-8s %s [%s] %s\n", strings.ToUpper(f.Severity.String()), f.ID, f.Cluster, f.Summary)
		}
	}
	if len(r.Unverified) > 0 {
		fmt.Fprintln(w, "\nNOT VERIFIED")
		for _, row := range r.Unverified {
			fmt.Fprintf(w, "  image %s %s\n", row.Ref, row.problem())
		}
	}
	if len(r.Report.Errors) > 0 {
		fmt.Fprintln(w, "\nERRORS")
		for _, e := range r.Report.Errors {
			fmt.Fprintf(w, "  %s\n", e.String())
		}
	}
	switch {
	case r.Registry == "offline":
		fmt.Fprintln(w, "\nRegistry not asked (--offline-registry): images judged by events and logs only.")
	default:
		fmt.Fprintf(w, "\nRegistry checked: %s ('%s images' lists them).\n", plural.Of(len(r.Images), "image reference"), name)
	}
	if r.Verdict != "go" {
		fmt.Fprintf(w, "Details and fix ladders: %s explain <ID>.\n", name)
	}
	return nil
}
