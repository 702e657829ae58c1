package execute

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/remediate"
)

// Options configure a run.
type Options struct {
	// BackupDir receives backups, evidence and the journal. Reusing it resumes: steps the
	// journal shows finished are not run again, and no backup in it is overwritten.
	BackupDir string
	// Yes answers every confirmation prompt with yes; otherwise each mutating step asks on In.
	Yes bool
	In  io.Reader
	Out io.Writer
	// VerifyTimeout bounds how long a step waits for its outcome (DefaultVerifyTimeout when
	// unset); PollInterval is how often it looks.
	VerifyTimeout time.Duration
	PollInterval  time.Duration
	Clients       *Clients
	// Run names this run in the journal and the evidence directory.
	Run string
	// Key authenticates the backup directory: a directory an earlier run wrote is refused
	// unless its MACs verify under it, and every line this run writes carries one.
	Key *BackupKey
	// Recheck, when set, judges the clusters again once the run's steps are done, as scan
	// does, and returns every finding it detects: an incident whose root cause is among them
	// is not fixed, whatever its steps verified.
	Recheck func(ctx context.Context) ([]finding.Finding, error)
}

// DefaultVerifyTimeout is how long a step waits for its outcome by default: Helm's own
// default wait (helm --timeout, 5m), which a Fleet bundle's Helm wait and a Deployment's
// rollout of a few replicas fit in.
const DefaultVerifyTimeout = 5 * time.Minute

// Status of a step at the end of a run.
const (
	StatusVerified   = "verified"
	StatusUnverified = "unverified"
	StatusDone       = "done earlier"
	StatusDeclined   = "declined"
	StatusFailed     = "failed"
	StatusConflict   = "conflict"
	StatusNotNeeded  = "not needed"
	StatusAboveRisk  = "above --max-risk"
	StatusBlocked    = "blocked"
	StatusNotRun     = "not run"
	StatusSaved      = "saved"
	// StatusRefused: the step would write an object the release does not own (or a
	// high-risk one below --max-risk high), or its release record is malformed; nothing
	// was written.
	StatusRefused = "refused"
)

// Outcome is what became of one step.
type Outcome struct {
	Number  int            `json:"number"`
	Step    remediate.Step `json:"step"`
	Status  string         `json:"status"`
	Message string         `json:"message,omitempty"`
}

// Result is the whole run.
type Result struct {
	BackupDir string    `json:"backupDir"`
	Run       string    `json:"run"`
	Outcomes  []Outcome `json:"outcomes"`
	// Fixed counts incidents one of whose attempts verified (and which a scan run after the
	// steps no longer detects); Unverified those whose steps were written but whose outcome
	// was not seen; Failed those a step failed or was refused for; Open the others (declined,
	// blocked, above --max-risk, not run).
	Fixed      int `json:"fixed"`
	Unverified int `json:"unverified"`
	Failed     int `json:"failed"`
	Open       int `json:"open"`
	// Incidents says what became of each incident of the plan, and why.
	Incidents []IncidentOutcome `json:"incidents,omitempty"`
	// Resumed are steps an earlier, interrupted run had begun and this run finished.
	Resumed []Outcome `json:"resumed,omitempty"`
}

// Executor runs one plan.
type Executor struct {
	opts    Options
	clients *Clients
	journal *Journal
	backups *Backups
	hooks   *Hooks
	states  map[string]*stepState
	entries []Entry
	in      *bufio.Reader
	numbers map[string]int
	// maxRisk is the plan's --max-risk: a step that would create or change a high-risk
	// object (remediate.HighRiskReason) runs only at High.
	maxRisk remediate.Risk
	quit    bool
	bound   map[string]bool
	// note is what a write did beyond the objects it lists (a storage migration's count),
	// for the step's applied line.
	note string
}

// Run executes a plan: per incident, its attempts lowest risk first, stopping at the first
// mutating attempt whose steps all verify. Steps the journal shows finished are not run again
// (call Resume first after an interruption). It returns a ConflictError when an object changed
// since planning (no write is made for that step; the caller re-plans) and a ForbiddenError,
// before any write, when the credentials lack a permission some step needs.
func Run(ctx context.Context, plan *remediate.Plan, opts Options) (*Result, error) {
	e, res, err := newExecutor(ctx, opts, plan.Number())
	if err != nil {
		return nil, err
	}
	e.maxRisk = plan.MaxRisk
	// Every permission first: a run that would stop half-way for lack of one makes no write.
	var todo []remediate.Step
	for _, inc := range plan.Incidents {
		for _, a := range inc.Attempts {
			if !a.Runnable() || !a.Mutating() {
				continue
			}
			for _, st := range a.Steps {
				if s := e.states[st.ID]; s == nil || s.terminal == "" {
					todo = append(todo, st)
				}
			}
		}
	}
	if len(todo) > 0 {
		missing, err := e.checkAccess(ctx, todo)
		if err != nil {
			return res, err
		}
		if len(missing) > 0 {
			return res, &ForbiddenError{Missing: missing}
		}
	}
	for i, inc := range plan.Incidents {
		err := e.incident(ctx, plan, inc, res)
		if err != nil || e.quit {
			e.notReached(plan.Incidents[i+1:], res)
			return res, e.settle(ctx, res, err)
		}
	}
	return res, e.settle(ctx, res, nil)
}

