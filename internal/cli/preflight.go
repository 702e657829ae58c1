package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/plural"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

var preflightFormats = []string{"table", "json"}

type preflightOptions struct {
	s Streams
	g *globalOptions

	from       string
	output     string
	target     string
	quiet      bool
	outputFile string
	judge      judgeFlags
	kube       *kubeFlags
	reg        *registryFlags
	live       bool
}

func newPreflightCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &preflightOptions{s: s, g: g, kube: newKubeFlags(), reg: &registryFlags{}, judge: judgeFlags{filterVerb: "judge"}}
	cmd := &cobra.Command{
		Use:   "preflight",
		Short: "Go/no-go before an upgrade: images, kubectl, CRDs, Helm, agents, headroom, etcd",
		Long: `Checks, before an upgrade starts, what makes upgrades stick, and says go or no-go:

  - every image of every system-upgrade-controller Plan stage, and the controller's kubectl image,
    exists in its registry for every selected node's architecture, and is pinned
    (suc/image-missing, suc/image-arch, suc/image-floating, suc/controller-image);
  - the kubectl image takes the drain flags the Plans use and is within one minor of the cluster
    (suc/kubectl-skew);
  - required CRDs exist and their stored versions are still served, and the CRDs a Fleet bundle
    is rolling out keep every stored version (crd/);
  - the API gate: no Helm release revision (the deployed one and any pending or failed after it)
    and no Fleet bundle file uses an API version that the Kubernetes version the cluster's next
    upgrade installs no longer serves (api/removed-in-target); that version is read per cluster
    from its Kubernetes upgrade Plans (spec.version, else status.latestVersion) or from Rancher
    (spec.kubernetesVersion of provisioning.cattle.io Clusters, rke2Config/k3sConfig of imported
    ones). 'unstick explain api/removed-in-target --table' lists the removed-API table;
    APIs that version still serves but deprecates are warnings (api/deprecated-in-target);
  - no Helm release is pending or failed (helm/); Fleet agents are current and checking in;
  - at least 20 % allocatable CPU and memory is free (cluster/headroom-low);
  - an etcd snapshot newer than 24 h exists where Rancher manages RKE2/K3s
    (cluster/etcd-backup-stale);
  - the agents' configuration (config/).

With --target-version, Kubernetes upgrade Plans (rke2-upgrade, k3s-upgrade) are judged as if moved
to that version: the images they would pull for it, and kubectl against its minor; and every
cluster's API gate is judged against it instead of its Plans' or Rancher's version. A minor
alone (--target-version v1.32) is enough for the API gate; the Plans' images are then checked
at the version each Plan names.

Each blocker is an incident as scan reports it: its root cause first, its symptoms, and one fix,
the incident's next safe step as scan prints it, aimed at its cluster with --context.

Images are checked against their registries (HEAD requests, no layer downloads) with the docker
config credentials and, live, the workloads' imagePullSecrets; --offline-registry judges them by
events and logs only.

Every incident scan reports is judged: a critical or error incident scan shows (an upgrade
already stuck) blocks as much as a missing image. What only a preflight reports (a configuration
risk not yet biting, a drain that would block) forms incidents of its own and never changes
one scan reports. Blockers are marked "gate" when the catalogue lists their root cause's ID as
an upgrade gate (` + "`unstick explain`" + ` shows it) or only a preflight reports them, "stuck"
otherwise.

--only and --only-cluster narrow what is judged as scan's do: blockers and warnings, and the
image references (those on the clusters kept, when suc/image-missing or suc/image-arch is).

Exit codes: 0 go; 3 no-go (an incident at or above --fail-on, or an upgrade image that is
missing or lacks a node's platform);
` + exitIncompleteHelp + `; 1 unstick failed, or the input
held no Kubernetes object; 2 usage error (including an --only-cluster that names no cluster
of the input).`,
		Example: `  # The current kube context
  unstick preflight

  # An offline bundle, images checked against a plain-HTTP mirror, before moving to v1.31.4+rke2r1
  unstick preflight --from bundle/ --insecure-registry mirror.local:5000 \
      --target-version v1.31.4+rke2r1

  # As JSON for a pipeline gate
  unstick preflight --context prod -o json

  # Every cluster a Rancher user may see, through Rancher's proxy
  unstick preflight --rancher --context rancher`,
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
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(preflightFormats, "|"))
	o.judge.addFlags(f, "error", "no-go when a finding is at or above this severity: critical|error|warning|info")
	f.StringVar(&o.target, "target-version", "", "the Kubernetes version the upgrade moves to (e.g. v1.32.5+rke2r1, or v1.32 for the API gate alone)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	f.StringVar(&o.outputFile, "output-file", "", "write the verdict to this file instead of stdout (the exit code is the same)")
	o.reg.addFlags(f)
	o.kube.addFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(preflightFormats...))
	o.judge.registerCompletions(cmd, "critical", "error", "warning", "info")
	return cmd
}

