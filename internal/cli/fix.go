package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/registry"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

var fixFormats = []string{"table", "json"}

type fixOptions struct {
	s Streams
	g *globalOptions

	from          string
	output        string
	images        []string
	maxRisk       string
	apply         bool
	yes           bool
	backupDir     string
	verifyTimeout time.Duration
	quiet         bool
	judge         judgeFlags
	kube          *kubeFlags
	backupKey     backupKeyFlags
	reg           *registryFlags
	live          bool

	// completed
	risk    remediate.Risk
	choices []remediate.ImageChoice
}

func newFixCmd(s Streams, g *globalOptions) *cobra.Command {
	o := &fixOptions{s: s, g: g, kube: newKubeFlags(), reg: &registryFlags{}, judge: judgeFlags{filterVerb: "fix"}}
	cmd := &cobra.Command{
		Use:   "fix",
		Short: "Plan, and with --apply carry out, the least risky fix for each stuck upgrade",
		Long: `Turns what scan finds into a remediation plan and, only with --apply, carries it out.

For each incident the plan climbs the fix ladder, lowest risk first: observe (save the objects,
their events and logs), resync (bump a Fleet Cluster's redeployAgentGeneration — only where
Fleet deploys the agent itself, spec.kubeConfigSecret set, as Rancher registers its clusters —
or a Bundle's or GitRepo's forceSyncGeneration), restart (the agent's or controller's
Deployment, as kubectl rollout restart does), repair (roll a pending Helm release back as helm
rollback does, or mark it failed where nothing can be rolled back to; delete a stuck SUC Job;
remove a node's plan.upgrade.cattle.io/<plan> label; uncordon a node left cordoned), realign
(patch a SUC Plan's image to one the registry confirms for every node's platform). Every step
says what it changes, why (the finding and its evidence), its risk, what must still hold when it
runs (the objects' resourceVersion when planned), how success is verified (for an agent that
stopped checking in, its next check-in, not only the controller's reconcile), and the kubectl or
helm command an operator would type instead. --max-risk caps what runs (default low); steps
above it are listed.

Without --apply nothing is changed. With --apply each step asks first (--yes answers yes), then:
backs up every object it will touch (YAML, one file per object, with events and pod logs as
evidence) into --backup-dir, asks the API server for a server-side dry-run, writes with the
resourceVersion read when planning as a precondition, waits up to --verify-timeout for the
outcome that means the incident is gone (a BundleDeployment Ready at its new deploymentID, a
Helm release deployed at the new revision, a rollout complete), and appends a line to the
journal in --backup-dir. An incident stops at the first rung that verifies; once the steps are
done the clusters are judged again as scan does, and an incident whose root cause is still
detected is unverified, not fixed. An object that changed since planning is never overwritten:
the step makes no write, the plan is made again and shown, and fix stops. Before the first
write, fix asks the API server whether the credentials allow every write of the plan and names
what is missing (deploy/rbac/fix.yaml grants it).

Run again with the same --backup-dir after an interruption: finished steps are not repeated, a
step the interrupted run wrote is verified instead of written again, and no backup is
overwritten. 'unstick restore DIR' puts the objects back. The backup's record and every
journal line carry a MAC under a key kept outside the backup directory
(~/.config/unstick/backup.key, made 0600 on first use; or --backup-key-file,
--backup-key-secret): a directory whose MACs do not verify is refused before any cluster is
read.

Never touched: Fleet ClusterRegistrations and registration secrets, CRDs, Namespaces, and
Secrets other than Helm release storage.

Helm release records are written with Helm's own storage driver; backups of release Secrets
keep their payload (files 0600 in directories 0700) so restore is exact, and payloads are never
printed. --image references are checked against their registry even with --offline-registry.

Exit codes: 0 nothing to fix (everything was read) or every incident fixed; 3 incidents remain
(a plan printed without --apply, or steps blocked, above --max-risk, declined, failed or not
verified) whose most severe finding is at or above --fail-on (default info: any incident);
4 nothing to fix was found but part of the input could not be read; 1 unstick failed, an
object changed since planning, or the input held no Kubernetes object; 2 usage error.`,
		Example: `  # The plan for the current context; nothing is changed
  unstick fix

  # Only the Helm findings of one downstream cluster, as JSON
  unstick fix --context rancher --context prod-eu-1 --only helm/ \
      --only-cluster prod-eu-1 -o json

  # The plan for every cluster a Rancher user may see, read through Rancher's proxy
  unstick fix --rancher --context rancher --only-cluster prod-eu-1

  # Carry it out, rolling back pending Helm releases (medium risk), without prompts
  unstick fix --context prod-eu-1 --apply --yes --max-risk medium \
      --backup-dir ./fix-prod-eu-1

  # Realign a SUC Plan to a kubectl tag that exists for every node, then clear its Jobs and labels
  unstick fix --context edge --max-risk medium --apply \
      --image system-upgrade/apply-manifests:upgrade=rancher/kubectl:v1.31.12

  # Put everything back
  unstick restore ./fix-prod-eu-1`,
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
	f.StringVar(&o.from, "from", "", "plan from an offline bundle (a directory or .tar.gz) instead of live clusters; cannot --apply")
	f.StringVarP(&o.output, "output", "o", "table", "output format: "+strings.Join(fixFormats, "|"))
	o.judge.addFlags(f, "info", "exit 3 while an incident whose most severe finding is at or above this severity remains (planned, guided, or not verified): critical|error|warning|info|none")
	f.StringArrayVar(&o.images, "image", nil, "image for a Plan realign step, [[NAMESPACE/]PLAN:]STAGE=IMAGE with STAGE upgrade or prepare (repeatable; checked against its registry)")
	f.StringVar(&o.maxRisk, "max-risk", "low", "highest risk a step may have to run: low|medium|high")
	f.BoolVar(&o.apply, "apply", false, "carry the plan out (default: only print it)")
	f.BoolVarP(&o.yes, "yes", "y", false, "with --apply, answer yes to every step's confirmation")
	f.StringVar(&o.backupDir, "backup-dir", "", "where --apply keeps backups, evidence and its journal (default ./unstick-fix-<time>; reuse it to resume)")
	o.backupKey.addFlags(f)
	f.DurationVar(&o.verifyTimeout, "verify-timeout", execute.DefaultVerifyTimeout, "how long a step waits for its outcome (the deployment Ready, the release deployed, the rollout complete) before it counts as unverified")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	o.reg.addFlags(f)
	o.kube.addFlags(f)
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion(fixFormats...))
	_ = cmd.RegisterFlagCompletionFunc("max-risk", fixedCompletion("low", "medium", "high"))
	o.judge.registerCompletions(cmd, "critical", "error", "warning", "info", "none")
	return cmd
}