func newExecutor(ctx context.Context, opts Options, numbers map[string]int) (*Executor, *Result, error) {
	if opts.VerifyTimeout <= 0 {
		opts.VerifyTimeout = DefaultVerifyTimeout
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.Run == "" {
		opts.Run = time.Now().UTC().Format("20060102T150405.000Z")
	}
	if opts.In == nil {
		opts.In = strings.NewReader("")
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	// A directory an earlier run wrote is checked as restore checks it, and each cluster it
	// names must still be the same cluster, before anything is written anywhere.
	prior, err := LoadBackup(opts.BackupDir, opts.Key)
	if err != nil {
		return nil, nil, err
	}
	entries := prior.Journal
	if prior.Origin != nil {
		if err := checkOrigin(ctx, opts.BackupDir, prior.Origin, opts.Clients, priorClusters(prior)); err != nil {
			return nil, nil, err
		}
	}
	s, err := openSeal(prior, opts.Key)
	if err != nil {
		return nil, nil, err
	}
	j := openJournal(s, opts.Run)
	b, err := newBackups(s, opts.Run)
	if err != nil {
		return nil, nil, err
	}
	if numbers == nil {
		numbers = map[string]int{}
	}
	e := &Executor{opts: opts, clients: opts.Clients, journal: j, backups: b, hooks: hooksFrom(ctx),
		states: states(entries), entries: entries, in: bufio.NewReader(opts.In), numbers: numbers}
	return e, &Result{BackupDir: opts.BackupDir, Run: opts.Run}, nil
}

// priorClusters lists every cluster an earlier run's backup and journal name.
func priorClusters(prior *Backup) []string {
	names := map[string]bool{}
	for n := range prior.Origin.Clusters {
		names[n] = true
	}
	for _, ie := range prior.Index {
		names[ie.Cluster] = true
	}
	for _, en := range prior.Journal {
		// An incident's outcome line names the cluster of its root cause, which no step may
		// have written to.
		if en.Cluster != "" && en.Phase != "" && en.Phase != PhaseOutcome && !strings.HasPrefix(en.Step, "restore:") {
			names[en.Cluster] = true
		}
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	return list
}

// Unfinished reports whether a backup directory's journal holds steps an interrupted run
// began and did not finish (Resume finishes them). The directory is authenticated first
// (LoadBackup): a journal that does not verify is refused, not resumed.
func Unfinished(dir string, key *BackupKey) (bool, error) {
	b, err := LoadBackup(dir, key)
	if err != nil {
		return false, err
	}
	return len(interrupted(b.Journal, states(b.Journal))) > 0, nil
}

// interrupted lists the attempts an interrupted run left half-done, in the order they
// began: a step begun and not finished, or a chain with steps still to run. Attempts that
// ended on a declined prompt, a conflict or a failure are not resumed: the new plan decides.
func interrupted(entries []Entry, st map[string]*stepState) [][]remediate.Step {
	var out [][]remediate.Step
	seen := map[string]bool{}
	for _, en := range entries {
		if en.Phase != PhaseBegin || en.Plan == nil {
			continue
		}
		steps := en.Attempt
		if len(steps) == 0 {
			steps = []remediate.Step{*en.Plan}
		}
		if seen[steps[0].ID] {
			continue
		}
		seen[steps[0].ID] = true
		open, stopped := false, false
		for _, s := range steps {
			x := st[s.ID]
			if x == nil || x.terminal == "" {
				open = true
			}
			if x != nil && x.terminal == "" && (x.phases[PhaseDeclined] || x.phases[PhaseConflict] || x.phases[PhaseFailed]) {
				stopped = true
			}
		}
		if open && !stopped {
			out = append(out, steps)
		}
	}
	return out
}

// Resume finishes what an interrupted run left in a backup directory. The journal says what
// was begun; plan, made from the clusters as they are now, says what may be done: a step read
// back from the journal is only run when plan holds the same change (remediate.SameChange),
// and then as plan has it. A step that was already written is verified (reads only), never
// written again; a Helm rollback killed between its writes is finished from the records it
// left on the cluster. A begun step that is neither is closed as abandoned, and a step not
// yet begun that plan does not hold is left alone: the new plan decides. Every step that ran
// ends with one terminal journal line.
func Resume(ctx context.Context, opts Options, plan *remediate.Plan) (*Result, error) {
	e, res, err := newExecutor(ctx, opts, nil)
	if err != nil {
		return nil, err
	}
	e.maxRisk = plan.MaxRisk
	units := interrupted(e.entries, e.states)
	n := 0
	for _, u := range units {
		for _, st := range u {
			n++
			e.numbers[st.ID] = n
		}
	}
	for _, u := range units {
		e.say("\nFinishing an attempt the interrupted run left: %s", u[0].Change)
		for i, old := range u {
			if s := e.states[old.ID]; s != nil && s.terminal != "" {
				continue
			}
			st, ok := planned(plan, old)
			var status, msg string
			chained := false
			if !ok {
				if chained, err = e.chainContinues(ctx, u, i); err != nil {
					return res, err
				}
			}
			switch {
			case ok:
				st = carryWait(st, old, u, i)
				status, msg, err = e.runStep(ctx, st, u)
			case chained:
				// Held, like any step, to the UID and resourceVersion its plan read.
				status, msg, err = e.runStep(ctx, old, u)
				ok = true
			case e.states[old.ID] != nil && e.states[old.ID].phases[PhaseBegin]:
				// Begun: it may have been written. Only reads, or finishing a Helm rollback
				// whose records on the cluster show unstick's half-done write.
				status, msg, err = e.finishWritten(ctx, old)
			default:
				// The rest of the chain depends on this step: all of it is left to the new plan.
				e.say("  [%d] %s %s — not in the plan made from the clusters as they are now: not run (nor the rest of its attempt)", e.numbers[old.ID], old.Rung, old.Target.Ref())
			}
			if !ok && (e.states[old.ID] == nil || !e.states[old.ID].phases[PhaseBegin]) {
				break
			}
			res.Resumed = append(res.Resumed, Outcome{Number: e.numbers[old.ID], Step: old, Status: status, Message: msg})
			if IsConflict(err) {
				for _, rest := range u[i:] {
					if s := e.states[rest.ID]; s != nil && s.phases[PhaseBegin] && s.terminal == "" {
						r := rest
						if err := e.record(rest, PhaseAbandoned, "objects changed since the interrupted run planned it: left to the new plan", func(en *Entry) { en.Plan = &r }); err != nil {
							return res, err
						}
					}
				}
				break
			}
			if err != nil {
				return res, err
			}
			if status == StatusDeclined || status == StatusAbandoned {
				break
			}
		}
		if e.quit {
			break
		}
	}
	return res, nil
}

// carryWait keeps the outcome an interrupted SUC chain was to wait for when its last step is
// finished as the new plan has it. Made once the chain's earlier writes are in, the new plan
// may hold that step in a chain of its own whose wait (Step.Upgrades) sits on a later step, or
// nowhere: run alone, the step would be verified by its own write, and a Plan the controller
// never ran again would read as fixed. The wait is taken from the journal only where it names
// the step's own cluster, and it adds reads, never a write.
func carryWait(st, old remediate.Step, u []remediate.Step, i int) remediate.Step {
	if i != len(u)-1 || st.Upgrades != nil || old.Upgrades == nil || old.Upgrades.Cluster != st.Cluster {
		return st
	}
	st.AwaitPlanDone(*old.Upgrades)
	return st
}

// chainContinues reports whether step i of an interrupted SUC image chain may run although
// the new plan does not hold it. Once the Plan's image is patched its finding is gone, yet
// the controller keeps the Plan's old Jobs and the labels marking nodes done (the Plan's hash
// leaves images out): the chain is useless unless it is finished. The journal alone is not
// trusted for this: every earlier step must be finished, the first being the Plan patch, and
// the live object must belong to that Plan — a Job labelled upgrade.cattle.io/plan with its
// name, or the node label plan.upgrade.cattle.io/<plan> itself. The step is then held, as
// any step, to the UID and resourceVersion read when it was planned.
func (e *Executor) chainContinues(ctx context.Context, u []remediate.Step, i int) (bool, error) {
	if i == 0 || u[0].Action != remediate.PatchPlanImage {
		return false, nil
	}
	for _, prev := range u[:i] {
		if s := e.states[prev.ID]; s == nil || (s.terminal != PhaseVerified && s.terminal != PhaseUnverified) {
			return false, nil
		}
	}
	plan, st := u[0].Target, u[i]
	if st.Cluster != plan.Cluster || st.Target.Cluster != plan.Cluster {
		return false, nil
	}
	switch st.Action {
	case remediate.DeleteJob:
		if st.Target.Namespace != plan.Namespace || len(st.Touches) != 1 || st.Touches[0].Key() != st.Target.Key() {
			return false, nil
		}
		cl, err := e.cluster(ctx, st.Cluster)
		if err != nil {
			return false, err
		}
		live, err := cl.read(ctx, st.Target)
		if err != nil {
			return false, err
		}
		return live != nil && string(live.GetUID()) == st.Target.UID && live.GetLabels()["upgrade.cattle.io/plan"] == plan.Name, nil
	case remediate.RemoveNodeLabel:
		return st.Label == "plan.upgrade.cattle.io/"+plan.Name && len(st.Touches) == 1 && st.Touches[0].Key() == st.Target.Key() && st.Target.Kind == "Node", nil
	}
	return false, nil
}

// StatusAbandoned: a step an interrupted run began, not written, no longer planned.
const StatusAbandoned = "abandoned"

// planned finds the step of plan that makes the same change as a step read from the journal,
// in an attempt the executor may run.
func planned(plan *remediate.Plan, old remediate.Step) (remediate.Step, bool) {
	if plan == nil {
		return remediate.Step{}, false
	}
	for _, inc := range plan.Incidents {
		for _, a := range inc.Attempts {
			if !a.Runnable() {
				continue
			}
			for _, st := range a.Steps {
				if remediate.SameChange(st, old) {
					return st, true
				}
			}
		}
	}
	return remediate.Step{}, false
}

// finishWritten ends a begun step the new plan does not hold: verified when its change is in
// place (the interrupted run wrote it), a Helm rollback finished when the cluster holds the
// revision unstick began writing, otherwise abandoned with no write.
func (e *Executor) finishWritten(ctx context.Context, st remediate.Step) (string, string, error) {
	n := e.numbers[st.ID]
	prev := e.states[st.ID]
	cl, err := e.cluster(ctx, st.Cluster)
	if err != nil {
		return StatusFailed, err.Error(), err
	}
	v := vals{restartedAt: prev.restartedAt, baseline: prev.baseline, began: prev.began}
	if st.Action.Mutating() {
		in, _, _, err := e.state(ctx, cl, st, v)
		if err != nil {
			return e.stop(st, err)
		}
		if !in && st.Action == remediate.HelmRollback && prev.phases[PhaseDryRun] {
			writes, partial, err := e.helmFinish(ctx, cl, st)
			if err != nil {
				return e.stop(st, err)
			}
			if partial {
				e.say("  [%d] finished the rollback the interrupted run began: %s", n, describeWrites(writes))
				if err := e.record(st, PhaseApplied, "finished when resuming: "+describeWrites(writes), func(en *Entry) { en.Writes = writes }); err != nil {
					return StatusFailed, err.Error(), err
				}
				return e.verify(ctx, cl, st, v)
			}
		}
		if in {
			e.say("  [%d] %s %s — already applied by the interrupted run; verifying, not writing again", n, st.Rung, st.Target.Ref())
			if !prev.phases[PhaseApplied] {
				if err := e.record(st, PhaseApplied, "found applied when resuming: not written again", nil); err != nil {
					return StatusFailed, err.Error(), err
				}
			}
			return e.verify(ctx, cl, st, v)
		}
	}
	msg := "not written, and not in the plan made from the clusters as they are now: left to the new plan"
	e.say("  [%d] %s %s — %s", n, st.Rung, st.Target.Ref(), msg)
	return StatusAbandoned, msg, e.record(st, PhaseAbandoned, msg, func(en *Entry) { s := st; en.Plan = &s })
}

// cluster connects to a cluster and records, once, which cluster its name reaches.
func (e *Executor) cluster(ctx context.Context, name string) (*cluster, error) {
	cl, err := e.clients.get(name)
	if err != nil {
		return nil, err
	}
	if e.bound == nil {
		e.bound = map[string]bool{}
	}
	if !e.bound[name] {
		if err := e.backups.bind(ctx, cl); err != nil {
			return nil, err
		}
		e.bound[name] = true
	}
	return cl, nil
}

func (e *Executor) say(format string, args ...any) { fmt.Fprintf(e.opts.Out, format+"\n", args...) }

func (e *Executor) record(st remediate.Step, phase, msg string, mod func(*Entry)) error {
	en := Entry{Step: st.ID, Phase: phase, Action: string(st.Action), Cluster: st.Cluster, Target: st.Target.Ref(), Message: msg}
	if mod != nil {
		mod(&en)
	}
	if err := e.journal.Append(en); err != nil {
		return err
	}
	s := e.states[st.ID]
	if s == nil {
		s = &stepState{phases: map[string]bool{}}
		e.states[st.ID] = s
	}
	s.phases[phase] = true
	if terminal(phase) && s.terminal == "" {
		s.terminal = phase
	}
	if e.hooks.AfterPhase != nil {
		return e.hooks.AfterPhase(context.Background(), st, phase)
	}
	return nil
}

// incident runs one incident's ladder.
func (e *Executor) incident(ctx context.Context, plan *remediate.Plan, inc remediate.IncidentPlan, res *Result) error {
	r := inc.RootCause
	e.say("\nIncident: %s on %s — %s", r.FindingID, r.Cluster, r.Object.String())
	fixed, first := false, len(res.Outcomes)
	for _, a := range inc.Attempts {
		if e.quit {
			e.remain(a, res, StatusNotRun, "the run was stopped")
			continue
		}
		switch {
		case fixed && a.Mutating():
			e.remain(a, res, StatusNotNeeded, "an earlier rung verified")
			continue
		case a.Blocked != "":
			e.remain(a, res, StatusBlocked, a.Blocked)
			continue
		case a.AboveMaxRisk:
			e.remain(a, res, StatusAboveRisk, fmt.Sprintf("risk %s is above --max-risk %s", a.Risk, plan.MaxRisk))
			continue
		}
		all := true
		for i, st := range a.Steps {
			status, msg, err := e.runStep(ctx, st, a.Steps)
			res.Outcomes = append(res.Outcomes, Outcome{Number: e.numbers[st.ID], Step: st, Status: status, Message: msg})
			if err != nil {
				// Stopped by an error: what its steps did so far decides.
				res.Incidents = append(res.Incidents, incidentOutcome(inc, res.Outcomes[first:], false))
				return err
			}
			if status != StatusVerified && status != StatusSaved && !(status == StatusDone && e.states[st.ID].terminal == PhaseVerified) {
				all = false
				if status != StatusUnverified && status != StatusDone {
					// A declined or failed step ends its attempt: the rest depends on it.
					e.remain(remediate.Attempt{Steps: a.Steps[i+1:]}, res, StatusNotRun, fmt.Sprintf("step %d did not complete", e.numbers[st.ID]))
					break
				}
			}
		}
		// A migration only prepares the trim: verified, it does not end the ladder.
		if a.Mutating() && all && !a.Prepares {
			fixed = true
		}
	}
	res.Incidents = append(res.Incidents, incidentOutcome(inc, res.Outcomes[first:], fixed))
	return nil
}

// open counts inc as an incident the run left open.
func (e *Executor) remain(a remediate.Attempt, res *Result, status, why string) {
	for _, st := range a.Steps {
		res.Outcomes = append(res.Outcomes, Outcome{Number: e.numbers[st.ID], Step: st, Status: status, Message: why})
		if status != StatusNotNeeded {
			e.say("  [%d] %s %s — %s: %s", e.numbers[st.ID], st.Rung, st.Target.Ref(), status, why)
		}
	}
}

// confirm asks the operator about one step: y runs it, n skips it, q stops the run.
func (e *Executor) confirm(st remediate.Step) (bool, error) {
	if e.opts.Yes {
		return true, nil
	}
	fmt.Fprintf(e.opts.Out, "  [%d] %s on %s (risk %s):\n      %s\n      equivalent: %s\n  Apply this step? [y/N/q] ",
		e.numbers[st.ID], st.Rung, st.Cluster, st.Risk, st.Change, strings.Join(st.Commands, " && "))
	line, err := e.in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	case "q", "quit":
		e.quit = true
	}
	if errors.Is(err, io.EOF) && strings.TrimSpace(line) == "" {
		fmt.Fprintln(e.opts.Out)
		e.quit = true // no more answers will come
	}
	return false, nil
}

// runStep takes one step through its phases, resuming where an interrupted run stopped.
func (e *Executor) runStep(ctx context.Context, st remediate.Step, attempt []remediate.Step) (string, string, error) {
	n := e.numbers[st.ID]
	prev := e.states[st.ID]
	if prev != nil && prev.terminal != "" {
		e.say("  [%d] %s %s — finished in an earlier run (%s)", n, st.Rung, st.Target.Ref(), prev.terminal)
		return StatusDone, "finished in an earlier run: " + prev.terminal, nil
	}
	cl, err := e.cluster(ctx, st.Cluster)
	if err != nil {
		return StatusFailed, err.Error(), err
	}
	if st.Action == remediate.Observe {
		return e.observe(ctx, st)
	}
	var v vals
	if prev != nil {
		v = vals{restartedAt: prev.restartedAt, baseline: prev.baseline, began: prev.began}
	}
	// A step an interrupted run began may already be written: verify it, never write twice.
	if prev != nil && prev.phases[PhaseBegin] {
		in, _, _, err := e.state(ctx, cl, st, v)
		if err != nil {
			return e.stop(st, err)
		}
		if !in && st.Action == remediate.HelmRollback && prev.phases[PhaseDryRun] {
			// Killed among the rollback's writes: finish it from the records it left.
			writes, partial, err := e.helmFinish(ctx, cl, st)
			if err != nil {
				return e.stop(st, err)
			}
			if partial {
				e.say("  [%d] finished the rollback the interrupted run began: %s", n, describeWrites(writes))
				if err := e.record(st, PhaseApplied, "finished when resuming: "+describeWrites(writes), func(en *Entry) { en.Writes = writes }); err != nil {
					return StatusFailed, err.Error(), err
				}
				return e.verify(ctx, cl, st, v)
			}
		}
		if in {
			e.say("  [%d] %s %s — already applied by the interrupted run; verifying, not writing again", n, st.Rung, st.Target.Ref())
			if !prev.phases[PhaseApplied] {
				if err := e.record(st, PhaseApplied, "found applied when resuming: not written again", nil); err != nil {
					return StatusFailed, err.Error(), err
				}
			}
			return e.verify(ctx, cl, st, v)
		}
	}
	if st.Action == remediate.TrimStoredVersions && prev == nil {
		// kube-controller-manager's storage version migrator (GA in v1.37) sets
		// status.storedVersions itself once its migration succeeds: then nothing is left to
		// write, and the CRD's moved resourceVersion is no conflict.
		if in, _, _, err := e.state(ctx, cl, st, v); err == nil && in {
			e.say("  [%d] %s %s — status.storedVersions already holds only the storage version (the storage version migrator set it): nothing to write; verifying", n, st.Rung, st.Target.Ref())
			if err := e.record(st, PhaseApplied, "found in the wanted state, set by the storage version migrator: not written", func(en *Entry) { s := st; en.Plan = &s }); err != nil {
				return StatusFailed, err.Error(), err
			}
			return e.verify(ctx, cl, st, v)
		}
	}
	if st.Action == remediate.HelmRollback {
		if err := e.previewRollback(ctx, cl, st); err != nil {
			return e.stop(st, err)
		}
	}
	ok, err := e.confirm(st)
	if err != nil {
		return StatusFailed, err.Error(), err
	}
	if !ok {
		e.say("  [%d] declined", n)
		return StatusDeclined, "declined at the prompt", e.record(st, PhaseDeclined, "declined at the prompt", nil)
	}
	if st.Action == remediate.RolloutRestart && v.restartedAt == "" {
		v.restartedAt = time.Now().UTC().Format(time.RFC3339)
	}
	v.began = time.Now().UTC()
	if err := e.record(st, PhaseBegin, st.Change, func(en *Entry) {
		s := st
		en.Plan, en.RestartedAt, en.Time = &s, v.restartedAt, v.began
		if len(attempt) > 1 {
			en.Attempt = attempt
		}
	}); err != nil {
		return StatusFailed, err.Error(), err
	}
	// A Job the controller deleted or replaced first (the system-upgrade-controller replaces a
	// Job whose Plan's image changed, which the step before may just have done): what the
	// step wants is done, with no write of ours. The controller may get there at any moment,
	// so a conflict on the Job later in the step is checked against the same.
	jobReplaced := func() bool {
		if st.Action != remediate.DeleteJob {
			return false
		}
		u, err := cl.read(ctx, st.Target)
		return err == nil && (u == nil || string(u.GetUID()) != st.Target.UID || u.GetDeletionTimestamp() != nil)
	}
	replacedDone := func() (string, string, error) {
		msg := "nothing written: the Job the plan read is already gone or being deleted (its controller replaced it)"
		e.say("  [%d] applied: %s", n, msg)
		if err := e.record(st, PhaseApplied, msg, nil); err != nil {
			return StatusFailed, err.Error(), err
		}
		return e.verify(ctx, cl, st, v)
	}
	if jobReplaced() {
		return replacedDone()
	}
	// backup, holding every object to the version the plan read
	files, baseline, err := e.backup(ctx, cl, st)
	if err != nil {
		if IsConflict(err) && jobReplaced() {
			return replacedDone()
		}
		return e.stop(st, err)
	}
	v.baseline = baseline
	if err := e.record(st, PhaseBackup, strings.Join(files, ", "), func(en *Entry) { en.Baseline = baseline }); err != nil {
		return StatusFailed, err.Error(), err
	}
	// server-side dry-run
	if _, err := e.write(ctx, cl, st, true, v); err != nil {
		if (IsConflict(err) || apierrors.IsNotFound(err)) && jobReplaced() {
			return replacedDone()
		}
		return e.stop(st, err)
	}
	if err := e.record(st, PhaseDryRun, "the API server accepted the change (dryRun=All)", nil); err != nil {
		return StatusFailed, err.Error(), err
	}
	if e.hooks.BeforeApply != nil {
		if err := e.hooks.BeforeApply(ctx, st); err != nil {
			return StatusFailed, err.Error(), err
		}
	}
	// the write, under the planned resourceVersion
	e.note = ""
	writes, err := e.write(ctx, cl, st, false, v)
	if errors.Is(err, ErrKilled) {
		return StatusFailed, err.Error(), err // a simulated kill: nothing more is journaled
	}
	if err != nil {
		if resumable(err) && (len(writes) > 0 || OutcomeUnknown(err)) {
			// Half a rollback, or a write whose answer was lost: marking the step failed
			// would leave it so (the new plan does not see a half-written rollback as
			// pending). Leave it open, as a kill would: the next run finishes it.
			msg := "stopped after " + describeWrites(writes) + ": " + err.Error()
			if len(writes) == 0 {
				msg = "no answer to the write (it may or may not have been made): " + err.Error()
			}
			e.say("  [%d] INTERRUPTED: %s; run fix again with the same --backup-dir to finish this step", n, msg)
			_ = e.record(st, PhaseInterrupted, msg, func(en *Entry) { en.Writes = writes })
			return StatusFailed, err.Error(), err
		}
		if len(writes) > 0 {
			_ = e.record(st, PhaseFailed, "interrupted after "+describeWrites(writes)+": "+err.Error(), func(en *Entry) { en.Writes = writes })
		} else if (IsConflict(err) || apierrors.IsNotFound(err)) && jobReplaced() {
			return replacedDone()
		}
		return e.stop(st, err)
	}
	applied := describeWrites(writes)
	if e.note != "" {
		applied = e.note
		if len(writes) > 0 {
			applied += "; " + describeWrites(writes)
		}
	}
	e.say("  [%d] applied: %s", n, applied)
	if err := e.record(st, PhaseApplied, applied, func(en *Entry) { en.Writes = writes }); err != nil {
		return StatusFailed, err.Error(), err
	}
	return e.verify(ctx, cl, st, v)
}

// stop ends a step on an error: a conflict or a guard refusal is journaled and explained, and
// the run stops so the plan can be made again.
func (e *Executor) stop(st remediate.Step, err error) (string, string, error) {
	n := e.numbers[st.ID]
	if IsConflict(err) {
		e.say("  [%d] NOT APPLIED: %v", n, err)
		_ = e.record(st, PhaseConflict, err.Error(), nil)
		return StatusConflict, err.Error(), err
	}
	var oe *remediate.OwnershipError
	var re *RecordError
	if errors.As(err, &oe) || errors.As(err, &re) {
		// Nothing of the step was written and nothing else depends on it: the incident
		// stays open, the run goes on.
		e.say("  [%d] REFUSED: %v", n, err)
		_ = e.record(st, PhaseFailed, err.Error(), nil)
		return StatusRefused, err.Error(), nil
	}
	var ge *remediate.GuardError
	if errors.As(err, &ge) {
		e.say("  [%d] REFUSED: %v", n, err)
		_ = e.record(st, PhaseFailed, err.Error(), nil)
		return StatusFailed, err.Error(), err
	}
	e.say("  [%d] FAILED: %v", n, err)
	_ = e.record(st, PhaseFailed, err.Error(), nil)
	return StatusFailed, err.Error(), err
}

// verify waits, up to the timeout, for the state to move as the step expects.
func (e *Executor) verify(ctx context.Context, cl *cluster, st remediate.Step, v vals) (string, string, error) {
	n := e.numbers[st.ID]
	deadline := time.Now().Add(e.opts.VerifyTimeout)
	var why string
	for {
		_, ok, w, err := e.state(ctx, cl, st, v)
		if err == nil && ok && st.Deploys != nil {
			// The controller did what was asked; the deployment must have succeeded too.
			ok, w, err = e.deployed(ctx, st)
		}
		if err == nil && ok && st.Upgrades != nil {
			// The controller may run the upgrade again; it must have run it to the end.
			ok, w, err = e.upgraded(ctx, st)
		}
		if err != nil {
			w = err.Error()
		}
		if ok {
			e.say("  [%d] verified: %s", n, st.Verify)
			return StatusVerified, st.Verify, e.record(st, PhaseVerified, st.Verify, nil)
		}
		why = w
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return StatusFailed, ctx.Err().Error(), ctx.Err()
		case <-time.After(e.opts.PollInterval):
		}
	}
	msg := fmt.Sprintf("written, but not verified within %s: %s", e.opts.VerifyTimeout, why)
	e.say("  [%d] %s", n, msg)
	return StatusUnverified, msg, e.record(st, PhaseUnverified, msg, nil)
}

// backup saves every object the step will write (before any write, once), with events and
// logs as evidence, and holds each to what the plan read.
func (e *Executor) backup(ctx context.Context, cl *cluster, st remediate.Step) ([]string, *int64, error) {
	objs := append([]remediate.Object{}, st.Touches...)
	if st.Action == remediate.HelmRollback {
		manifest, err := e.targetManifest(cl, st)
		if err != nil {
			return nil, nil, err
		}
		_, mobjs, err := e.manifestObjects(cl, st.Helm.Namespace, manifest)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, mobjs...)
	}
	var files []string
	var baseline *int64
	kept := 0
	for i, o := range objs {
		u, err := cl.read(ctx, o)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s for its backup: %w", o.Ref(), err)
		}
		if i < len(st.Touches) {
			if err := checkPlanned(st.Action, st.ID, o, u); err != nil {
				return nil, nil, err
			}
			if i == 0 && u != nil {
				baseline = baselineOf(st, u)
			}
		}
		f, k, err := e.backups.saveObject(st.ID, o, u)
		if err != nil {
			return nil, nil, err
		}
		if k {
			kept++
		}
		if f != "" {
			files = append(files, f)
		}
	}
	notes := e.backups.evidence(ctx, cl, st.ID, append(objs, st.Evidence...), false)
	msg := fmt.Sprintf("  [%d] backup: %s in %s", e.numbers[st.ID], plural.Of(len(files), "object"), e.opts.BackupDir)
	if kept > 0 {
		msg += fmt.Sprintf(" (%d kept from an earlier run, not overwritten)", kept)
	}
	e.say("%s", msg)
	for _, n := range notes {
		e.say("      evidence not saved: %s", n)
	}
	return files, baseline, nil
}

