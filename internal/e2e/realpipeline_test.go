package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/unstick-dev/unstick/internal/testbed"
)

// TestRealFleetPipeline makes the failures of Fleet's pipeline before and around the
// BundleDeployments with the real controllers — Fleet v0.16.0's controller, gitjob
// controller and agent, kube-apiserver, etcd and kube-controller-manager v1.37.2 — and keeps
// what `unstick collect` read of each as a scenario under testdata/scenarios/real/:
//
//   - fleet-gitrepo-failures: a private repository polled with a revoked token (401), a
//     repository that moved (404), and a GitRepo whose new commit's gitjob Job a ResourceQuota
//     refuses, its Bundle left at the old commit;
//   - fleet-bundle-chains: a bundle whose dependsOn names a bundle that fails to apply, and a
//     bundle whose ConfigMap another writer changed (Modified);
//   - fleet-bundle-release-too-large: a bundle whose Helm release is too large to be stored,
//     after a Bundle too large for etcd was refused outright.
//
// KWOK plays the kubelets: the gitjob Job's pod completes without running `fleet apply`, so
// the test writes the Bundle that `fleet apply` would have written for the first commit (its
// labels as fleet apply sets them). Everything else is the controllers' own. Runs only when
// UNSTICK_COLLECT_REAL is set.
func TestRealFleetPipeline(t *testing.T) {
	if os.Getenv("UNSTICK_COLLECT_REAL") == "" {
		t.Skip("regenerates the real/fleet-gitrepo-*, fleet-bundle-chains and fleet-bundle-release-too-large scenarios; set UNSTICK_COLLECT_REAL=1")
	}
	began := time.Now()
	r := startRealFleet(t)
	r.fleet.StartGitJob(t)
	git := startGitServer(t)
	t.Logf("beds, Fleet, gitjob and the Git server up in %s", time.Since(began).Round(time.Second))
	produceGitRepoFailures(t, r, git)
	t.Logf("GitRepo failures collected at %s", time.Since(began).Round(time.Second))
	produceBundleChains(t, r)
	t.Logf("bundle chains collected at %s", time.Since(began).Round(time.Second))
	produceReleaseTooLarge(t, r)
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

// The GitRepos of the first stage.
const (
	repoPrivate = "edge-config" // private repository, token revoked: 401
	repoMoved   = "apps-legacy" // repository renamed on the Git host: 404
	repoQuota   = "shop"        // new commit, gitjob Job refused by a ResourceQuota
	quotaName   = "fleet-default-jobs"
	// A team's workspace whose compute quota the gitjob Job's pod (no requests) cannot meet.
	repoTeam = "storefront"
	teamNS   = "team-web"
)

func gitRepo(name, url string, secret string) *fleetv1.GitRepo {
	return &fleetv1.GitRepo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: repoNamespace(name)},
		Spec: fleetv1.GitRepoSpec{
			Repo: url, Branch: "main", Paths: []string{"web"}, ClientSecretName: secret,
			Targets: []fleetv1.GitTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "real"}}}},
		},
	}
}

// produceGitRepoFailures makes the four GitRepo failures, waits for the controllers' own
// messages, collects them as fleet-gitrepo-failures and removes the GitRepos again.
func produceGitRepoFailures(t *testing.T, r *realFleet, git *gitServer) {
	t.Helper()
	git.set("/acme/"+repoQuota+".git", gitRepoState{branch: "main", commit: commitOf(repoQuota + "-1")})
	shopFirstCommit(t, r, git)
	unreadableRepos(t, r, git)
	shopQuotaRefusesJob(t, r, git)
	teamQuotaRefusesPod(t, r, git)
	msgs := waitGitRepoMessages(t, r, map[string]string{repoPrivate: "authentication required", repoMoved: "repository not found", repoQuota: "exceeded quota", repoTeam: "FailedCreate"})
	dir := collectLive(t, r.kubeconfig, "fleet-gitrepo-failures")
	writeRealPipelineScenario(t, dir, pipelineScenario{
		what: "Four GitRepos on the management cluster, polled by the real gitjob controller against a Git server on the loopback: " +
			"edge-config's private repository refuses the revoked token in its clientSecretName (HTTP 401), apps-legacy's repository moved (HTTP 404), " +
			"shop's new commit cannot become a gitjob Job because a ResourceQuota in fleet-default allows no Jobs, so its Bundle shop-web stays at the first commit, " +
			"and storefront's gitjob Job in the team-web workspace cannot create its pod, which sets no CPU or memory requests, under the namespace's compute quota.",
		expect: "rootCauses: [fleet/gitrepo-not-syncing]\n",
		msgs:   msgs,
		roots: []bundleRoot{
			{"fleet/gitrepo-not-syncing", "mgmt", []string{repoPrivate, "cannot read its repository", "authentication required"}},
			{"fleet/gitrepo-not-syncing", "mgmt", []string{repoMoved, "cannot read its repository", "repository not found"}},
			{"fleet/gitrepo-not-syncing", "mgmt", []string{repoQuota, "has not reached 1 of its 1 Bundles", "exceeded quota: " + quotaName}},
			{"fleet/gitrepo-not-syncing", "mgmt", []string{repoTeam, "cannot create its pod", "failed quota: compute"}},
		},
	})
	removeGitRepoFailures(t, r)
}

