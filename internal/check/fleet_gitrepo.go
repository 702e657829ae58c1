package check

import (
	"fmt"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// fleetGitRepoSync reports GitRepos whose commits stop before the Bundles: the GitRepo stays
// Ready with an old status.commit, or its Bundles keep the old fleet.cattle.io/commit label,
// while the polling fails (authentication, a changed SSH host key), the gitjob Job is never
// created (a missing secret, a quota, an admission webhook), Jobs are created and deleted in a
// loop, or the controller simply stopped acting (rancher/fleet#3138, #3194, #4948, #2853,
// #2972). Nothing downstream shows it: every BundleDeployment is Ready at the old commit.
var fleetGitRepoSync = Check{
	Name:  "fleet/gitrepo-sync",
	Emits: []string{"fleet/gitrepo-not-syncing"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		lim := repoLimits{
			margin: ctx.Thresholds.Duration("fleet.gitrepoSyncMargin"),
			churn:  ctx.Thresholds.Int("fleet.gitjobChurnJobs"),
		}
		for _, m := range ctx.Snap.Management() {
			for _, p := range fleet.Pipelines(m) {
				if f, ok := gitRepoStall(ctx, m, p, lim); ok {
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

type repoLimits struct {
	margin time.Duration
	churn  int
}

// repoCause is why a GitRepo's commit does not move on, when its status or events say.
type repoCause struct {
	text     string
	at       time.Time
	evidence []finding.Evidence
	// polling is a failure to read the repository (ls-remote), before any Job.
	polling bool
}

// gitRepoStall judges one GitRepo: its Bundles behind status.commit, or its polling stopped,
// for longer than the polling interval plus the margin.
func gitRepoStall(ctx *Context, m *snapshot.Cluster, p *fleet.RepoPipeline, lim repoLimits) (finding.Finding, bool) {
	g := p.Repo
	allowed := fleet.PollingInterval(g) + lim.margin
	stale := p.StaleBundles()
	cause := pipelineCause(ctx, m, p, lim)
	var what string
	var since time.Time
	switch {
	case len(stale) > 0:
		since = earliest(commitSeen(p), cause.at)
		what = fmt.Sprintf("commit %s has not reached %d of its %d Bundles", shortCommit(fleet.NextCommit(g)), len(stale), len(p.Bundles))
	case cause.polling:
		// The poller stamps lastPollingTime on failed attempts too: the failure, not the
		// time of the last attempt, is what stops the commits.
		since = cause.at
		what = fmt.Sprintf("cannot read its repository (last attempt %s)", timeText(g.Status.LastPollingTime.Time))
	case cause.text != "":
		// A recorded failure names the stall better than the age of the last poll.
		since = cause.at
		what = "cannot take new commits"
		if c := fleet.NextCommit(g); c != "" {
			what = "cannot take commit " + shortCommit(c)
		}
	case pollingStalled(ctx, g, allowed):
		since = g.Status.LastPollingTime.Time
		what = fmt.Sprintf("has not polled its repository since %s (every %s expected)", since.UTC().Format(time.RFC3339), human(fleet.PollingInterval(g)))
	default:
		return finding.Finding{}, false
	}
	if since.IsZero() && cause.text == "" || !since.IsZero() && ctx.Age(since) < allowed {
		return finding.Finding{}, false
	}
	if cause.text == "" {
		cause = quietController(m, g)
	}
	return gitRepoFinding(ctx, m, p, stale, what, since, cause), true
}

func gitRepoFinding(ctx *Context, m *snapshot.Cluster, p *fleet.RepoPipeline, stale []*fleetv1.Bundle, what string, since time.Time, cause repoCause) finding.Finding {
	g := p.Repo
	summary := fmt.Sprintf("GitRepo %s/%s %s", g.Namespace, g.Name, what)
	if !since.IsZero() {
		summary += fmt.Sprintf(" for %s", human(ctx.Age(since)))
	}
	f := ctx.New("fleet/gitrepo-not-syncing", m, gitRepoRef(g), summary+": "+cause.text)
	f.Keys = []string{GitRepoKey(m.Name, g.Namespace, g.Name)}
	for _, j := range p.Jobs {
		f.Keys = append(f.Keys, WorkloadKey(m.Name, j.Namespace, j.Name))
	}
	src := sourceOf(m, gitRepoRef(g))
	f.Evidence = append(f.Evidence, ev(src, "status.commit=%s pollingCommit=%s pollingInterval=%s lastPollingTriggered=%s", orDash(g.Status.Commit), orDash(g.Status.PollingCommit), pollingText(g), timeText(g.Status.LastPollingTime.Time)))
	for _, b := range firstN(stale, 5) {
		f.Evidence = append(f.Evidence, ev(sourceOf(m, bundleObjRef(b)), "Bundle %s: label %s=%s", b.Name, fleet.LabelCommit, b.Labels[fleet.LabelCommit]))
	}
	f.Evidence = append(f.Evidence, cause.evidence...)
	f.Since = timePtr(since)
	f.Signature = "gitrepo-not-syncing|" + classifyRepoCause(cause.text)
	f.Vars = map[string]string{"gitrepo": g.Name, "fleet-namespace": g.Namespace,
		"n+1@gitrepos.fleet.cattle.io": fmt.Sprint(g.Spec.ForceSyncGeneration + 1)}
	return f
}

// pipelineCause names what stops the commit, in the order the gitjob controller meets it:
// polling, creating the Job, running it, Jobs replaced in a loop.
func pipelineCause(ctx *Context, m *snapshot.Cluster, p *fleet.RepoPipeline, lim repoLimits) repoCause {
	for _, c := range []repoCause{pollingError(m, p), jobCreateError(m, p), jobFailed(m, p), jobChurn(ctx, m, p, lim.churn)} {
		if c.text != "" {
			return c
		}
	}
	return repoCause{}
}

// pollingError is a GitPolling condition in error, or the controller's warning event
// "Failed" (MonitorLatestCommit) about the GitRepo.
func pollingError(m *snapshot.Cluster, p *fleet.RepoPipeline) repoCause {
	g := p.Repo
	if c := fleet.Condition(g.Status.Conditions, "GitPolling"); c != nil && string(c.Status) == "False" && c.Message != "" {
		at := earliest(snapshot.ParseTime(c.LastTransitionTime), snapshot.ParseTime(c.LastUpdateTime))
		return repoCause{text: pollingFailure(c.Message), at: at, polling: true,
			evidence: []finding.Evidence{ev(sourceOf(m, gitRepoRef(g)), "condition GitPolling=False: %s", firstLine(c.Message))}}
	}
	// "Failed" is the reconciler's, "FailedToCheckCommit" the poller's (rancher/fleet v0.16).
	for _, reason := range []string{"FailedToCheckCommit", "Failed"} {
		if e := lastEvent(p.Events, "GitRepo", corev1.EventTypeWarning, reason); e != nil {
			return repoCause{text: pollingFailure(e.Message), at: firstSeen(e), polling: true, evidence: []finding.Evidence{repoEventEvidence(m, e)}}
		}
	}
	return repoCause{}
}

// pollingFailure names a polling failure by its kind: credentials, an SSH host key, anything else.
func pollingFailure(msg string) string {
	switch k := classifyRepoCause(msg); k {
	case "auth":
		return "polling fails on authentication (the credentials in spec.clientSecretName are refused or missing): " + firstLine(msg)
	case "host-key":
		return "polling fails on the SSH host key (the Git server's key changed or is not in known_hosts): " + firstLine(msg)
	case "repo-not-found":
		return "polling fails: the Git server has no repository at spec.repo (moved, renamed or deleted; GitHub and GitLab also answer so for a private repository without credentials): " + firstLine(msg)
	}
	return "polling fails: " + firstLine(msg)
}

var (
	authError    = lazyre.New(`(?i)authentication required|authentication failed|invalid credentials|could not read username|permission denied \(publickey|unable to authenticate|401 unauthorized|403 forbidden`)
	hostKeyError = lazyre.New(`(?i)knownhosts|host key|known_hosts|key mismatch`)
	repoMissing  = lazyre.New(`(?i)repository not found`)
	// "failed quota: <name>: must specify requests.cpu …" is a pod without the requests a
	// namespace's compute quota needs (kube-apiserver's resourcequota admission).
	quotaError  = lazyre.New(`(?i)exceeded quota|failed quota`)
	secretError = lazyre.New(`(?i)secrets? "[^"]*" not found|failed to look up`)
	admitError  = lazyre.New(`(?i)admission webhook|denied the request`)
)

// classifyRepoCause is the kind of a cause, for the finding's signature (the same failure on
// many GitRepos is one shape).
func classifyRepoCause(text string) string {
	switch {
	case hostKeyError().MatchString(text):
		return "host-key"
	case authError().MatchString(text):
		return "auth"
	case repoMissing().MatchString(text):
		return "repo-not-found"
	case quotaError().MatchString(text):
		return "quota"
	case secretError().MatchString(text):
		return "secret"
	case admitError().MatchString(text):
		return "admission"
	case strings.Contains(text, "created and deleted"):
		return "churn"
	case strings.Contains(text, "failed"):
		return "job-failed"
	}
	return "stale"
}

// jobCreateError is a gitjob Job that could not be made or could not make its pod: the
// GitRepo's Accepted condition or warning events naming the Job, or the Job controller's
// FailedCreate (a quota, an admission webhook, a missing secret or service account).
func jobCreateError(m *snapshot.Cluster, p *fleet.RepoPipeline) repoCause {
	g := p.Repo
	if e := lastEvent(p.Events, "Job", corev1.EventTypeWarning, "FailedCreate"); e != nil {
		return repoCause{text: "the gitjob Job cannot create its pod: " + firstLine(e.Message), at: firstSeen(e), evidence: []finding.Evidence{repoEventEvidence(m, e)}}
	}
	for _, reason := range []string{"FailedValidatingSecret", "FailedToGetGitJob", "FailedCreate"} {
		if e := lastEvent(p.Events, "GitRepo", corev1.EventTypeWarning, reason); e != nil {
			return repoCause{text: "the gitjob Job is not created: " + firstLine(e.Message), at: firstSeen(e), evidence: []finding.Evidence{repoEventEvidence(m, e)}}
		}
	}
	if c := fleet.Condition(g.Status.Conditions, fleetv1.GitRepoAcceptedCondition); c != nil && string(c.Status) == "False" && strings.Contains(c.Message, "job") {
		at := earliest(snapshot.ParseTime(c.LastTransitionTime), snapshot.ParseTime(c.LastUpdateTime))
		return repoCause{text: "the gitjob Job is not created: " + firstLine(c.Message), at: at,
			evidence: []finding.Evidence{ev(sourceOf(m, gitRepoRef(g)), "condition Accepted=False: %s", firstLine(c.Message))}}
	}
	return repoCause{}
}

// jobFailed is a gitjob that ran and failed (fleet apply's error is in the GitRepo's Stalled
// condition, the Job's Failed condition says it gave up).
func jobFailed(m *snapshot.Cluster, p *fleet.RepoPipeline) repoCause {
	g := p.Repo
	if c := fleet.Condition(g.Status.Conditions, "Stalled"); c != nil && string(c.Status) == "True" && c.Message != "" {
		at := earliest(snapshot.ParseTime(c.LastTransitionTime), snapshot.ParseTime(c.LastUpdateTime))
		return repoCause{text: "the gitjob failed: " + firstLine(c.Message), at: at,
			evidence: []finding.Evidence{ev(sourceOf(m, gitRepoRef(g)), "condition Stalled=True: %s", firstLine(c.Message))}}
	}
	for _, j := range p.Jobs {
		for _, c := range j.Status.Conditions {
			if c.Type == "Failed" && c.Status == corev1.ConditionTrue {
				return repoCause{text: fmt.Sprintf("the gitjob Job %s failed: %s", j.Name, orDash(firstLine(c.Message))), at: c.LastTransitionTime.Time,
					evidence: []finding.Evidence{ev(sourceOf(m, ref("batch/v1", "Job", j.Namespace, j.Name)), "condition Failed=True reason=%s: %s", c.Reason, firstLine(c.Message))}}
			}
		}
	}
	return repoCause{}
}

// churnWindow is how far back jobChurn counts the Jobs created for a GitRepo.
const churnWindow = time.Hour

// jobChurn is the controller creating a new gitjob Job again and again: its "Created" events
// (GitJob was created) counted over the last hour.
func jobChurn(ctx *Context, m *snapshot.Cluster, p *fleet.RepoPipeline, limit int) repoCause {
	n := 0
	var first *corev1.Event
	for _, e := range p.Events {
		if e.InvolvedObject.Kind != "GitRepo" || e.Reason != "Created" || ctx.Age(snapshot.EventTime(e)) > churnWindow {
			continue
		}
		n += int(max(e.Count, 1))
		if first == nil {
			first = e
		}
	}
	if limit <= 0 || n < limit {
		return repoCause{}
	}
	return repoCause{text: fmt.Sprintf("gitjob Jobs are created and deleted in a loop (%d created in the last hour), so none runs to the end", n),
		at: firstSeen(first), evidence: []finding.Evidence{repoEventEvidence(m, first)}}
}

// quietController is the cause when nothing records one: the gitjob controller has not acted
// on the GitRepo (its conditions last changed when they say).
func quietController(m *snapshot.Cluster, g *fleetv1.GitRepo) repoCause {
	var last time.Time
	for _, c := range g.Status.Conditions {
		last = latest(last, snapshot.ParseTime(c.LastUpdateTime), snapshot.ParseTime(c.LastTransitionTime))
	}
	return repoCause{text: "no error is recorded: the gitjob controller has stopped acting on it (restart it)",
		evidence: []finding.Evidence{ev(sourceOf(m, gitRepoRef(g)), "no polling error, failed or refused Job; conditions last changed %s", timeText(last))}}
}

// commitSeen is when the GitRepo's next commit was first seen: the GotNewCommit event
// naming it, else the first gitjob Job still there.
func commitSeen(p *fleet.RepoPipeline) time.Time {
	next := fleet.NextCommit(p.Repo)
	for _, e := range p.Events {
		if e.Reason == "GotNewCommit" && strings.TrimSpace(e.Message) == next {
			return firstSeen(e)
		}
	}
	var t time.Time
	for _, j := range p.Jobs {
		t = earliest(t, j.CreationTimestamp.Time)
	}
	return t
}

func pollingStalled(ctx *Context, g *fleetv1.GitRepo, allowed time.Duration) bool {
	last := g.Status.LastPollingTime.Time
	return fleet.PollingInterval(g) > 0 && !g.Spec.Paused && !last.IsZero() && ctx.Age(last) > allowed
}

func lastEvent(es []*corev1.Event, kind, typ, reason string) *corev1.Event {
	for i := len(es) - 1; i >= 0; i-- {
		if e := es[i]; e.InvolvedObject.Kind == kind && e.Type == typ && e.Reason == reason {
			return e
		}
	}
	return nil
}

func firstSeen(e *corev1.Event) time.Time {
	if e == nil {
		return time.Time{}
	}
	if !e.FirstTimestamp.IsZero() {
		return e.FirstTimestamp.Time
	}
	return snapshot.EventTime(e)
}

func repoEventEvidence(m *snapshot.Cluster, e *corev1.Event) finding.Evidence {
	o := e.InvolvedObject
	return ev(sourceOf(m, ref(o.APIVersion, o.Kind, o.Namespace, o.Name)), "event %s %s on %s %s (x%d, last %s): %s",
		e.Type, e.Reason, o.Kind, o.Name, max(e.Count, 1), timeText(snapshot.EventTime(e)), firstLine(e.Message))
}

func pollingText(g *fleetv1.GitRepo) string {
	if g.Spec.DisablePolling {
		return "disabled"
	}
	return human(fleet.PollingInterval(g))
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return orDash(c)
}

func gitRepoRef(g *fleetv1.GitRepo) finding.ObjectRef {
	return ref("fleet.cattle.io/v1alpha1", "GitRepo", g.Namespace, g.Name)
}

func bundleObjRef(b *fleetv1.Bundle) finding.ObjectRef {
	return ref("fleet.cattle.io/v1alpha1", "Bundle", b.Namespace, b.Name)
}

// GitRepoKey ties what happens to one GitRepo's commits on the management cluster together:
// the GitRepo, its gitjob Jobs and the Bundles it writes.
func GitRepoKey(cluster, namespace, name string) string {
	return "gitrepo:" + cluster + "/" + namespace + "/" + name
}
