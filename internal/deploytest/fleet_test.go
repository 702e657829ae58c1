package deploytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	fleet "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/testenv"
)

const fleetDir = "../../deploy/fleet"

// deploy/fleet/fleet.yaml is a valid Fleet bundle (Fleet's own FleetYAML type, strictly: an
// unknown or misspelt key fails), its chart path points at the chart, and what it makes Fleet
// deploy renders and dry-run-applies for a plain cluster and for one with the Prometheus
// Operator label.
func TestFleetBundle(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(fleetDir, "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var fy fleet.FleetYAML
	if err := yaml.UnmarshalStrict(b, &fy); err != nil {
		t.Fatalf("fleet.yaml is not a Fleet bundle: %v", err)
	}
	if fy.Helm == nil || fy.Helm.Chart == "" || fy.DefaultNamespace == "" {
		t.Fatalf("fleet.yaml has no helm chart or defaultNamespace: %+v", fy.BundleSpec)
	}
	// Fleet resolves a local chart path relative to the fleet.yaml's directory.
	if abs, _ := filepath.Abs(filepath.Join(fleetDir, fy.Helm.Chart)); abs != mustAbs(t, chartDir) {
		t.Errorf("helm.chart %s resolves to %s, not the chart %s", fy.Helm.Chart, abs, mustAbs(t, chartDir))
	}
	base := fleetValues(t, fy.Helm)
	env := testenv.Start(t)
	objs := render(t, fy.DefaultNamespace, base)
	if got := kinds(objs); len(got) != chartObjects {
		t.Errorf("plain cluster: %v", got)
	}
	dryRunApply(t, env, fy.DefaultNamespace, objs)
	for _, tc := range fy.TargetCustomizations {
		vals := merge(base, fleetValues(t, tc.Helm))
		objs := render(t, fy.DefaultNamespace, vals)
		t.Logf("target %s: %v", tc.Name, kinds(objs))
		if tc.Name == "prometheus-operator" && (find(objs, "ServiceMonitor") == nil || find(objs, "PrometheusRule") == nil) {
			t.Errorf("target %s gets no ServiceMonitor and PrometheusRule", tc.Name)
		}
		if tc.Name == "prometheus-operator" && findNamed(objs, "ClusterRoleBinding", "unstick-metrics-reader") == nil {
			t.Errorf("target %s: its Prometheus is not bound to read serve's metrics", tc.Name)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// fleetValues are a bundle's helm values as Fleet hands them to Helm, with Fleet's ${ }
// templating done for a cluster named prod-eu-1 (Fleet's preprocessor is not a Go package
// unstick can import).
func fleetValues(t *testing.T, h *fleet.HelmOptions) map[string]any {
	if h == nil || h.Values == nil {
		return map[string]any{}
	}
	b, err := yaml.Marshal(h.Values.Data)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for strings.Contains(s, "${") {
		i := strings.Index(s, "${")
		j := strings.Index(s[i:], "}")
		s = s[:i] + "prod-eu-1" + s[i+j+1:]
	}
	var out map[string]any
	if err := yaml.Unmarshal([]byte(s), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if am, ok := out[k].(map[string]any); ok {
			if bm, ok := v.(map[string]any); ok {
				out[k] = merge(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
