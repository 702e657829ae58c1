package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// A node stays in a Plan's status.applying while its Job runs into activeDeadlineSeconds, is
// deleted after upgrade.cattle.io/ttl-seconds-after-finished and is created again under the same
// name (system-upgrade-controller#115, hetzner-k3s#756): the Job in the snapshot is always
// young while the node has been stuck since its first attempt. What dates that first attempt
// outlives the Jobs: the controller's SyncJob events on the Plan ("Jobs synced for version <v>
// on Nodes <n,...>. Hash: <h>"), its JobFailed events and Complete condition ("Job <ns>/<name>
// failed on Node <node>: ..."), and the Job controller's events on the Job's name. All of them
// name the Plan's current hash, so a node that finished an earlier version is not confused
// with this attempt.

// applyingStart is when a node entered the Plan's status.applying for the current hash, and
// the evidence that dates it.
type applyingStart struct {
	at       time.Time
	source   string
	text     string
	failures int32 // failed attempts recorded (JobFailed events, DeadlineExceeded/BackoffLimitExceeded)
}

func applyingSince(c *snapshot.Cluster, p *suc.Plan, n *corev1.Node) (applyingStart, bool) {
	hash := p.Status.LatestHash
	if hash == "" {
		return applyingStart{}, false
	}
	host := suc.Hostname(n)
	jobName := suc.JobName(p.Name, n.Name, hash)
	var s applyingStart
	var planFailures, jobFailures int32 // the same failures, told by the controller and by the Job controller
	take := func(t time.Time, source, text string) {
		if !t.IsZero() && (s.at.IsZero() || t.Before(s.at)) {
			s.at, s.source, s.text = t, source, text
		}
	}
	failedMsg := "Job " + p.Namespace + "/" + jobName + " failed on Node "
	for _, e := range c.EventsFor(suc.Group, suc.Kind, p.Namespace, p.Name) {
		switch e.Reason {
		case "SyncJob":
			if syncJobNames(e.Message, host, hash) {
				take(snapshot.EventFirstTime(e), eventSource(e), firstLine(e.Message))
			}
		case "JobFailed":
			if strings.HasPrefix(e.Message, failedMsg) {
				take(snapshot.EventFirstTime(e), eventSource(e), firstLine(e.Message))
				planFailures += max(e.Count, 1)
			}
		}
	}
	if cond := p.Condition(suc.CondComplete); cond != nil && cond.Reason == "JobFailed" && strings.HasPrefix(cond.Message, failedMsg) {
		take(suc.ConditionUpdated(cond), sourceOf(c, planRef(p)), "condition Complete reason=JobFailed: "+firstLine(cond.Message))
	}
	var current []*batchv1.Job
	for _, j := range p.JobsOf(c.Jobs) {
		if j.Labels[suc.LabelNode] == n.Name && j.Labels[suc.LabelPlanName(p.Name)] == hash {
			current = append(current, j)
		}
	}
	for _, e := range c.EventsFor("batch", "Job", p.Namespace, jobName) {
		first := snapshot.EventFirstTime(e)
		take(first, eventSource(e), fmt.Sprintf("Job %s: %s", jobName, firstLine(e.Message)))
		if e.Reason == "DeadlineExceeded" || e.Reason == "BackoffLimitExceeded" {
			jobFailures += max(e.Count, 1)
		}
		// activeDeadlineSeconds counts from the Job's start, so the first generation to run into
		// it started that long before (the Plan's hash fixes the Job's spec across generations).
		if e.Reason == "DeadlineExceeded" && !first.IsZero() {
			for _, j := range current {
				if d := j.Spec.ActiveDeadlineSeconds; d != nil && *d > 0 {
					take(first.Add(-time.Duration(*d)*time.Second), eventSource(e),
						fmt.Sprintf("Job %s started %ds before its first DeadlineExceeded at %s", jobName, *d, first.UTC().Format(time.RFC3339)))
				}
			}
		}
	}
	s.failures = max(planFailures, jobFailures)
	for _, j := range current {
		take(j.CreationTimestamp.Time, sourceOf(c, jobRef(j)), fmt.Sprintf("Job %s created", j.Name))
		if j.Status.StartTime != nil {
			take(j.Status.StartTime.Time, sourceOf(c, jobRef(j)), fmt.Sprintf("Job %s started", j.Name))
		}
	}
	return s, !s.at.IsZero()
}

// syncJobNames reports a SyncJob message ("Jobs synced for version <v> on Nodes <a,b>. Hash:
// <h>", handle_upgrade.go) that lists the node for this hash.
func syncJobNames(msg, host, hash string) bool {
	rest, ok := strings.CutSuffix(strings.TrimSpace(msg), ". Hash: "+hash)
	if !ok {
		return false
	}
	i := strings.LastIndex(rest, " on Nodes ")
	if i < 0 {
		return false
	}
	return slices.Contains(strings.Split(rest[i+len(" on Nodes "):], ","), host)
}

// applyingEvidence quotes when a node entered status.applying.
func applyingEvidence(ctx *Context, node string, s applyingStart) finding.Evidence {
	text := fmt.Sprintf("node %s in status.applying since %s (%s ago; first trace: %s)", node, s.at.UTC().Format(time.RFC3339), human(ctx.Age(s.at)), s.text)
	if s.failures > 0 {
		text += fmt.Sprintf("; %d failed attempt(s) since", s.failures)
	}
	return finding.Evidence{Source: s.source, Text: text}
}
