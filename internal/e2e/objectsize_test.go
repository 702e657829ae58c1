package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// Objects near and over etcd's request limit on a real API server: a Bundle over 1.5 MiB is
// refused with the text the size family reads; one within 10 % of it is stored, and the
// scans live and of what collect wrote (resources dropped, sizes kept) both report it as a
// warning naming its largest resource.
func TestBundleSizeLiveAndCollected(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "scenarios", "fleet", "object-too-large-healthy")
	env := testenv.Start(t, testenv.WithContextName("local"))
	if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{Cluster: "local"}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	bundles := dyn.Resource(fleetGVR("bundles")).Namespace("fleet-default")
	_, err = bundles.Create(t.Context(), sizedBundle("platform-logging", 1700000), metav1.CreateOptions{})
	if tl, ok := messages.ParseTooLarge(errText(err)); !ok || tl.Limit != messages.LimitEtcdRequest {
		t.Fatalf("a 1.7 MB Bundle: got %v, want etcd's refusal read as %s", err, messages.LimitEtcdRequest)
	}
	if _, err := bundles.Create(t.Context(), sizedBundle("platform-monitoring", 1440000), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a 1.44 MB Bundle is within etcd's limit: %v", err)
	}

	kc := clientcmdapi.NewConfig()
	addProxiedContext(t, kc, "local", env.Config, t.TempDir())
	kc.CurrentContext = "local"
	path := writeKubeconfig(t, kc)
	liveOut, liveErr, _ := run(t, "scan", "--kubeconfig", path, "--all-contexts", "--now", now, "-o", "json", "-q")
	collected := filepath.Join(t.TempDir(), "collected.tar.gz")
	if _, errOut, code := run(t, "collect", "--kubeconfig", path, "--all-contexts", "-o", collected, "-q"); code != 0 {
		t.Fatalf("collect exit %d: %s", code, errOut)
	}
	colOut, colErr, _ := run(t, "scan", "--from", collected, "--now", now, "-o", "json")
	for name, out := range map[string]string{"live": liveOut + liveErr, "collected": colOut + colErr} {
		if !strings.Contains(out, `"fleet/object-too-large"`) || !strings.Contains(out, "Bundle fleet-default/platform-monitoring weighs") ||
			!strings.Contains(out, "monitoring/grafana/dashboards/k8s-resources-cluster.json") {
			t.Errorf("%s scan: no fleet/object-too-large naming platform-monitoring and its largest resource:\n%s", name, out)
		}
	}
	if strings.Contains(colOut, strings.Repeat("A", 200)) {
		t.Error("the collected scan shows a resource's content")
	}
}

// sizedBundle is a Bundle of n bytes of resources, most of them one Grafana dashboard.
func sizedBundle(name string, n int) *unstructured.Unstructured {
	dashboard := n - 200000
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
		"metadata": map[string]any{"name": name, "namespace": "fleet-default",
			"labels": map[string]any{"fleet.cattle.io/repo-name": "platform", "fleet.cattle.io/commit": "b7c91f0d2e4a6c8e0f1a3b5c7d9e1f2a4b6c8d0e"}},
		"spec": map[string]any{
			"defaultNamespace": "monitoring",
			"resources": []any{
				map[string]any{"name": "monitoring/grafana/dashboards/k8s-resources-cluster.json", "content": strings.Repeat("A", dashboard)},
				map[string]any{"name": "monitoring/crds/crd-prometheuses.yaml", "content": strings.Repeat("B", 200000)},
			},
			"targets": []any{map[string]any{"name": "default", "clusterGroup": "default"}},
		},
	}}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
