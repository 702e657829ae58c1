package fleet

import (
	"sort"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// The labels and defaults of Fleet's GitOps pipeline (rancher/fleet v0.16
// pkg/apis/fleet.cattle.io/v1alpha1 gitrepo_types.go, internal/cmd/controller/gitops).
const (
	// LabelCommit is the commit a Bundle was built from; LabelRepoName the GitRepo it came from.
	LabelCommit   = fleetv1.CommitLabel
	LabelRepoName = fleetv1.RepoLabel
	// DefaultPollingInterval is how often the gitjob controller polls a GitRepo that sets no
	// spec.pollingInterval.
	DefaultPollingInterval = 15 * time.Second
	// labelForceSyncGeneration and labelGitRepoGeneration mark the Jobs the gitjob
	// controller creates for a GitRepo.
	labelForceSyncGeneration = "fleet.cattle.io/force-sync-generation"
	labelGitRepoGeneration   = "fleet.cattle.io/gitrepo-generation"
)

// RepoPipeline is one GitRepo and what its commits go through on the management cluster: the
// gitjob Jobs that clone and apply it, their pods, the Bundles they wrote, and the events
// about the GitRepo and its Jobs. It is the first half of a commit's way to the clusters
// (commit → job → Bundle); the BundleDeployments of each Bundle are the second.
type RepoPipeline struct {
	Repo    *fleetv1.GitRepo
	Bundles []*fleetv1.Bundle
	Jobs    []*batchv1.Job
	Pods    []*corev1.Pod
	// Events are the GitRepo's own (polling errors, GotNewCommit, job creation) and its Jobs'
	// (FailedCreate of their pods), oldest first.
	Events []*corev1.Event
}

// Pipelines returns the pipeline of every GitRepo of a management cluster, in GitRepo order.
func Pipelines(m *snapshot.Cluster) []*RepoPipeline {
	out := make([]*RepoPipeline, 0, len(m.GitRepos))
	for _, g := range m.GitRepos {
		p := &RepoPipeline{Repo: g}
		for _, b := range m.Bundles {
			if b.Namespace == g.Namespace && b.Labels[LabelRepoName] == g.Name {
				p.Bundles = append(p.Bundles, b)
			}
		}
		for _, j := range m.Jobs {
			if IsGitJob(g, j) {
				p.Jobs = append(p.Jobs, j)
			}
		}
		p.Pods = jobPods(m, p.Jobs)
		p.Events = pipelineEvents(m, g, p.Jobs)
		out = append(out, p)
	}
	return out
}

// IsGitJob reports whether a Job is one the gitjob controller created for GitRepo g: owned
// by it, or (an owner reference dropped by a copy) named after it and carrying the gitjob
// labels.
func IsGitJob(g *fleetv1.GitRepo, j *batchv1.Job) bool {
	if j.Namespace != g.Namespace {
		return false
	}
	for _, o := range j.OwnerReferences {
		if o.Kind == "GitRepo" && o.Name == g.Name {
			return true
		}
	}
	_, gen := j.Labels[labelGitRepoGeneration]
	_, force := j.Labels[labelForceSyncGeneration]
	return (gen || force) && strings.HasPrefix(j.Name, g.Name+"-")
}

func jobPods(m *snapshot.Cluster, jobs []*batchv1.Job) []*corev1.Pod {
	names := map[string]bool{}
	for _, j := range jobs {
		names[j.Namespace+"/"+j.Name] = true
	}
	var out []*corev1.Pod
	for _, p := range m.Pods {
		if names[p.Namespace+"/"+p.Labels["job-name"]] {
			out = append(out, p)
		}
	}
	return out
}

func pipelineEvents(m *snapshot.Cluster, g *fleetv1.GitRepo, jobs []*batchv1.Job) []*corev1.Event {
	out := append([]*corev1.Event(nil), m.EventsFor("fleet.cattle.io", "GitRepo", g.Namespace, g.Name)...)
	for _, j := range jobs {
		out = append(out, m.EventsFor("batch", "Job", j.Namespace, j.Name)...)
	}
	sort.SliceStable(out, func(i, k int) bool { return snapshot.EventTime(out[i]).Before(snapshot.EventTime(out[k])) })
	return out
}

// PollingInterval is how often Fleet polls the GitRepo: spec.pollingInterval, else the
// default. Zero when polling is disabled (only webhooks move it).
func PollingInterval(g *fleetv1.GitRepo) time.Duration {
	switch {
	case g.Spec.DisablePolling:
		return 0
	case g.Spec.PollingInterval != nil && g.Spec.PollingInterval.Duration > 0:
		return g.Spec.PollingInterval.Duration
	}
	return DefaultPollingInterval
}

// NextCommit is the commit Fleet is taking the GitRepo to, as the gitjob controller picks it
// (getNextCommit in rancher/fleet v0.16 internal/cmd/controller/gitops/reconciler): the
// poller's status.pollingCommit when it differs from status.commit, else status.commit. The
// poller writes only pollingCommit; status.commit moves when the gitjob Job for the commit
// is created, so a Job that cannot be created leaves status.commit at the old commit.
func NextCommit(g *fleetv1.GitRepo) string {
	if c := g.Status.PollingCommit; c != "" && c != g.Status.Commit {
		return c
	}
	return g.Status.Commit
}

// StaleBundles are the pipeline's Bundles whose commit label is not the GitRepo's next
// commit: the commit the controller last resolved has not reached them.
func (p *RepoPipeline) StaleBundles() []*fleetv1.Bundle {
	want := NextCommit(p.Repo)
	if want == "" {
		return nil
	}
	var out []*fleetv1.Bundle
	for _, b := range p.Bundles {
		if c := b.Labels[LabelCommit]; c != "" && c != want {
			out = append(out, b)
		}
	}
	return out
}
