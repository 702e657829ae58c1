package testbed_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// Every program of the test bed builds from the Go module proxy at its pinned version and says
// so itself. This test runs first in its package: in `go test ./...` the package runs beside
// internal/e2e, so the first-time builds (minutes on a fresh machine) overlap e2e's other
// tests instead of holding up its test-bed tests, which wait on the same file locks.
func TestBuildEveryComponent(t *testing.T) {
	start := time.Now()
	bins, err := testenv.BuildAll(t.Context(), testenv.Components()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built or found every component in %s", time.Since(start).Round(time.Second))
	want := map[string]string{
		"kube-controller-manager":   "Kubernetes " + testenv.KubernetesVersion,
		"kube-scheduler":            "Kubernetes " + testenv.KubernetesVersion,
		"kwok":                      "kwok version " + testenv.KWOKVersion,
		"system-upgrade-controller": "system-upgrade-controller version " + testenv.SUCVersion,
		"fleetcontroller":           "fleet-controller version " + testenv.FleetVersion,
		"fleetagent":                "fleet-agent version " + testenv.FleetVersion,
	}
	for name, prefix := range want {
		path, ok := bins[name]
		if !ok {
			t.Errorf("no %s built", name)
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
		cancel()
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(out)), prefix) {
			t.Errorf("%s --version: %q (%v), want it to start with %q", name, out, err, prefix)
		}
	}
}
