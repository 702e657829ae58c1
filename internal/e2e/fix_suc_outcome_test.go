package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

// The Job of suc/job-deadline-positive that Kubernetes failed with DeadlineExceeded, its Plan
// and node.
const (
	sucNS      = "system-upgrade"
	sucPlan    = "k3s-agent"
	sucNodeJob = "apply-k3s-agent-on-prod-eu-1-worker-1-with-2b3debe123e030-b876a"
	sucWorker  = "prod-eu-1-worker-1"
	sucHash    = "2b3debe123e030754f12315f8beac47d449191eab6aedc7d3ac5f72f"
)

var jobsGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// standInSUC stands in for the system-upgrade-controller and the Job controller on the test
// server (no controller runs there; the real SUC is exercised by TestRealSUC, but a Job that
// fails again after fix deleted it cannot be produced on demand with it). When the node's Job
// is gone it creates it again from the Plan, as SUC v0.20.1 does (same name: the name hashes
// the Plan's latestHash), and reports the Job's end: failed as before (the scenario's
// DeadlineExceeded status), or, once heal is set, Complete — then, as SUC's handle_batch.go
// does, the node gets the plan label with latestHash, and the upgraded kubelet reports the
// Plan's version (what KWOK does not play in TestRealSUC either).
type standInSUC struct {
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	tmpl    *unstructured.Unstructured
	failed  map[string]any
	heal    atomic.Bool
	created atomic.Int32
}

func startStandInSUC(t *testing.T, cfg *rest.Config) *standInSUC {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	job, err := dyn.Resource(jobsGVR).Namespace(sucNS).Get(t.Context(), sucNodeJob, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := &standInSUC{dyn: dyn, kube: kube, tmpl: jobTemplate(job)}
	s.failed, _, _ = unstructured.NestedMap(job.Object, "status")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := s.reconcile(ctx); err != nil && ctx.Err() == nil {
				t.Logf("stand-in SUC: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return s
}

// jobTemplate is the Job as SUC creates it: without what the API server and the Job
// controller add (uid, the selector and pod labels generated from the uid, status).
func jobTemplate(job *unstructured.Unstructured) *unstructured.Unstructured {
	c := job.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "spec", "selector")
	labels, _, _ := unstructured.NestedStringMap(c.Object, "spec", "template", "metadata", "labels")
	for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
		delete(labels, l)
	}
	_ = unstructured.SetNestedStringMap(c.Object, labels, "spec", "template", "metadata", "labels")
	return c
}

// reconcile creates the node's Job again when it is gone, and ends it.
func (s *standInSUC) reconcile(ctx context.Context) error {
	jobs := s.dyn.Resource(jobsGVR).Namespace(sucNS)
	_, err := jobs.Get(ctx, sucNodeJob, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	job, err := jobs.Create(ctx, s.tmpl.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.created.Add(1)
	time.Sleep(500 * time.Millisecond) // the Job runs for a while
	if !s.heal.Load() {
		_ = unstructured.SetNestedMap(job.Object, s.failed, "status")
		_, err = jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(typ string) any {
		return map[string]any{"type": typ, "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": now, "lastTransitionTime": now}
	}
	_ = unstructured.SetNestedMap(job.Object, map[string]any{
		"startTime": now, "completionTime": now, "succeeded": int64(1), "ready": int64(0), "terminating": int64(0),
		"conditions": []any{cond("SuccessCriteriaMet"), cond("Complete")},
	}, "status")
	if _, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
		return err
	}
	return s.upgradeNode(ctx)
}

// upgradeNode labels the node done with the Plan and has its kubelet report the new version.
func (s *standInSUC) upgradeNode(ctx context.Context) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := s.kube.CoreV1().Nodes().Get(ctx, sucWorker, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Labels["plan.upgrade.cattle.io/"+sucPlan] = sucHash
		if n, err = s.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
		n.Status.NodeInfo.KubeletVersion = "v1.30.3+k3s1"
		_, err = s.kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// Deleting a SUC Job only lets the controller run the upgrade again: fix must wait for the
// Plan done on the node. The stand-in creates the Job again and it fails as before: fix says
// unverified, with the Job's failure, and exits 3. Once the Job completes and the node is
// labelled with the Plan's latestHash, the same fix says fixed and exits 0.
func TestFixWaitsForThePlanOnTheNode(t *testing.T) {
	t.Parallel()
	f := replay(t, scenario("suc/job-deadline-positive"))
	cfg := f.envs["prod-eu-1"].Config
	suc := startStandInSUC(t, cfg)
	fix := func(dir string) (string, int) {
		t.Helper()
		args := f.args("--max-risk", "medium", "--apply", "--yes", "--backup-dir", dir, "--verify-timeout", "6s")
		out, errOut, code := runCtx(context.Background(), t, "", append([]string{"fix"}, args...)...)
		t.Logf("fix --apply:\n%s%s", out, errOut)
		return out, code
	}

	t.Run("the Job fails again", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "backup")
		out, code := fix(dir)
		if code != 3 {
			t.Errorf("exit %d, want 3: the Plan is not done on %s", code, sucWorker)
		}
		if suc.created.Load() == 0 {
			t.Fatal("the stand-in never created the Job again: the test proves nothing")
		}
		for _, want := range []string{
			"0 incidents fixed, 1 unverified",
			"Plan " + sucNS + "/" + sucPlan + " on prod-eu-1 is not done: node " + sucWorker,
			"Job " + sucNodeJob + " failed: DeadlineExceeded: Job was active longer than specified deadline",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the output does not say %q", want)
			}
		}
		checkOutcome(t, dir, execute.IncidentUnverified)
	})

	t.Run("the Job completes", func(t *testing.T) {
		suc.heal.Store(true)
		dir := filepath.Join(t.TempDir(), "backup")
		out, code := fix(dir)
		if code != 0 {
			t.Errorf("exit %d, want 0: the Plan is done on %s", code, sucWorker)
		}
		if !strings.Contains(out, "Done: 1 incident fixed, 0 unverified, 0 failed, 0 open.") {
			t.Errorf("the output does not count the incident fixed")
		}
		checkOutcome(t, dir, execute.IncidentFixed)
	})
}
