package check

import (
	"strings"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"github.com/rancher/wrangler/v3/pkg/genericcondition"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

var repoNow = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func repoAt(h, m int) time.Time { return time.Date(2026, 11, 28, h, m, 0, 0, time.UTC) }

func repoEvent(kind, typ, reason, msg string, first, last time.Time, count int32) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "platform.1", Namespace: "fleet-default"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: "fleet-default", Name: "platform"},
		Type:           typ, Reason: reason, Message: msg, Count: count,
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last)}
}

func testRepo(lastPoll time.Time, conds ...genericcondition.GenericCondition) *fleetv1.GitRepo {
	g := &fleetv1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: "fleet-default"}}
	g.Spec.Repo = "git@git.example.com:platform/fleet-platform.git"
	g.Status.Commit = "a1462e4c7539c9bb9003349f7f39da1c98b9ca7c"
	g.Status.LastPollingTime = metav1.NewTime(lastPoll)
	g.Status.Conditions = conds
	return g
}

// Each way a GitRepo stops taking commits is named by its cause, and a GitRepo that polls,
// or whose trouble is younger than the polling interval plus the margin, is not reported.
func TestGitRepoStallCauses(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx := &Context{Now: repoNow, Thresholds: NewThresholds(cat), Catalog: cat, Snap: &snapshot.Snapshot{}}
	lim := repoLimits{margin: 10 * time.Minute, churn: 6}
	hostKey := "ssh: handshake failed: knownhosts: key mismatch"
	for _, c := range []struct {
		name   string
		p      *fleet.RepoPipeline
		want   string // in the summary; "" for no finding
		signed string
	}{
		{"polls fine", &fleet.RepoPipeline{Repo: testRepo(repoAt(9, 29))}, "", ""},
		{"host key changed", &fleet.RepoPipeline{Repo: testRepo(repoAt(9, 29), genericcondition.GenericCondition{Type: "GitPolling", Status: "False",
			Message: hostKey, LastUpdateTime: repoAt(8, 0).Format(time.RFC3339)})}, "polling fails on the SSH host key", "host-key"},
		{"host key changed a minute ago", &fleet.RepoPipeline{Repo: testRepo(repoAt(9, 29), genericcondition.GenericCondition{Type: "GitPolling", Status: "False",
			Message: hostKey, LastUpdateTime: repoAt(9, 29).Format(time.RFC3339)})}, "", ""},
		{"polling stopped, nothing recorded", &fleet.RepoPipeline{Repo: testRepo(repoAt(6, 0))}, "has not polled its repository since 2026-11-28T06:00:00Z", "stale"},
		{"jobs created and deleted in a loop", &fleet.RepoPipeline{Repo: testRepo(repoAt(9, 29)), Events: []*corev1.Event{
			repoEvent("GitRepo", "Normal", "Created", "GitJob was created", repoAt(9, 5), repoAt(9, 28), 40)}}, "created and deleted in a loop (40 created", "churn"},
		{"a missing helm secret", &fleet.RepoPipeline{Repo: testRepo(repoAt(9, 29)), Events: []*corev1.Event{
			repoEvent("GitRepo", "Warning", "FailedValidatingSecret", `failed to look up helmSecretName, error: secrets "helm-auth" not found`, repoAt(8, 10), repoAt(9, 29), 300)}},
			"the gitjob Job is not created", "secret"},
		// Fleet v0.16's shape, as the real gitjob controller left it on the test bed: the poller
		// wrote the new commit to pollingCommit only, the Job for it was refused, and
		// status.commit and the Bundle stay at the old commit.
		{"new commit polled, its Job refused by a quota", quotaRefused(), "commit 87b7abf has not reached 1 of its 1 Bundles", "quota"},
		// The poller stamps lastPollingTime on each failed attempt: an old attempt with a
		// recorded failure is named by the failure, not as a poller that stopped.
		{"polling refused by the Git server", &fleet.RepoPipeline{Repo: testRepo(repoAt(6, 0), genericcondition.GenericCondition{Type: "GitPolling", Status: "False",
			Message: "authentication required: HTTP Basic: Access denied\n", LastUpdateTime: repoAt(5, 59).Format(time.RFC3339)})},
			"cannot read its repository (last attempt 2026-11-28T06:00:00Z) for 3h31m: polling fails on authentication", "auth"},
		// storefront of the same scenario: the Job exists, the namespace's compute quota refuses
		// its pod (no requests); the last poll's age is not the cause.
		{"the gitjob's pod refused by a compute quota", &fleet.RepoPipeline{Repo: testRepo(repoAt(8, 0)), Jobs: nil, Events: []*corev1.Event{
			repoEvent("Job", "Warning", "FailedCreate", `Error creating: pods "platform-3913e-hg7v8" is forbidden: failed quota: compute: must specify requests.cpu for: fleet,gitcloner-initializer; requests.memory for: fleet,gitcloner-initializer`, repoAt(7, 59), repoAt(8, 0), 6)}},
			"cannot take commit a1462e4 for 1h31m: the gitjob Job cannot create its pod", "quota"},
		{"only the poller's event", &fleet.RepoPipeline{Repo: testRepo(repoAt(9, 29)), Events: []*corev1.Event{
			repoEvent("GitRepo", "Warning", "FailedToCheckCommit", "repository not found: Repository not found.\n", repoAt(8, 0), repoAt(9, 29), 120)}},
			"cannot read its repository (last attempt 2026-11-28T09:29:00Z) for 1h30m: polling fails: the Git server has no repository at spec.repo", "repo-not-found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &snapshot.Cluster{Name: "local"}
			f, ok := gitRepoStall(ctx, m, c.p, lim)
			if c.want == "" {
				if ok {
					t.Errorf("reported: %s", f.Summary)
				}
				return
			}
			if !ok || !strings.Contains(f.Summary, c.want) || f.Signature != "gitrepo-not-syncing|"+c.signed {
				t.Errorf("got %t %q (signature %q), want a finding saying %q, signature %q", ok, f.Summary, f.Signature, c.want, c.signed)
			}
		})
	}
}

// quotaRefused is the shop GitRepo of the real fleet-gitrepo-failures scenario: polled at a
// new commit whose gitjob Job a ResourceQuota refused (Accepted=False).
func quotaRefused() *fleet.RepoPipeline {
	g := testRepo(repoAt(9, 29), genericcondition.GenericCondition{Type: "Accepted", Status: "False", Reason: "Error",
		Message:        `error creating git job: jobs.batch "platform-6d3c3" is forbidden: exceeded quota: fleet-default-jobs, requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0`,
		LastUpdateTime: repoAt(8, 40).Format(time.RFC3339)})
	g.Status.PollingCommit = "87b7abfe06d173fc854b7cb81cf756061ba04c37"
	b := &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "platform-web", Namespace: "fleet-default",
		Labels: map[string]string{fleet.LabelRepoName: "platform", fleet.LabelCommit: g.Status.Commit}}}
	return &fleet.RepoPipeline{Repo: g, Bundles: []*fleetv1.Bundle{b}, Events: []*corev1.Event{
		repoEvent("GitRepo", "Normal", "GotNewCommit", g.Status.PollingCommit, repoAt(8, 40), repoAt(8, 40), 1)}}
}
