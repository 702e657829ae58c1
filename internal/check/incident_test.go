package check_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

var scenarioNow = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func scenarioPath(name string) string {
	return filepath.Join("..", "..", "testdata", "scenarios", name)
}

func ids(fs []finding.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// An agent replaced in the middle of upgrading itself leaves its Helm release pending-upgrade
// downstream, and the management cluster shows the agent's BundleDeployment ErrApplied with
// Helm's "another operation ... is in progress". Both clusters' findings are one stuck
// upgrade: one incident, the release its root cause, the Fleet findings its symptoms.
func TestPendingAgentReleaseIsOneIncidentAcrossClusters(t *testing.T) {
	rep := scanDir(t, scenarioPath("fleet/agent-pending-upgrade-incident"), scenarioNow)
	if len(rep.Incidents) != 1 {
		t.Fatalf("want 1 incident, got %d:\n%s", len(rep.Incidents), describe(rep))
	}
	inc := rep.Incidents[0]
	if inc.RootCause.ID != "helm/release-pending" || inc.RootCause.Cluster != "prod-eu-1" {
		t.Errorf("root cause = %s on %s, want helm/release-pending on prod-eu-1", inc.RootCause.ID, inc.RootCause.Cluster)
	}
	got := ids(inc.Symptoms)
	for _, want := range []string{"fleet/bundle-err-applied", "fleet/agent-upgrade-stuck"} {
		if !slices.Contains(got, want) {
			t.Errorf("symptoms %v lack %s", got, want)
		}
	}
	for _, s := range inc.Symptoms {
		if s.ID != "helm/release-pending" && s.Cluster != "local" {
			t.Errorf("symptom %s reported on %s, want the management cluster local", s.ID, s.Cluster)
		}
	}
}

// The same pending agent release on four clusters is one fleet-wide incident holding every
// cluster's findings; on two clusters it stays two incidents.
func TestFleetwideGroupsSameSignature(t *testing.T) {
	rep := scanDir(t, scenarioPath("fleet/fleetwide-agent-pending-positive"), scenarioNow)
	if len(rep.Incidents) != 1 || rep.Incidents[0].RootCause.ID != "fleet/fleetwide-failure" {
		t.Fatalf("want one fleet/fleetwide-failure incident:\n%s", describe(rep))
	}
	pending := 0
	for _, s := range rep.Incidents[0].Symptoms {
		if s.ID == "helm/release-pending" {
			pending++
		}
	}
	if pending != 4 {
		t.Errorf("fleet-wide incident holds %d helm/release-pending symptoms, want 4:\n%s", pending, describe(rep))
	}

	rep = scanDir(t, scenarioPath("fleet/fleetwide-agent-pending-healthy"), scenarioNow)
	var roots []string
	for _, inc := range rep.Incidents {
		roots = append(roots, inc.RootCause.ID+"@"+inc.RootCause.Cluster)
	}
	slices.Sort(roots)
	want := []string{"helm/release-pending@edge-01", "helm/release-pending@edge-02"}
	if !slices.Equal(roots, want) {
		t.Errorf("incidents %v, want %v", roots, want)
	}
}

// A bundle without clusters/ that mixes the management objects with the downstream agent's
// Helm release still gives one incident: the release is tied to its agent by name.
func TestFlatBundleGroupsAgentReleaseWithItsBundle(t *testing.T) {
	rep := scanDir(t, filepath.Join("..", "..", "testdata", "scenarios", "fleet", "agent-pending-upgrade-flat"), time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC))
	for _, inc := range rep.Incidents {
		if inc.RootCause.ID != "helm/release-pending" {
			continue
		}
		var ids []string
		for _, s := range inc.Symptoms {
			ids = append(ids, s.ID)
		}
		if !slices.Contains(ids, "fleet/bundle-err-applied") || !slices.Contains(ids, "fleet/agent-upgrade-stuck") {
			t.Errorf("pending release not grouped with the agent's findings; symptoms %v\n%s", ids, describe(rep))
		}
		return
	}
	t.Fatalf("no helm/release-pending incident:\n%s", describe(rep))
}