// unreadableRepos creates a GitRepo of a private repository whose token the Git host revoked
// (401) and one of a repository that moved (404).
func unreadableRepos(t *testing.T, r *realFleet, git *gitServer) {
	t.Helper()
	ctx := t.Context()
	git.set("/acme/"+repoPrivate+".git", gitRepoState{branch: "main", commit: commitOf(repoPrivate + "-1"), user: "fleet-bot", password: "glpat-rotated-2026-11"})
	// The Secret the GitRepo names in clientSecretName: the token the Git host revoked.
	if _, err := r.mgmt.Client.CoreV1().Secrets(testbed.FleetDefaultNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: repoPrivate + "-auth"}, Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("fleet-bot"), "password": []byte("glpat-revoked-2026-05")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []*fleetv1.GitRepo{
		gitRepo(repoPrivate, git.URL+"/acme/"+repoPrivate+".git", repoPrivate+"-auth"),
		gitRepo(repoMoved, git.URL+"/acme/"+repoMoved+".git", ""),
	} {
		if err := r.fleet.Client.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
}

// waitGitRepoMessages waits until each GitRepo's messages contain the words wanted of it and
// returns them, a poll later (so the events count more than one failure).
func waitGitRepoMessages(t *testing.T, r *realFleet, want map[string]string) map[string]string {
	t.Helper()
	for name, w := range want {
		waitUntil(t, "GitRepo "+name+" reports "+w, 3*time.Minute, func() bool { return strings.Contains(r.gitRepoMessages(t, name), w) },
			func() string { return r.gitRepoMessages(t, name) + "\n" + r.mgmt.Logs("fleet-gitjob") })
	}
	time.Sleep(20 * time.Second)
	msgs := map[string]string{}
	for name := range want {
		msgs[name] = r.gitRepoMessages(t, name)
		t.Logf("GitRepo %s, as the real controllers report it:\n%s", name, msgs[name])
	}
	return msgs
}

func removeGitRepoFailures(t *testing.T, r *realFleet) {
	t.Helper()
	ctx := t.Context()
	for _, name := range []string{repoPrivate, repoMoved, repoQuota, repoTeam} {
		_ = r.fleet.Client.Delete(ctx, &fleetv1.GitRepo{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: repoNamespace(name)}})
	}
	_ = r.mgmt.Client.CoreV1().ResourceQuotas(testbed.FleetDefaultNamespace).Delete(ctx, quotaName, metav1.DeleteOptions{})
	_ = r.fleet.Client.Delete(ctx, &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: repoQuota + "-web", Namespace: testbed.FleetDefaultNamespace}})
}

// shopFirstCommit creates the shop GitRepo at its first commit, waits for the gitjob
// controller's Job to complete (KWOK runs its pod; the controller then deletes it) and writes the Bundle `fleet apply` in
// that pod would have written, then waits for the agent to deploy it.
func shopFirstCommit(t *testing.T, r *realFleet, git *gitServer) {
	t.Helper()
	ctx := t.Context()
	if err := r.fleet.Client.Create(ctx, gitRepo(repoQuota, git.URL+"/acme/"+repoQuota+".git", "")); err != nil {
		t.Fatal(err)
	}
	first := commitOf(repoQuota + "-1")
	// The Job controller's event; the gitjob controller deletes a succeeded Job soon after.
	waitUntil(t, "shop's first gitjob Job complete", 3*time.Minute, func() bool { return strings.Contains(r.gitRepoMessages(t, repoQuota), "Job completed") },
		func() string { return r.gitRepoMessages(t, repoQuota) + "\n" + r.mgmt.Logs("fleet-gitjob") })
	b := failBundle{name: repoQuota + "-web", ns: "shop", version: "1.4.0", templates: map[string]string{"configmap.yaml": shopConfig}}.bundle()
	// What fleet apply sets on the Bundles of a GitRepo: the commit (rancher/fleet
	// internal/cmd/cli/apply.go) and the repo-name label the gitjob passes it (gitjob.go).
	b.Labels = map[string]string{fleetv1.RepoLabel: repoQuota, fleetv1.CommitLabel: first}
	r.updateBundle(t, b)
	waitUntil(t, "shop-web deployed", 4*time.Minute, func() bool { return bdReady(r.bdOf(t, b.Name)) }, r.logs)
}

// shopQuotaRefusesJob adds a ResourceQuota allowing no Jobs in fleet-default, then pushes
// shop's second commit: the poller resolves it and the gitjob Job for it is refused.
func shopQuotaRefusesJob(t *testing.T, r *realFleet, git *gitServer) {
	t.Helper()
	ctx := t.Context()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: quotaName},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}},
	}
	if _, err := r.mgmt.Client.CoreV1().ResourceQuotas(testbed.FleetDefaultNamespace).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the quota's status", time.Minute, func() bool {
		q, err := r.mgmt.Client.CoreV1().ResourceQuotas(testbed.FleetDefaultNamespace).Get(ctx, quotaName, metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil
	}, func() string { return r.mgmt.Logs("kube-controller-manager") })
	git.set("/acme/"+repoQuota+".git", gitRepoState{branch: "main", commit: commitOf(repoQuota + "-2")})
}