// observe is the first rung: save the incident's objects, events and logs.
func (e *Executor) observe(ctx context.Context, st remediate.Step) (string, string, error) {
	if err := e.record(st, PhaseBegin, st.Change, func(en *Entry) { s := st; en.Plan = &s }); err != nil {
		return StatusFailed, err.Error(), err
	}
	byCluster := map[string][]remediate.Object{}
	var order []string
	for _, o := range st.Evidence {
		if _, ok := byCluster[o.Cluster]; !ok {
			order = append(order, o.Cluster)
		}
		byCluster[o.Cluster] = append(byCluster[o.Cluster], o)
	}
	var notes []string
	for _, name := range order {
		c, err := e.cluster(ctx, name)
		if err != nil {
			var oe *OriginError
			if errors.As(err, &oe) {
				return StatusFailed, err.Error(), err
			}
			notes = append(notes, err.Error())
			continue
		}
		notes = append(notes, e.backups.evidence(ctx, c, st.ID, byCluster[name], true)...)
	}
	msg := fmt.Sprintf("saved %s with their events and logs under %s", plural.Of(len(st.Evidence), "object"), filepath.Join(e.opts.BackupDir, evidenceDir, e.opts.Run))
	e.say("  [%d] observe: %s", e.numbers[st.ID], msg)
	for _, n := range notes {
		e.say("      evidence not saved: %s", n)
	}
	if err := e.record(st, PhaseBackup, msg, nil); err != nil {
		return StatusFailed, err.Error(), err
	}
	return StatusSaved, msg, e.record(st, PhaseVerified, msg, nil)
}

func describeWrites(ws []Write) string {
	if len(ws) == 0 {
		return "no object needed a change"
	}
	var parts []string
	for _, w := range ws {
		ref := w.Kind + "/" + w.Name
		if w.Namespace != "" {
			ref = w.Kind + "/" + w.Namespace + "/" + w.Name
		}
		parts = append(parts, w.Op+" "+ref)
	}
	return strings.Join(parts, ", ")
}
