package execute

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestBinaryLinksNoChartUtilities keeps Helm's storage package, its chart utilities and their
// JSON Schema compiler out of the binary: their package initialisation ran in every process of
// unstick (every verb, `version` included) for the sake of a helm fix, which needs only the
// Secrets driver (releaseStore).
func TestBinaryLinksNoChartUtilities(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/unstick-dev/unstick/cmd/unstick").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	for _, bad := range []string{"helm.sh/helm/v3/pkg/storage", "helm.sh/helm/v3/pkg/chartutil", "github.com/santhosh-tekuri/jsonschema/v6"} {
		if slices.Contains(deps, bad) {
			t.Errorf("the unstick binary links %s", bad)
		}
	}
	if !slices.Contains(deps, "helm.sh/helm/v3/pkg/storage/driver") {
		t.Error("the binary does not link Helm's Secrets driver: is this list still the unstick binary's?")
	}
}

func TestReleaseKeyIsHelmsSecretName(t *testing.T) {
	if got := releaseKey("fleet-agent-local", 12); got != "sh.helm.release.v1.fleet-agent-local.v12" {
		t.Errorf("releaseKey = %q", got)
	}
}