var targetRE = lazyre.New(`^v?1\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]*)?$`)

func validTarget(v string) bool { return targetRE().MatchString(v) }

// minorTargetRE is a Kubernetes minor without a patch ("v1.32"): enough for the API gate,
// which judges what a minor serves, but not for naming the images an upgrade pulls.
var minorTargetRE = lazyre.New(`^v?1\.\d+$`)

func (o *preflightOptions) complete() error {
	if err := o.judge.complete(o.g, "suc.planStuckAfter=30m"); err != nil {
		return err
	}
	if o.judge.failSev == 0 {
		return usageErrorf("--fail-on none: a preflight always has a gate; want critical, error, warning or info")
	}
	return nil
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
	if o.target != "" && !validTarget(o.target) && !minorTargetRE().MatchString(o.target) {
		return usageErrorf("--target-version %q: want a Kubernetes version such as v1.32, v1.32.5 or v1.32.5+rke2r1", o.target)
	}
	return o.reg.validate()
}

// preflightResult is the verdict and what it rests on; its JSON is `unstick preflight -o json`.
type preflightResult struct {
	SchemaVersion string `json:"schemaVersion"`
	Verdict       string `json:"verdict"` // "go", "no-go" or "incomplete"
	FailOn        string `json:"failOn"`
	TargetVersion string `json:"targetVersion,omitempty"`
	Registry      string `json:"registry"` // "checked" or "offline"
	// Blocking are the report's incidents whose worst finding is at or above FailOn, root
	// cause first, as the report orders them.
	Blocking []blocker `json:"blocking"`
	// Warnings are the findings of the incidents that do not block.
	Warnings []finding.Finding `json:"warnings"`
	// BlockingImages are upgrade images that are missing or lack a node platform, whether or
	// not a finding names them (an agent image, say).
	BlockingImages []imageRow `json:"blockingImages"`
	// Unverified are images whose registry could not answer, or was not asked.
	Unverified []imageRow `json:"unverifiedImages"`
	// ImagesChecked counts the references a registry answered for (or that are not valid
	// references); ImagesUnchecked those it did not (unreachable, refused, not asked).
	ImagesChecked   int            `json:"imagesChecked"`
	ImagesUnchecked int            `json:"imagesUnchecked"`
	Images          []imageRow     `json:"images"`
	Report          *report.Report `json:"report"`
	// offlineWhy says why no registry was asked, for the footer.
	offlineWhy string
}

func (o *preflightOptions) run(ctx context.Context) error {
	l := &upgradeLoader{g: o.g, from: o.from, live: o.live, kube: o.kube, reg: o.reg, cfg: o.judge.cfg, target: o.target, quiet: o.quiet}
	in, err := l.load(ctx)
	if err != nil {
		return err
	}
	if err := requireData(in.snap, l.inputName()); err != nil {
		return err
	}
	if err := checkFilters(in.snap, o.judge.clusters); err != nil {
		return err
	}
	opts := o.judge.options(o.g)
	opts.Images, opts.Errors, opts.TargetVersion, opts.Preflight = in.facts, in.registryErrors, o.target, true
	opts.Filter = o.judge.filter()
	res := judgePreflight(in, judge.Judge(in.snap, opts).Report, o.judge.cat, o.judge.failSev, o.target, l.offline(), opts.Filter)
	res.offlineWhy = l.offlineReason()
	for _, w := range res.Report.Warnings {
		o.g.log.Warn(w)
	}
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
	switch res.Verdict {
	case "go":
		return nil
	case verdictIncomplete:
		if o.judge.allowIncomplete {
			return nil
		}
		return &IncompleteError{Gaps: res.gaps()}
	}
	return &FindingsError{Count: len(res.Blocking) + len(res.BlockingImages), Severity: o.judge.failSev.String()}
}

// verdictIncomplete is preflight's verdict when nothing blocks but not everything was read:
// a gate never says go on a partial read.
const verdictIncomplete = "incomplete"

// preflightSchemaVersion versions `unstick preflight -o json`: 2 lists blocking incidents,
// 1 listed blocking findings.
const preflightSchemaVersion = "2"