func (o *fixOptions) complete() error {
	var err error
	if o.risk, err = remediate.ParseRisk(o.maxRisk); err != nil || o.risk == remediate.None {
		return usageErrorf("--max-risk %q: want low, medium or high", o.maxRisk)
	}
	for _, s := range o.images {
		ch, err := remediate.ParseImageChoice(s)
		if err != nil {
			return usageErrorf("--image %v", err)
		}
		o.choices = append(o.choices, ch)
	}
	return o.judge.complete(o.g, "helm.pendingAfter=5m")
}

func (o *fixOptions) validate() error {
	if err := validateFrom(o.from, o.live); err != nil {
		return err
	}
	if o.apply && !o.live {
		return usageErrorf("--apply changes live clusters; a plan made from --from %s can only be printed", o.from)
	}
	if o.yes && !o.apply {
		return usageErrorf("--yes answers --apply's prompts; without --apply nothing is changed or asked")
	}
	if o.backupDir != "" && !o.apply {
		return usageErrorf("--backup-dir is where --apply keeps its backups; without --apply nothing is written")
	}
	if (o.backupKey.file != "" || o.backupKey.secret != "") && !o.apply {
		return usageErrorf("the backup key authenticates what --apply writes; without --apply there is no backup")
	}
	if err := o.backupKey.validate(); err != nil {
		return err
	}
	ok := false
	for _, f := range fixFormats {
		ok = ok || f == o.output
	}
	if !ok {
		return usageErrorf("-o %q: unknown output format (want one of %s)", o.output, strings.Join(fixFormats, ", "))
	}
	if o.verifyTimeout <= 0 {
		return usageErrorf("--verify-timeout must be positive")
	}
	return o.reg.validate()
}

