package deploytest

import (
	"flag"
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/unstick-dev/unstick/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite deploy/serve/unstick-serve.yaml from the chart")

const plainFile = "../../deploy/serve/unstick-serve.yaml"

const plainHeader = `# unstick serve as plain manifests, for clusters without Helm:
#   kubectl apply -f deploy/serve/unstick-serve.yaml
# Rendered from deploy/chart/unstick with its default values into namespace cattle-system
# (go test ./internal/deploytest -run PlainManifest -update); edit the chart, not this file.
# Set --cluster-name in the Deployment to this cluster's name. serve answers only tokens
# allowed by ClusterRole unstick-metrics-reader (/metrics) or unstick-reader (everything):
# bind the ServiceAccount of the Prometheus that scrapes it, and admit that Prometheus's
# namespace in the NetworkPolicy if it is neither monitoring nor cattle-monitoring-system.
`

// The plain-manifest install is the chart's rendering, and a real API server accepts it.
func TestPlainManifest(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, nil, chartutil.ReleaseOptions{Name: "unstick", Namespace: "cattle-system", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, n := range []string{"serviceaccount.yaml", "rbac.yaml", "auth.yaml", "deployment.yaml", "service.yaml", "networkpolicy.yaml"} {
		docs = append(docs, strings.TrimSpace(files["unstick/templates/"+n]))
	}
	want := plainHeader + "---\n" + strings.Join(docs, "\n---\n") + "\n"
	if *update {
		if err := os.MkdirAll("../../deploy/serve", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(plainFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(plainFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is not the chart's rendering: run go test ./internal/deploytest -run PlainManifest -update", plainFile)
	}
	env := testenv.Start(t)
	if applied := dryRunApply(t, env, "cattle-system", render(t, "cattle-system", nil)); len(applied) != chartObjects {
		t.Errorf("applied %v", applied)
	}
}