// judgePreflight sorts a judged report into go/no-go: every incident whose worst finding is at
// or above failOn blocks (scan's incidents and those only a preflight reports), and so does an
// upgrade image that is missing or lacks a node's platform that no blocking incident names.
func judgePreflight(in *upgradeInputs, rep *report.Report, cat *catalog.Catalog, failOn finding.Severity, target string, offline bool, keep check.Filter) *preflightResult {
	res := &preflightResult{SchemaVersion: preflightSchemaVersion, FailOn: failOn.String(), TargetVersion: target, Registry: "checked", Report: rep,
		Blocking: []blocker{}, Warnings: []finding.Finding{}, BlockingImages: []imageRow{}, Unverified: []imageRow{}}
	if offline {
		res.Registry = "offline"
	}
	named := map[string]bool{} // image keys a blocking incident already names
	for _, inc := range rep.Incidents {
		if inc.Worst() < failOn {
			res.Warnings = append(res.Warnings, members(inc)...)
			continue
		}
		res.Blocking = append(res.Blocking, blocker{Incident: inc, Kind: blockKind(inc, cat)})
		for _, f := range members(inc) {
			for _, k := range f.Keys {
				named[k] = true
			}
		}
	}
	check.SortFindings(res.Warnings)
	res.Images = keptImages(imageRows(in), keep)
	sortImages(res, named, offline)
	switch {
	case len(res.Blocking) > 0 || len(res.BlockingImages) > 0:
		res.Verdict = "no-go"
	case rep.Verdict == report.VerdictIncomplete || len(res.Unverified) > 0:
		res.Verdict = verdictIncomplete
	default:
		res.Verdict = "go"
	}
	return res
}

// members are an incident's findings, root cause first.
func members(inc finding.Incident) []finding.Finding {
	return append([]finding.Finding{inc.RootCause}, inc.Symptoms...)
}

// blockKind is "gate" for an incident whose root cause the catalogue lists as an upgrade gate,
// or that only a preflight reports, and "stuck" for an upgrade already stuck.
func blockKind(inc finding.Incident, cat *catalog.Catalog) string {
	if e, ok := cat.Get(inc.RootCause.ID); ok && e.Preflight || inc.RootCause.PreflightOnly {
		return "gate"
	}
	return "stuck"
}

// sortImages adds to res the upgrade images that block although no blocking incident names
// them, and those no registry answered for; and counts the checked and unchecked references.
func sortImages(res *preflightResult, named map[string]bool, offline bool) {
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
		case !r.checked() && !offline:
			res.Unverified = append(res.Unverified, r)
		}
		if r.checked() {
			res.ImagesChecked++
		} else {
			res.ImagesUnchecked++
		}
	}
}

