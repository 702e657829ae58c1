package check

import (
	"strings"
	"testing"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

func sizeCtx(t *testing.T, clusters ...*snapshot.Cluster) *Context {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &Context{Now: repoNow, Thresholds: NewThresholds(cat), Catalog: cat, Snap: &snapshot.Snapshot{Clusters: clusters}}
}

func monitoringBundle() *fleetv1.Bundle {
	return &fleetv1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "platform-kube-prometheus-stack", Namespace: "fleet-default",
		Labels: map[string]string{"fleet.cattle.io/repo-name": "platform"}}}
}

// A Bundle is reported as it nears etcd's 1.5 MiB request limit, and the report names its
// largest resources; one comfortably below is not.
func TestHeavyBundles(t *testing.T) {
	for _, c := range []struct {
		name     string
		bytes    int
		severity finding.Severity // 0: not reported
		text     string
	}{
		{"1.2 MiB, 20 % below the limit", 1258291, 0, ""},
		{"1.45 MiB, within 10 %", 1520435, finding.Warning, "within 10 % of etcd's request limit of 1.50 MiB"},
		{"1.8 MiB, over", 1887437, finding.Error, "over etcd's request limit of 1.50 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &snapshot.Cluster{Name: "local", Role: snapshot.Management, Bundles: []*fleetv1.Bundle{monitoringBundle()},
				BundleSizes: map[string]snapshot.ObjectSize{"fleet-default/platform-kube-prometheus-stack": {Bytes: c.bytes, StatusBytes: 4096,
					Resources: []snapshot.ResourceSize{{Name: "monitoring/charts/grafana/dashboards/k8s-resources-cluster.json", Bytes: c.bytes / 3}, {Name: "monitoring/crds/crd-prometheuses.yaml", Bytes: c.bytes / 4}}}}}
			fs, _ := fleetObjectSize.Run(sizeCtx(t, m))
			if c.severity == 0 {
				if len(fs) > 0 {
					t.Fatalf("reported: %s", fs[0].Summary)
				}
				return
			}
			if len(fs) != 1 || fs[0].Severity != c.severity || !strings.Contains(fs[0].Summary, c.text) ||
				!strings.Contains(fs[0].Summary, "monitoring/charts/grafana/dashboards/k8s-resources-cluster.json") {
				t.Fatalf("got %+v, want one %v finding saying %q and naming the largest resource", fs, c.severity, c.text)
			}
			if fs[0].Vars["gitrepo"] != "platform" || fs[0].Vars["bundle"] != "platform-kube-prometheus-stack" {
				t.Errorf("ladder values %v", fs[0].Vars)
			}
		})
	}
}

// A Content read with its payload (a fleet dump) is weighed like a Bundle.
func TestHeavyContents(t *testing.T) {
	m := &snapshot.Cluster{Name: "local", Role: snapshot.Management, Contents: []string{"s-1a2b", "s-3c4d"},
		ContentBytes: map[string]int{"s-1a2b": 1600000, "s-3c4d": 200000}}
	fs, _ := fleetObjectSize.Run(sizeCtx(t, m))
	if len(fs) != 1 || fs[0].Object.Name != "s-1a2b" || fs[0].Severity != finding.Error {
		t.Fatalf("got %+v, want Content s-1a2b reported as an error", fs)
	}
}

// The fleet-controller cannot store a Bundle's status for many clusters: its reconciler
// error names the Bundle (rancher/fleet#3482, Fleet 0.11.5 with ~72 clusters).
func TestControllerCannotStoreBundleStatus(t *testing.T) {
	line := `{"level":"error","ts":"2025-03-27T10:43:27Z","msg":"Reconciler error","controller":"bundle","controllerGroup":"fleet.cattle.io","controllerKind":"Bundle","Bundle":{"name":"platform-kube-prometheus-stack","namespace":"fleet-default"},"namespace":"fleet-default","name":"platform-kube-prometheus-stack","reconcileID":"9eacefc5-fb1d-45cb-b5fe-2fc7de6bdb00","error":"etcdserver: request is too large"}`
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fleet-controller-7d9f8c6b5-x2x9q", Namespace: "cattle-fleet-system", Labels: map[string]string{"app": "fleet-controller"}}}
	for _, c := range []struct {
		name   string
		bundle string
		want   bool
	}{
		{"the Bundle named", "platform-kube-prometheus-stack", true},
		{"another Bundle", "platform-cert-manager", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := monitoringBundle()
			b.Name = c.bundle
			m := &snapshot.Cluster{Name: "local", Role: snapshot.Management, Bundles: []*fleetv1.Bundle{b}, Pods: []*corev1.Pod{pod},
				Logs: map[string]*snapshot.Log{"l": {Namespace: pod.Namespace, Pod: pod.Name, Container: "fleet-controller", Current: []string{line}}}}
			fs, _ := fleetObjectSize.Run(sizeCtx(t, m))
			if got := len(fs) == 1 && fs[0].Object.Name == c.bundle && strings.Contains(fs[0].Summary, "cannot be stored"); got != c.want {
				t.Errorf("got %+v, want reported=%t", fs, c.want)
			}
		})
	}
}

// A release whose newest record nears 1 MiB is reported before its next upgrade fails; one
// well below is not.
func TestHeavyRelease(t *testing.T) {
	for _, c := range []struct {
		name  string
		bytes int
		want  bool
	}{
		{"600 KiB", 614400, false},
		{"980 KiB", 1003520, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &helmrelease.Release{Name: "rancher-monitoring", Namespace: "cattle-monitoring-system", Revision: 7, Status: helmrelease.StatusDeployed,
				SecretName: "sh.helm.release.v1.rancher-monitoring.v7", StoredBytes: c.bytes}
			d := &snapshot.Cluster{Name: "prod-eu-1", Role: snapshot.Downstream, HelmReleases: []*helmrelease.Release{r}}
			fs, _ := helmReleaseSize.Run(sizeCtx(t, d))
			if got := len(fs) == 1 && fs[0].Severity == finding.Warning && strings.Contains(fs[0].Summary, "within 10 %"); got != c.want {
				t.Errorf("got %+v, want reported=%t", fs, c.want)
			}
		})
	}
}
