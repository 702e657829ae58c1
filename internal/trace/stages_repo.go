package trace

import (
	"fmt"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"github.com/rancher/wrangler/v3/pkg/genericcondition"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// commitStage: the GitRepo resolved the commit (status.commit), read from GitRepo status and
// its GotNewCommit event; a failing poll (GitPolling False, Stalled True) is a failure.
func commitStage(s *Subject) Stage {
	st := Stage{Name: StageCommit}
	if s.RepoName == "" {
		st.Status, st.Detail = None, "the Bundle was not made from a GitRepo"
		return st
	}
	if s.Pipeline == nil {
		st.Status, st.Detail = NotRead, "GitRepo "+s.RepoNamespace+"/"+s.RepoName+" is not in the input"
		return st
	}
	g := s.Pipeline.Repo
	st.refs = []objKey{{s.Management.Name, "GitRepo", g.Namespace, g.Name}}
	st.Objects = []string{"GitRepo/" + g.Namespace + "/" + g.Name}
	if c := pollingFailure(g); c != nil {
		st.Status, st.At = Failed, condTime(c)
		st.Detail = fmt.Sprintf("%s=%s: %s (status.commit still %s)", c.Type, c.Status, firstLine(c.Message), short(g.Status.Commit))
		return st
	}
	if s.Commit != "" && g.Status.Commit != s.Commit && g.Status.PollingCommit != s.Commit {
		st.Status = Waiting
		st.Detail = fmt.Sprintf("GitRepo is at %s, not %s", orNone(short(g.Status.Commit)), short(s.Commit))
		return st
	}
	st.Status, st.At = Reached, gotCommitTime(s.Pipeline, g)
	st.Detail = "GitRepo status.commit " + short(g.Status.Commit)
	if p := g.Status.PollingCommit; p != "" && p != g.Status.Commit {
		// The poller saw the new commit; status.commit moves only once its gitjob Job exists.
		st.Detail = "polled " + short(p) + " (status.pollingCommit); status.commit still " + orNone(short(g.Status.Commit)) + ": no gitjob Job for it yet"
	}
	if g.Spec.Branch != "" {
		st.Detail += " (branch " + g.Spec.Branch + ")"
	}
	return st
}

// pollingFailure is the GitRepo's GitPolling=False or Stalled=True condition, or nil.
func pollingFailure(g *fleetv1.GitRepo) *genericcondition.GenericCondition {
	if c := fleet.Condition(g.Status.Conditions, "GitPolling"); c != nil && string(c.Status) == "False" {
		return c
	}
	if c := fleet.Condition(g.Status.Conditions, "Stalled"); c != nil && string(c.Status) == "True" {
		return c
	}
	return nil
}

// gotCommitTime is when the GitRepo got its commit: the GotNewCommit event naming it, else
// the last poll.
func gotCommitTime(p *fleet.RepoPipeline, g *fleetv1.GitRepo) *time.Time {
	var at time.Time
	for _, e := range p.Events {
		if e.Reason == "GotNewCommit" && e.InvolvedObject.Kind == "GitRepo" && strings.Contains(e.Message, g.Status.Commit) {
			at = snapshot.EventTime(e)
		}
	}
	if at.IsZero() {
		at = g.Status.LastPollingTime.Time
	}
	return timePtr(at)
}

// jobStage: the gitjob Job that clones the commit and writes the Bundles, read from the Jobs
// the GitRepo owns and the events about them. Fleet may delete a finished Job: Bundles that
// carry the commit say the job ran.
func jobStage(s *Subject) Stage {
	st := Stage{Name: StageJob}
	if s.RepoName == "" {
		st.Status, st.Detail = None, "the Bundle was not made from a GitRepo"
		return st
	}
	if s.Pipeline == nil {
		st.Status, st.Detail = NotRead, "the GitRepo and its Jobs are not in the input"
		return st
	}
	j := newestJob(s.Pipeline.Jobs)
	if j != nil {
		st.refs = []objKey{{s.Management.Name, "Job", j.Namespace, j.Name}}
		st.Objects = []string{"Job/" + j.Namespace + "/" + j.Name}
		for _, p := range s.Pipeline.Pods {
			if p.Labels["job-name"] == j.Name {
				st.refs = append(st.refs, objKey{s.Management.Name, "Pod", p.Namespace, p.Name})
			}
		}
	}
	// A Bundle that carries the commit was written by a gitjob that cloned it.
	bundlesAtCommit := s.Commit != "" && len(staleBundles(s.Bundles, s.Commit)) < len(s.Bundles)
	switch {
	case j == nil && bundlesAtCommit:
		st.Status, st.Detail = Reached, "no gitjob Job kept; the Bundles carry the commit"
	case j == nil:
		st.Status, st.Detail = Waiting, "no gitjob Job for the GitRepo"
		if c := fleet.Condition(s.Pipeline.Repo.Status.Conditions, "Accepted"); c != nil && string(c.Status) == "False" && c.Message != "" {
			// The gitjob controller records why it could not create the Job here.
			st.Status, st.At = Failed, condTime(c)
			st.Detail = "no gitjob Job: Accepted=False: " + firstLine(c.Message)
		}
	default:
		jobState(&st, s.Pipeline, j, bundlesAtCommit)
	}
	return st
}

func jobState(st *Stage, p *fleet.RepoPipeline, j *batchv1.Job, bundlesAtCommit bool) {
	name := "Job " + j.Name
	if c := jobCondition(j, batchv1.JobComplete); c != nil || bundlesAtCommit {
		st.Status, st.Detail = Reached, name+" completed"
		if j.Status.CompletionTime != nil {
			st.At = timePtr(j.Status.CompletionTime.Time)
		}
		return
	}
	if c := jobCondition(j, batchv1.JobFailed); c != nil {
		st.Status, st.At = Failed, timePtr(c.LastTransitionTime.Time)
		st.Detail = name + " failed: " + strings.TrimSpace(c.Reason+" "+firstLine(c.Message))
		return
	}
	if e := lastWarning(p.Events, j); e != nil {
		st.Status, st.At = Failed, timePtr(snapshot.EventTime(e))
		st.Detail = fmt.Sprintf("%s: %s: %s", name, e.Reason, firstLine(e.Message))
		return
	}
	st.Status = Waiting
	st.Detail = name + " running since " + j.CreationTimestamp.UTC().Format(time.RFC3339)
}

func newestJob(jobs []*batchv1.Job) *batchv1.Job {
	var best *batchv1.Job
	for _, j := range jobs {
		if best == nil || j.CreationTimestamp.After(best.CreationTimestamp.Time) {
			best = j
		}
	}
	return best
}

func jobCondition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if c := &j.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// lastWarning is the newest Warning event about the Job (FailedCreate of its pod: quota,
// admission, a missing secret).
func lastWarning(events []*corev1.Event, j *batchv1.Job) *corev1.Event {
	var out *corev1.Event
	for _, e := range events {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "Job" && e.InvolvedObject.Name == j.Name {
			out = e
		}
	}
	return out
}

// bundleStage: every Bundle carries the commit (label fleet.cattle.io/commit) and the
// controller could target it (no "targeting error" on its Ready condition).
func bundleStage(s *Subject) Stage {
	st := Stage{Name: StageBundle}
	for _, b := range s.Bundles {
		st.refs = append(st.refs, objKey{s.Management.Name, "Bundle", b.Namespace, b.Name})
		st.Objects = append(st.Objects, "Bundle/"+b.Namespace+"/"+b.Name)
	}
	if len(s.Bundles) == 0 {
		st.Status, st.Detail = Waiting, "no Bundle carries the GitRepo's label fleet.cattle.io/repo-name"
		return st
	}
	if b, c := targetingError(s.Bundles); c != nil {
		st.Status, st.At = Failed, condTime(c)
		st.Detail = "Bundle " + b.Name + ": " + firstLine(c.Message)
		return st
	}
	if b := deletingBundle(s.Bundles); b != nil {
		// A Bundle being deleted is neither reconciled nor written again until it is gone.
		st.Status, st.At = Failed, timePtr(b.DeletionTimestamp.Time)
		st.Detail = fmt.Sprintf("Bundle %s is being deleted since %s, held by finalizer(s) %s", b.Name, b.DeletionTimestamp.UTC().Format(time.RFC3339), strings.Join(b.Finalizers, ", "))
		return st
	}
	if stale := staleBundles(s.Bundles, s.Commit); len(stale) > 0 {
		st.Status = Waiting
		st.Detail = fmt.Sprintf("%d of %d Bundles still at another commit: %s", len(stale), len(s.Bundles), bundleCommits(stale))
		return st
	}
	st.Status, st.At = Reached, newestCondition(s.Bundles)
	st.Detail = fmt.Sprintf("%d %s at commit %s", len(s.Bundles), plural(len(s.Bundles), "Bundle", "Bundles"), short(s.Commit))
	if s.Commit == "" {
		st.Detail = fmt.Sprintf("%d %s, no commit label", len(s.Bundles), plural(len(s.Bundles), "Bundle", "Bundles"))
	}
	return st
}

func deletingBundle(bs []*fleetv1.Bundle) *fleetv1.Bundle {
	for _, b := range bs {
		if b.DeletionTimestamp != nil {
			return b
		}
	}
	return nil
}

func targetingError(bs []*fleetv1.Bundle) (*fleetv1.Bundle, *genericcondition.GenericCondition) {
	for _, b := range bs {
		if c := fleet.Condition(b.Status.Conditions, "Ready"); c != nil && strings.HasPrefix(c.Message, "targeting error") {
			return b, c
		}
	}
	return nil, nil
}

func staleBundles(bs []*fleetv1.Bundle, commit string) []*fleetv1.Bundle {
	if commit == "" {
		return nil
	}
	var out []*fleetv1.Bundle
	for _, b := range bs {
		if c := b.Labels[fleet.LabelCommit]; c != commit {
			out = append(out, b)
		}
	}
	return out
}

func bundleCommits(bs []*fleetv1.Bundle) string {
	var parts []string
	for i, b := range bs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(bs)-5))
			break
		}
		parts = append(parts, b.Name+" ("+orNone(short(b.Labels[fleet.LabelCommit]))+")")
	}
	return strings.Join(parts, ", ")
}

func newestCondition(bs []*fleetv1.Bundle) *time.Time {
	var best *time.Time
	for _, b := range bs {
		for i := range b.Status.Conditions {
			if t := condTime(&b.Status.Conditions[i]); t != nil && (best == nil || t.After(*best)) {
				best = t
			}
		}
	}
	return best
}