// keptImages are the image references --only and --only-cluster keep: those a finding about
// an image (suc/image-missing, suc/image-arch) on one of the clusters using it would pass.
func keptImages(rows []imageRow, keep check.Filter) []imageRow {
	if len(keep.Only) == 0 && len(keep.Clusters) == 0 {
		return rows
	}
	var out []imageRow
	for _, r := range rows {
		for _, u := range r.Uses {
			if keep.Keep(finding.Finding{ID: "suc/image-missing", Cluster: u.Cluster}) || keep.Keep(finding.Finding{ID: "suc/image-arch", Cluster: u.Cluster}) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// gaps says why a preflight is incomplete: what the report could not read, and the images
// no registry answered for.
func (r *preflightResult) gaps() []string {
	out := r.Report.Gaps()
	if n := len(r.Unverified); n > 0 {
		out = append(out, fmt.Sprintf("%s could not be verified in %s registry (--offline-registry judges images by events and logs only)",
			plural.Forms(n, "image", "images"), map[bool]string{true: "its", false: "their"}[n == 1]))
	}
	return out
}

// blocker is an incident that stops an upgrade, marked gate (its root cause is an
// upgrade-readiness check of the catalogue, or only a preflight reports it) or stuck (an
// upgrade already stuck, as scan reports it). Its JSON is the incident's (rootCause,
// symptoms, clusters, nextStep) with "blocks".
type blocker struct {
	finding.Incident
	Kind string `json:"blocks"`
}

// writePreflightTable writes the checklist for a person. Every value from the input is
// printed on one line, its line breaks shown as ⏎, and without escape sequences: a Helm
// description or an event message cannot add lines that pass for the checklist's own.
func writePreflightTable(w io.Writer, r *preflightResult, name string) error {
	line := textsafe.Line
	verdict := map[string]string{"go": "GO", "no-go": "NO-GO", verdictIncomplete: "INCOMPLETE (no verdict)"}[r.Verdict]
	if r.Verdict == "go" && r.Registry == "offline" && r.ImagesUnchecked > 0 {
		// The user chose not to ask a registry: a go on everything but the images.
		verdict = "GO (images not checked)"
	}
	fmt.Fprintf(w, "%s preflight: %s — %d blocking (at or above %s), %s, %s", name, verdict, len(r.Blocking)+len(r.BlockingImages), r.FailOn,
		plural.Forms(len(r.Warnings), "warning", "warnings"), plural.Forms(len(r.Images), "image", "images"))
	if r.TargetVersion != "" {
		fmt.Fprintf(w, ", target %s", r.TargetVersion)
	}
	fmt.Fprintln(w)
	for _, warn := range r.Report.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", line(warn))
	}
	if h := r.Report.HiddenSummary(); h != "" {
		fmt.Fprintf(w, "Hidden: %s.\n", line(h))
	}
	if len(r.Blocking) > 0 || len(r.BlockingImages) > 0 {
		fmt.Fprintln(w, "\nBLOCKING")
		for _, b := range r.Blocking {
			writeBlocker(w, b)
		}
		for _, row := range r.BlockingImages {
			fmt.Fprintf(w, "  %-8s %-5s image %s %s; used by %s\n", "IMAGE", "gate", line(row.Ref), line(row.problem()), line(strings.Join(row.usedBy(), "; ")))
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "\nWARNINGS")
		for _, f := range r.Warnings {
			fmt.Fprintf(w, "  %-8s %s [%s] %s\n", strings.ToUpper(f.Severity.String()), f.ID, line(whereLabel(f)), line(f.Summary))
		}
	}
	if len(r.Unverified) > 0 {
		fmt.Fprintln(w, "\nNOT VERIFIED")
		for _, row := range r.Unverified {
			why := row.problem()
			if why == "" {
				why = "was not checked in its registry"
			}
			fmt.Fprintf(w, "  image %s %s; used by %s\n", line(row.Ref), line(why), line(strings.Join(row.usedBy(), "; ")))
		}
	}
	if len(r.Report.Errors) > 0 {
		fmt.Fprintln(w, "\nERRORS (what could not be read or judged)")
		for _, e := range r.Report.Errors {
			fmt.Fprintf(w, "  %s\n", line(e.String()))
		}
	}
	if r.Verdict == verdictIncomplete {
		fmt.Fprintf(w, "\nNothing blocks in what was read, but %s: not a go.\n", line(strings.Join(r.gaps(), "; ")))
	}
	fmt.Fprintln(w)
	writeRegistryFooter(w, r, name)
	if r.Verdict != "go" {
		fmt.Fprintf(w, "Details and fix ladders: %s explain ID; next steps: %s scan with the same input.\n", name, name)
	}
	return nil
}

// writeRegistryFooter says how many image references a registry answered for and how many
// it did not, and, with --offline-registry, that images were not checked.
func writeRegistryFooter(w io.Writer, r *preflightResult, name string) {
	refs := plural.Forms(len(r.Images), "image reference", "image references")
	if r.Registry == "offline" {
		why := r.offlineWhy
		if why == "" {
			why = "registry access is off"
		}
		fmt.Fprintf(w, "Images not checked (%s): %s judged by events and logs only ('%s images' lists them).\n", why, refs, name)
		return
	}
	fmt.Fprintf(w, "Registry: %s, %d checked, %d could not be checked ('%s images' lists them).\n", refs, r.ImagesChecked, r.ImagesUnchecked, name)
}

// whereLabel names the cluster a finding is on and, for management-side findings, the
// downstream cluster it is about: "local → prod-us-1".
func whereLabel(f finding.Finding) string {
	if f.Affects != "" && f.Affects != f.Cluster {
		return f.Cluster + " → " + f.Affects
	}
	return f.Cluster
}

// writeBlocker writes one blocking incident: its root cause, its symptoms on one line (ID and
// where), and its one fix, the incident's next safe step with its notes.
func writeBlocker(w io.Writer, b blocker) {
	line, rc := textsafe.Line, b.RootCause
	fmt.Fprintf(w, "  %-8s %-5s %s [%s] %s\n", strings.ToUpper(b.Worst().String()), b.Kind, rc.ID, line(whereLabel(rc)), line(rc.Summary))
	if len(b.Symptoms) > 0 {
		var ss []string
		for _, f := range b.Symptoms {
			ss = append(ss, f.ID+" ["+whereLabel(f)+"]")
		}
		fmt.Fprintf(w, "           symptoms: %s\n", line(strings.Join(ss, ", ")))
	}
	st := b.NextStep
	if st == nil {
		return
	}
	risk := ""
	if st.Risk != "" {
		risk = ", risk " + st.Risk
	}
	fmt.Fprintf(w, "           fix (%s%s): %s\n", st.Rung, risk, line(st.Action))
	for _, c := range st.Commands {
		fmt.Fprintf(w, "             $ %s\n", line(c))
	}
	for _, n := range st.Notes {
		fmt.Fprintf(w, "             (%s)\n", line(n))
	}
}
