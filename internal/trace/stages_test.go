package trace

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

func replicas(n int32) *int32 { return &n }

// TestReleaseStage: the newest revision decides — a failed upgrade over a deployed revision
// is a failure with Helm's description, a pending one waits, a deployed one is reached; both
// at info.last_deployed.
func TestReleaseStage(t *testing.T) {
	at := time.Date(2026, 11, 28, 7, 41, 0, 0, time.UTC)
	rel := func(rev int, status, desc string) *helmrelease.Release {
		return &helmrelease.Release{Name: "cert-manager", Namespace: "cert-manager", Revision: rev, Status: status, Description: desc,
			Chart: "cert-manager", ChartVersion: "v1.16.2", LastDeployed: at, SecretName: fmt.Sprintf("sh.helm.release.v1.cert-manager.v%d", rev)}
	}
	cases := []struct {
		newest *helmrelease.Release
		status string
		detail string
	}{
		{rel(5, helmrelease.StatusFailed, "Upgrade \"cert-manager\" failed: post-upgrade hooks failed: job cert-manager-startupapicheck failed: BackoffLimitExceeded"), Failed, "BackoffLimitExceeded"},
		{rel(5, helmrelease.StatusPendingUpgrade, "Preparing upgrade"), Waiting, "revision 5 pending-upgrade"},
		{rel(5, helmrelease.StatusDeployed, "Upgrade complete"), Reached, "revision 5 deployed (cert-manager v1.16.2)"},
	}
	for _, c := range cases {
		cl := &snapshot.Cluster{Name: "prod-eu-1", HelmReleases: []*helmrelease.Release{rel(4, helmrelease.StatusDeployed, "Upgrade complete"), c.newest}}
		st := releaseStage(cl, "cert-manager")
		if st.Status != c.status || !strings.Contains(st.Detail, c.detail) {
			t.Errorf("%s: %s %q; want %s, %q", c.newest.Status, st.Status, st.Detail, c.status, c.detail)
		}
		if (c.status == Waiting) != (st.At == nil) {
			t.Errorf("%s: at %v; a stage waits without a time, and is reached or fails at info.last_deployed", c.newest.Status, st.At)
		}
	}
	if st := releaseStage(nil, "cert-manager"); st.Status != NotRead {
		t.Errorf("a cluster not read: %s", st.Status)
	}
}

// TestRolloutStage: every workload of the release must have rolled out; a StatefulSet still
// on its old revision holds the stage.
func TestRolloutStage(t *testing.T) {
	ann := map[string]string{annotationRelease: "monitoring"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "grafana", Namespace: "monitoring", Annotations: ann, Generation: 3},
		Spec:   appsv1.DeploymentSpec{Replicas: replicas(2)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: "monitoring", Annotations: ann, Generation: 5},
		Spec: appsv1.StatefulSetSpec{Replicas: replicas(2)},
		Status: appsv1.StatefulSetStatus{ObservedGeneration: 5, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 2,
			CurrentRevision: "prometheus-7d9c", UpdateRevision: "prometheus-5f6b"}}
	cl := &snapshot.Cluster{Name: "prod-eu-1", Deployments: []*appsv1.Deployment{d}, StatefulSets: []*appsv1.StatefulSet{ss}}
	st := rolloutStage(cl, "monitoring")
	if st.Status != Waiting || !strings.Contains(st.Detail, "StatefulSet/monitoring/prometheus: 1/2 updated") || strings.Contains(st.Detail, "grafana") {
		t.Errorf("rollout: %s %q; want waiting on the StatefulSet only", st.Status, st.Detail)
	}
	ss.Status.UpdatedReplicas, ss.Status.CurrentRevision = 2, "prometheus-5f6b"
	if st := rolloutStage(cl, "monitoring"); st.Status != Reached || st.Detail != "2 workloads rolled out" {
		t.Errorf("rolled out: %s %q", st.Status, st.Detail)
	}
	if st := rolloutStage(cl, "other"); st.Status != None {
		t.Errorf("a release with no workload: %s", st.Status)
	}
}