// teamQuotaRefusesPod gives the team-web namespace a compute quota, as platform teams do for
// a workspace, and a GitRepo there: the gitjob Job is created, its pod (no requests) is not.
func teamQuotaRefusesPod(t *testing.T, r *realFleet, git *gitServer) {
	t.Helper()
	ctx := t.Context()
	if err := r.mgmt.EnsureNamespace(ctx, teamNS); err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("4"), corev1.ResourceRequestsMemory: resource.MustParse("8Gi"),
		}},
	}
	if _, err := r.mgmt.Client.CoreV1().ResourceQuotas(teamNS).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the team quota's status", time.Minute, func() bool {
		q, err := r.mgmt.Client.CoreV1().ResourceQuotas(teamNS).Get(ctx, "compute", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil
	}, func() string { return r.mgmt.Logs("kube-controller-manager") })
	git.set("/acme/"+repoTeam+".git", gitRepoState{branch: "main", commit: commitOf(repoTeam + "-1")})
	if err := r.fleet.Client.Create(ctx, gitRepo(repoTeam, git.URL+"/acme/"+repoTeam+".git", "")); err != nil {
		t.Fatal(err)
	}
}

func repoNamespace(name string) string {
	if name == repoTeam {
		return teamNS
	}
	return testbed.FleetDefaultNamespace
}

// gitRepoMessages is what the real controllers say about GitRepo name: its status, its events
// and those of its Jobs.
func (r *realFleet) gitRepoMessages(t *testing.T, name string) string {
	t.Helper()
	ctx := t.Context()
	var out []string
	var g fleetv1.GitRepo
	if err := r.fleet.Client.Get(ctx, client.ObjectKey{Namespace: repoNamespace(name), Name: name}, &g); err == nil {
		st, _ := json.Marshal(g.Status)
		out = append(out, "GitRepo status: "+string(st))
	}
	evs, err := r.mgmt.Client.CoreV1().Events(repoNamespace(name)).List(ctx, metav1.ListOptions{})
	if err != nil {
		return strings.Join(out, "\n")
	}
	for _, e := range evs.Items {
		o := e.InvolvedObject
		if o.Name == name || o.Kind == "Job" && strings.HasPrefix(o.Name, name+"-") {
			out = append(out, fmt.Sprintf("event %s %s %s/%s (x%d): %s", e.Type, e.Reason, o.Kind, o.Name, max(e.Count, 1), e.Message))
		}
	}
	return strings.Join(out, "\n")
}

// pipelineScenario is what a kept scenario's README and expect.yaml say.
type pipelineScenario struct {
	what   string
	expect string            // expect.yaml's lines after description and now
	msgs   map[string]string // the real messages by object
	extra  string            // more README text
	roots  []bundleRoot      // the root causes the scan must name
}

// writeRealPipelineScenario writes the scenario's expect.yaml (judged 16 minutes after the
// collection, past the pipeline's thresholds) and README.md, and returns that time.
func writeRealPipelineScenario(t *testing.T, dir string, s pipelineScenario) string {
	t.Helper()
	now := time.Now().UTC().Add(16 * time.Minute).Truncate(time.Second).Format(time.RFC3339)
	expect := fmt.Sprintf("description: %q\nnow: %q\n%s", "Produced by the real controllers (internal/e2e/realpipeline_test.go). "+s.what, now, s.expect)
	readme := "# " + filepath.Base(dir) + "\n\nProduced on the test bed by the real controllers, not written by hand: `unstick collect` of the beds of\n" +
		"`TestRealFleetPipeline` (internal/e2e/realpipeline_test.go) — the Fleet v0.16.0 controller, gitjob controller and agent (Helm v4 inside it),\n" +
		"kube-apiserver, etcd, kube-controller-manager and kube-scheduler v1.37.2, KWOK v0.8.0 standing in for the kubelets. Regenerate with\n" +
		"`UNSTICK_COLLECT_REAL=1 go test ./internal/e2e -run TestRealFleetPipeline -count=1 -timeout 40m`.\n\n" + s.what + "\n"
	if s.extra != "" {
		readme += "\n" + s.extra + "\n"
	}
	readme += "\nThe messages the real controllers wrote:\n"
	for _, name := range sortedKeys(s.msgs) {
		readme += "\n## " + name + "\n\n```\n" + s.msgs[name] + "\n```\n"
	}
	for name, data := range map[string]string{"expect.yaml": expect, "README.md": readme} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	t.Logf("scan of %s: root causes %v", dir, parse(t, out, errOut).rootCauses())
	for _, want := range s.roots {
		if !rootNamed(t, out, want) {
			t.Errorf("%s: no incident whose root cause is %s naming %v\n%s", dir, want.id, want.words, out)
		}
	}
	return now
}
