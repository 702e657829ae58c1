package check

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

func backOffEvent(pod string, first, last time.Time, count int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: pod + ".1", Namespace: "kube-system"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "kube-system", Name: pod},
		Reason:         "BackOff", Type: "Warning", Count: count,
		Message:        "Back-off restarting failed container metrics-server in pod " + pod + "_kube-system(0)",
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last),
	}
}

// TestFailureRun holds the run of a container's failures to its workload's earlier pods: only
// those of the same Deployment (not one whose name merely starts the same), and only while the
// failures follow each other within an hour.
func TestFailureRun(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 11, 28, h, m, 0, 0, time.UTC) }
	cur := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server-5985cbc9d7-k8v4n", Namespace: "kube-system",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "metrics-server-5985cbc9d7", Controller: ptrTo(true)}}}}
	for _, c := range []struct {
		name      string
		events    []*corev1.Event
		wantStart time.Time
		wantPods  int
	}{
		{"alone", []*corev1.Event{backOffEvent(cur.Name, at(9, 26), at(9, 29), 3)}, at(9, 26), 1},
		{"two earlier pods, back to back", []*corev1.Event{
			backOffEvent("metrics-server-5985cbc9d7-b7m2c", at(7, 2), at(8, 25), 214),
			backOffEvent("metrics-server-5985cbc9d7-h2x7q", at(8, 29), at(9, 25), 241),
			backOffEvent(cur.Name, at(9, 26), at(9, 29), 3)}, at(7, 2), 3},
		{"an earlier loop that ended more than an hour before", []*corev1.Event{
			backOffEvent("metrics-server-5985cbc9d7-h2x7q", at(6, 10), at(7, 40), 187),
			backOffEvent(cur.Name, at(9, 26), at(9, 29), 3)}, at(9, 26), 1},
		{"another Deployment with a longer name", []*corev1.Event{
			backOffEvent("metrics-server-proxy-6b8f7d9c5e-x2v7q", at(7, 0), at(9, 25), 300),
			backOffEvent(cur.Name, at(9, 26), at(9, 29), 3)}, at(9, 26), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := &snapshot.Cluster{Name: "c1", Events: c.events}
			run := failureRunOf(cl, cur, crashBackOff("metrics-server"), "BackOff")
			if !run.start.Equal(c.wantStart) || run.pods != c.wantPods {
				t.Errorf("run starts %v over %d pods, want %v over %d", run.start, run.pods, c.wantStart, c.wantPods)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
