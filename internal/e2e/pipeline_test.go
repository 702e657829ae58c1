package e2e

import (
	"path/filepath"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// The Fleet pipeline read live from a real API server: the GitRepo (typed, with its commit,
// polling and conditions), its gitjob Job and the events about both — also for a GitRepo in
// a namespace outside Fleet's own, whose Jobs run there — and the scan of it live gives what
// the scan of the bundle gives: the quota that refuses the gitjob's pod as the root cause,
// the GitRepo that does not sync as its symptom.
func TestLivePipelineIsRead(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "scenarios", "fleet", "gitrepo-not-syncing-quota-positive")
	env := testenv.Start(t, testenv.WithContextName("local"))
	if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{Cluster: "local"}); err != nil {
		t.Fatal(err)
	}
	gitRepoElsewhere(t, env)

	snap, err := (&source.Live{Targets: []source.Target{{Name: "local", Server: env.Config.Host, Config: env.Config}}}).Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := snap.Cluster("local")
	if m == nil || len(m.GitRepos) != 2 {
		t.Fatalf("want the two GitRepos read live, got %+v (errors %+v)", m, snap.Errors)
	}
	jobs := map[string]int{}
	for _, p := range fleet.Pipelines(m) {
		jobs[p.Repo.Namespace+"/"+p.Repo.Name] = len(p.Jobs)
		if p.Repo.Name == "platform" {
			if p.Repo.Status.Commit != "b7c91f0d2e4a6c8e0f1a3b5c7d9e1f2a4b6c8d0e" || p.Repo.Status.LastPollingTime.IsZero() || len(p.Bundles) != 2 || len(p.Events) < 3 {
				t.Errorf("platform's pipeline read without its commit, polling time, Bundles or events: commit %q, %d bundles, %d events",
					p.Repo.Status.Commit, len(p.Bundles), len(p.Events))
			}
		}
	}
	if jobs["fleet-default/platform"] != 1 || jobs["team-apps/apps"] != 1 {
		t.Errorf("gitjob Jobs by GitRepo: %v, want one each (team-apps is not a Fleet namespace: read because a GitRepo lives there)", jobs)
	}

	kc := clientcmdapi.NewConfig()
	addProxiedContext(t, kc, "local", env.Config, t.TempDir())
	kc.CurrentContext = "local"
	path := writeKubeconfig(t, kc)
	at := "2026-11-28T09:30:00Z"
	offOut, offErr, _ := run(t, "scan", "--from", dir, "--now", at, "-o", "json")
	liveOut, liveErr, _ := run(t, "scan", "--kubeconfig", path, "--all-contexts", "--now", at, "-o", "json", "-q")
	off, live := parse(t, offOut, offErr), parse(t, liveOut, liveErr)
	if len(off.Findings) == 0 {
		t.Fatal("the scenario has no findings offline")
	}
	if d := diff(off.keys(), live.keys()); d != "" {
		t.Errorf("live findings differ from offline (- offline only, + live only):\n%s", d)
	}
	if d := diff(off.roots(), live.roots()); d != "" {
		t.Errorf("live incidents differ from offline:\n%s", d)
	}
}

func fleetGVR(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: resource}
}

// gitRepoElsewhere creates a GitRepo in team-apps and the gitjob Job it owns, as the gitjob
// controller names and labels it.
func gitRepoElsewhere(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-apps"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "GitRepo",
		"metadata": map[string]any{"name": "apps", "namespace": "team-apps"},
		"spec":     map[string]any{"repo": "https://git.example.com/team/apps.git", "branch": "main"},
	}}
	res := fleetGVR("gitrepos")
	created, err := dyn.Resource(res).Namespace("team-apps").Create(ctx, g, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "apps-3f9c1", Namespace: "team-apps",
			Labels:          map[string]string{"fleet.cattle.io/force-sync-generation": "0", "fleet.cattle.io/gitrepo-generation": "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "fleet.cattle.io/v1alpha1", Kind: "GitRepo", Name: "apps", UID: created.GetUID()}}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "fleet", Image: "rancher/fleet:v0.16.0"}}}}},
	}
	if _, err := kube.BatchV1().Jobs("team-apps").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
