package testbed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/unstick-dev/unstick/internal/testbed"
)

// The controllers are real: a Deployment gets its ReplicaSet and pods from
// kube-controller-manager, the scheduler places them (and refuses a node whose taint the pod
// does not tolerate, with its real event), KWOK plays the kubelet and the Deployment becomes
// Available; a Job's pod completes and the Job controller marks it Complete.
func TestBedRunsTheRealControllers(t *testing.T) {
	ctx := t.Context()
	bed := testbed.Start(t, testbed.Options{Nodes: []testbed.Node{
		{Name: "worker-1"},
		{Name: "cp-1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": "true"},
			Taints: []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}},
	}})
	if err := bed.EnsureNamespace(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "docker.io/library/nginx:1.27"}}},
			},
		},
	}
	if _, err := bed.Client.AppsV1().Deployments("demo").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, bed, 90*time.Second, "Deployment demo/web available with 2 replicas", func() bool {
		d, err := bed.Client.AppsV1().Deployments("demo").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 2
	})
	pods, err := bed.Client.CoreV1().Pods("demo").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "worker-1" || p.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s on %q in phase %s, want Running on worker-1 (cp-1 is tainted)", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}

	// A pod pinned to the tainted node stays Pending with the scheduler's own reason.
	pinned := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "demo"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": "cp-1"},
			Containers:   []corev1.Container{{Name: "c", Image: "docker.io/library/busybox:1.36"}},
		},
	}
	if _, err := bed.Client.CoreV1().Pods("demo").Create(ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var msg string
	waitFor(t, bed, 60*time.Second, "the scheduler to refuse pod demo/pinned", func() bool {
		p, err := bed.Client.CoreV1().Pods("demo").Get(ctx, "pinned", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return true
			}
		}
		return false
	})
	if !strings.Contains(msg, "untolerated taint") {
		t.Errorf("unschedulable message %q does not name the untolerated taint", msg)
	}

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "demo"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "docker.io/library/busybox:1.36"}},
		}}},
	}
	if _, err := bed.Client.BatchV1().Jobs("demo").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, bed, 90*time.Second, "Job demo/once Complete", func() bool {
		j, err := bed.Client.BatchV1().Jobs("demo").Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
}

func waitFor(t *testing.T, bed *testbed.Bed, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s\n%s\n%s\n%s", timeout, what,
				bed.Logs("kube-controller-manager"), bed.Logs("kube-scheduler"), bed.Logs("kwok"))
		}
		select {
		case <-context.Background().Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}