// plan reads the clusters (or bundle), judges them and plans the fixes. The report says
// whether the input was read whole.
func (o *fixOptions) plan(ctx context.Context) (*remediate.Plan, *report.Report, error) {
	in, rep, err := o.judged(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range rep.Warnings {
		o.g.log.Warn(w)
	}
	return remediate.Build(remediate.Input{Snap: in.snap, Incidents: rep.Incidents, Options: remediate.Options{
		MaxRisk: o.risk, Only: o.judge.only, Clusters: o.judge.clusters, Images: o.choices, ImageFacts: o.imageFacts(ctx),
	}}), rep, nil
}

// judged reads the clusters (or bundle) and judges them as scan does.
func (o *fixOptions) judged(ctx context.Context) (*upgradeInputs, *report.Report, error) {
	l := &upgradeLoader{g: o.g, from: o.from, live: o.live, kube: o.kube, reg: o.reg, cfg: o.judge.cfg, quiet: o.quiet}
	in, err := l.load(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := requireData(in.snap, l.inputName()); err != nil {
		return nil, nil, err
	}
	if err := checkFilters(in.snap, o.judge.clusters); err != nil {
		return nil, nil, err
	}
	opts := o.judge.options(o.g)
	// fix's --fail-on counts the incidents that remain (fixExit), not the findings judged:
	// the report's verdict is only asked whether the input was read whole.
	opts.FailOn = 0
	// --only and --only-cluster narrow what is judged as scan's do, so fix plans the incidents
	// `scan --only` shows, rooted where scan roots them.
	opts.Filter = o.judge.filter()
	opts.Images, opts.Errors = in.facts, in.registryErrors
	return in, judge.Judge(in.snap, opts).Report, nil
}

// recheck is the run's last gate (execute.Options.Recheck): the clusters read and judged
// again once the steps are done, so fix reports fixed only what a scan run now no longer
// detects.
func (o *fixOptions) recheck(ctx context.Context) ([]finding.Finding, error) {
	_, rep, err := o.judged(ctx)
	if err != nil {
		return nil, err
	}
	return rep.Findings, nil
}

// planExit is the exit of a printed plan: 3 while incidents remain, 4 when none was found
// in an input that was not read whole.
func (o *fixOptions) planExit(p *remediate.Plan, rep *report.Report) error {
	if n := o.remaining(p, rep, nil); n > 0 {
		return &FindingsError{Count: n, Severity: "open"}
	}
	if rep.Verdict == report.VerdictIncomplete && !o.judge.allowIncomplete {
		return &IncompleteError{Gaps: rep.Gaps()}
	}
	return nil
}

// imageFacts asks the registries about the --image references: a Plan is only patched to
// an image that exists for its nodes' platforms, so they are checked even with
// --offline-registry.
func (o *fixOptions) imageFacts(ctx context.Context) map[string]imageref.Facts {
	if len(o.choices) == 0 {
		return nil
	}
	opts := registry.Options{Timeout: o.reg.timeout, Concurrency: o.reg.concurrency, UserAgent: "unstick/" + versionString()}
	opts.Insecure = append(opts.Insecure, o.reg.insecure...)
	if o.judge.cfg != nil {
		opts.Insecure = append(opts.Insecure, o.judge.cfg.Registry.Insecure...)
	}
	var refs []string
	for _, ch := range o.choices {
		refs = append(refs, ch.Ref)
	}
	return registry.New(opts).Probe(ctx, refs, nil)
}

func (o *fixOptions) run(ctx context.Context) error {
	if !o.apply {
		plan, rep, err := o.plan(ctx)
		if err != nil {
			return err
		}
		if o.output == "json" {
			err = remediate.WriteJSON(o.s.Out, plan)
		} else {
			err = remediate.WriteTable(o.s.Out, plan, remediate.TableOptions{Hint: o.applyHint(), Width: terminalWidth(o.s.Out)})
		}
		if err != nil {
			return err
		}
		return o.planExit(plan, rep)
	}
	runID := time.Now().UTC().Format("20060102T150405.000Z")
	dir := o.backupDir
	if dir == "" {
		dir = "unstick-fix-" + runID[:len("20060102T150405")] + "Z"
	}
	// The key first, and with it the backup directory an earlier run left: one whose MACs do
	// not verify is refused before any cluster is read.
	key, err := o.backupKey.load(ctx, o.kube, true)
	if err != nil {
		return err
	}
	unfinished, err := execute.Unfinished(dir, key)
	if err != nil {
		return err
	}
	targets, err := o.kube.targets(ctx)
	if err != nil {
		return err
	}
	configs := map[string]*rest.Config{}
	for _, t := range targets {
		configs[t.Name] = t.Config
	}
	log := o.s.Out
	if o.output == "json" {
		log = o.s.ErrOut
	}
	opts := execute.Options{BackupDir: dir, Yes: o.yes, In: o.s.In, Out: log, VerifyTimeout: o.verifyTimeout,
		Clients: execute.NewClients(configs), Run: runID, Key: key, Recheck: o.recheck}
	// An interrupted run is finished first, from its journal; then the plan is made again.
	var resumed *execute.Result
	if unfinished {
		fmt.Fprintf(log, "Finishing what an interrupted run left in %s before planning again\n", dir)
		// The journal is only a file: a step read back from it runs again only where the
		// plan made now, from the clusters as they are, holds the same change. That plan is
		// not narrowed by --only/--only-cluster: the interrupted run may have been narrowed
		// otherwise, and what it began is finished either way.
		only, clusters := o.judge.only, o.judge.clusters
		o.judge.only, o.judge.clusters = nil, nil
		current, _, err := o.plan(ctx)
		o.judge.only, o.judge.clusters = only, clusters
		if err != nil {
			return err
		}
		ropts := opts
		ropts.Run = runID + "-resume"
		if resumed, err = execute.Resume(ctx, ropts, current); err != nil {
			return fmt.Errorf("finishing the interrupted run: %w (journal in %s)", err, dir)
		}
	}
	plan, rep, err := o.plan(ctx)
	if err != nil {
		return err
	}
	if len(plan.Steps()) == 0 {
		if o.output == "json" {
			err = writeFixJSON(o.s.Out, plan, resumed, nil, nil)
		} else {
			err = remediate.WriteTable(o.s.Out, plan, remediate.TableOptions{Applying: true, Width: terminalWidth(o.s.Out)})
		}
		if err != nil {
			return err
		}
		// What the interrupted run began and this one finished without seeing its outcome is
		// not fixed: say so, and exit as an unverified run does.
		if n := writeResumedUnverified(log, resumed); n > 0 {
			return &FindingsError{Count: n, Severity: "unverified"}
		}
		// Nothing automatic left to do, but incidents whose only steps are guided (listed
		// above) are still open: the same exit as the printed plan.
		return o.planExit(plan, rep)
	}
	if o.output != "json" {
		if err := remediate.WriteTable(o.s.Out, plan, remediate.TableOptions{Applying: true, Width: terminalWidth(o.s.Out)}); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "\nApplying (backups, evidence and journal in %s)\n", dir)
	res, err := execute.Run(ctx, plan, opts)
	if res != nil && resumed != nil {
		res.Resumed = resumed.Resumed
	}
	var replanned *remediate.Plan
	if execute.IsConflict(err) {
		// Never overwrite: read the clusters again and show what the plan is now.
		if p, _, perr := o.plan(ctx); perr == nil {
			replanned = p
			if o.output != "json" {
				fmt.Fprintln(o.s.Out, "\nThe plan made again from the clusters as they are now:")
				_ = remediate.WriteTable(o.s.Out, p, remediate.TableOptions{Hint: o.applyHint(), Width: terminalWidth(o.s.Out)})
			}
		}
	}
	if o.output == "json" {
		if werr := writeFixJSON(o.s.Out, plan, res, replanned, err); werr != nil {
			return werr
		}
	} else if res != nil {
		writeFixSummary(o.s.Out, res, len(plan.Manual), dir, o.g.displayName)
	}
	if err != nil {
		if execute.IsConflict(err) {
			return fmt.Errorf("%w; review the new plan and run fix --apply again", err)
		}
		var fe *execute.ForbiddenError
		if errors.As(err, &fe) {
			return err
		}
		return fmt.Errorf("fix stopped: %w (backups and journal in %s; rerun with --backup-dir %s to resume)", err, dir, dir)
	}
	// Incidents with guided steps only were not part of the run and are still open.
	if n := o.remaining(plan, rep, res); n > 0 {
		return &FindingsError{Count: n, Severity: "open"}
	}
	if n := writeResumedUnverified(log, resumed); n > 0 {
		return &FindingsError{Count: n, Severity: "unverified"}
	}
	return nil
}

// writeResumedUnverified lists the steps an interrupted run began that this run finished
// without seeing their outcome (no later resumed step verified), and returns how many.
func writeResumedUnverified(w io.Writer, resumed *execute.Result) int {
	if resumed == nil {
		return 0
	}
	n := 0
	for i, o := range resumed.Resumed {
		if o.Status != execute.StatusUnverified || slices.ContainsFunc(resumed.Resumed[i+1:], func(p execute.Outcome) bool { return p.Status == execute.StatusVerified }) {
			continue
		}
		if n == 0 {
			fmt.Fprintln(w, "\nFinished from the interrupted run, written but not verified (not fixed):")
		}
		n++
		fmt.Fprintf(w, "  [%d] %s %s: %s\n", o.Number, o.Step.Action, o.Step.Target.Ref()+" on "+o.Step.Target.Cluster, textsafe.Line(o.Message))
	}
	return n
}

// applyHint is the plan's closing line: how to carry it out, fitted to the input (a plan from
// --from cannot be applied; the live clusters it came from can).
func (o *fixOptions) applyHint() string {
	name := o.g.displayName
	if !o.live {
		return fmt.Sprintf("This plan was made from the bundle %s and cannot be applied from it. To carry it out, run it against the live clusters: %s fix --context CONTEXT [--context ...] --apply (every step asks first, backs up what it touches, dry-runs, writes with a resourceVersion precondition and verifies).", o.from, name)
	}
	return "Run again with --apply to execute: every step asks first (--yes does not), backs up what it touches, dry-runs, writes with a resourceVersion precondition and verifies."
}

func writeFixSummary(w io.Writer, res *execute.Result, manual int, dir, name string) {
	guided := ""
	if manual > 0 {
		guided = fmt.Sprintf(" (%d of them with guided steps only, listed above)", manual)
	}
	fmt.Fprintf(w, "\nDone: %s fixed, %d unverified, %d failed, %d open%s.\n", plural.Forms(res.Fixed, "incident", "incidents"), res.Unverified, res.Failed, res.Open+manual, guided)
	for _, inc := range res.Incidents {
		if inc.Outcome == execute.IncidentUnverified || inc.Outcome == execute.IncidentFailed {
			r := inc.RootCause
			fmt.Fprintf(w, "  %s: %s on %s %s — %s\n", inc.Outcome, r.FindingID, r.Cluster, r.Object.String(), inc.Message)
		}
	}
	var remaining []execute.Outcome
	for _, oc := range res.Outcomes {
		switch oc.Status {
		case execute.StatusVerified, execute.StatusSaved, execute.StatusNotNeeded, execute.StatusDone:
		default:
			remaining = append(remaining, oc)
		}
	}
	if len(remaining) > 0 {
		fmt.Fprintln(w, "Remaining:")
		for _, oc := range remaining {
			fmt.Fprintf(w, "  [%d] %s %s on %s: %s — %s\n", oc.Number, oc.Step.Rung, oc.Step.Target.Ref(), oc.Step.Cluster, oc.Status, oc.Message)
		}
	}
	fmt.Fprintf(w, "Backups, evidence and journal: %s (undo with: %s restore %s)\n", dir, name, dir)
}

func writeFixJSON(w io.Writer, plan *remediate.Plan, res *execute.Result, replanned *remediate.Plan, err error) error {
	doc := struct {
		SchemaVersion string               `json:"schemaVersion"`
		Plan          *remediate.Plan      `json:"plan"`
		Result        *execute.Result      `json:"result,omitempty"`
		Replanned     *remediate.Plan      `json:"replanned,omitempty"`
		Error         string               `json:"error,omitempty"`
		Missing       []execute.Permission `json:"missingPermissions,omitempty"`
	}{SchemaVersion: remediate.SchemaVersion, Plan: plan, Result: res, Replanned: replanned}
	if err != nil {
		doc.Error = err.Error()
		var fe *execute.ForbiddenError
		if errors.As(err, &fe) {
			doc.Missing = fe.Missing
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
