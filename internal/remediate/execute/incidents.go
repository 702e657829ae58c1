package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/remediate"
)

// What became of an incident at the end of a run.
const (
	// IncidentFixed: an attempt's steps all verified, the outcome each waits for included,
	// and a scan run after the steps no longer detects the incident's root cause.
	IncidentFixed = "fixed"
	// IncidentUnverified: steps were written, but the outcome was not seen in time, or the
	// root cause is still detected.
	IncidentUnverified = "unverified"
	// IncidentFailed: a step failed or was refused, and no attempt verified.
	IncidentFailed = "failed"
	// IncidentOpen: nothing was carried through (declined, blocked, above --max-risk, not run).
	IncidentOpen = "open"
)

// PhaseOutcome is the journal line that records what became of an incident (its Step is
// "incident:" and the incident's ID, its Outcome the verdict).
const PhaseOutcome = "outcome"

// IncidentOutcome is what became of one incident, and why.
type IncidentOutcome struct {
	ID        string           `json:"id"`
	RootCause remediate.Reason `json:"rootCause"`
	Outcome   string           `json:"outcome"`
	Message   string           `json:"message,omitempty"`
}

// incidentOutcome decides an incident's outcome from its steps' outcomes in this run, before
// the recheck: fixed when an attempt verified, else failed, unverified or open by the first
// step that says so.
func incidentOutcome(inc remediate.IncidentPlan, steps []Outcome, fixed bool) IncidentOutcome {
	out := IncidentOutcome{ID: inc.ID, RootCause: inc.RootCause, Outcome: IncidentOpen}
	if fixed {
		out.Outcome, out.Message = IncidentFixed, "an attempt verified"
		return out
	}
	for _, want := range []string{IncidentFailed, IncidentUnverified, IncidentOpen} {
		for _, oc := range steps {
			if stepVerdict(oc) == want {
				out.Outcome, out.Message = want, fmt.Sprintf("step %d (%s %s): %s", oc.Number, oc.Step.Rung, oc.Step.Target.Ref(), oc.Message)
				return out
			}
		}
	}
	return out
}

// stepVerdict is what one step's outcome says of its incident ("" for a step that says
// nothing: saved evidence, not needed).
func stepVerdict(oc Outcome) string {
	switch oc.Status {
	case StatusFailed, StatusRefused:
		return IncidentFailed
	case StatusUnverified:
		return IncidentUnverified
	case StatusDone:
		if oc.Message == "finished in an earlier run: "+PhaseUnverified {
			return IncidentUnverified
		}
		return ""
	case StatusDeclined, StatusConflict, StatusAboveRisk, StatusBlocked, StatusNotRun:
		return IncidentOpen
	}
	return ""
}

// notReached records the incidents a stopped run did not come to.
func (e *Executor) notReached(incs []remediate.IncidentPlan, res *Result) {
	for _, inc := range incs {
		res.Incidents = append(res.Incidents, IncidentOutcome{ID: inc.ID, RootCause: inc.RootCause, Outcome: IncidentOpen, Message: "the run stopped before this incident"})
	}
}

// settle ends a run: the incidents its steps fixed are judged again (Options.Recheck), each
// incident's outcome is journaled and counted, and the fixed ones are said. runErr is the
// error that stopped the run, if any; it is returned, joined with any error of the journal.
func (e *Executor) settle(ctx context.Context, res *Result, runErr error) error {
	// A simulated kill stops everything, as a real one would: nothing more is read or
	// journaled. An interrupted context cannot read the clusters again.
	killed := errors.Is(runErr, ErrKilled)
	if !killed && ctx.Err() == nil {
		e.recheck(ctx, res)
	}
	var errs []error
	for _, inc := range res.Incidents {
		switch inc.Outcome {
		case IncidentFixed:
			res.Fixed++
		case IncidentUnverified:
			res.Unverified++
		case IncidentFailed:
			res.Failed++
		default:
			res.Open++
		}
		if killed {
			continue
		}
		en := Entry{Step: "incident:" + inc.ID, Phase: PhaseOutcome, Cluster: inc.RootCause.Cluster, Target: inc.RootCause.Object.String(), Outcome: inc.Outcome, Message: inc.Message}
		if err := e.journal.Append(en); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return runErr
	}
	return errors.Join(append([]error{runErr}, errs...)...)
}

// recheck demotes a fixed incident whose root cause a scan run now still detects: then the
// steps did what they wait for, but not what the operator needs.
func (e *Executor) recheck(ctx context.Context, res *Result) {
	if e.opts.Recheck == nil || !anyFixed(res.Incidents) {
		return
	}
	e.say("\nJudging the clusters again, as scan does, to confirm what the steps fixed")
	found, err := e.opts.Recheck(ctx)
	for i, inc := range res.Incidents {
		if inc.Outcome != IncidentFixed {
			continue
		}
		msg := ""
		if err != nil {
			msg = "the steps verified, but the clusters could not be judged again to confirm it: " + quote(err.Error())
		} else if f, ok := stillDetected(inc.RootCause, found); ok {
			msg = fmt.Sprintf("the steps verified, but a scan run now still detects %s on %s %s: %s", f.ID, f.Cluster, f.Object.String(), quote(f.Summary))
		}
		if msg != "" {
			res.Incidents[i].Outcome, res.Incidents[i].Message = IncidentUnverified, msg
			e.say("  Incident %s on %s — %s: unverified: %s", inc.RootCause.FindingID, inc.RootCause.Cluster, inc.RootCause.Object.String(), msg)
		}
	}
}

func anyFixed(incs []IncidentOutcome) bool {
	for _, inc := range incs {
		if inc.Outcome == IncidentFixed {
			return true
		}
	}
	return false
}

// stillDetected finds the finding that is the same root cause: the same finding ID, cluster
// and object (group, kind, namespace, name; a re-created object is the same object).
func stillDetected(r remediate.Reason, found []finding.Finding) (finding.Finding, bool) {
	group := remediate.Object{APIVersion: r.Object.APIVersion}.Group()
	for _, f := range found {
		o := f.Object
		if f.ID == r.FindingID && f.Cluster == r.Cluster && o.Kind == r.Object.Kind && o.Namespace == r.Object.Namespace &&
			o.Name == r.Object.Name && (remediate.Object{APIVersion: o.APIVersion}.Group()) == group {
			return f, true
		}
	}
	return finding.Finding{}, false
}
