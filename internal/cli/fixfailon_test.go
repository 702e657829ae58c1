package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fix --fail-on: the exit is 3 only while an incident whose most severe finding is at or above
// it remains, whether fix plans a step for it (suc/image-floating: a realign) or only guides
// the operator (workload/rollout-stalled); both scenarios hold warnings only. The default
// (info) keeps every remaining incident an exit 3.
func TestFixFailOn(t *testing.T) {
	for _, scenario := range []string{"suc/image-floating-positive", "workload/rollout-stalled-positive"} {
		dir := "../../testdata/scenarios/" + scenario
		for _, tc := range []struct {
			failOn []string
			want   int
		}{
			{nil, ExitFindings},
			{[]string{"--fail-on", "warning"}, ExitFindings},
			{[]string{"--fail-on", "error"}, ExitOK},
			{[]string{"--fail-on", "none"}, ExitOK},
		} {
			args := append([]string{"fix", "--from", dir, "--offline-registry"}, tc.failOn...)
			out, errOut, code := run(t, args...)
			if code != tc.want {
				t.Errorf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, tc.want, out, errOut)
			}
		}
	}
}

// preflight --only and --only-cluster narrow the blockers as scan's narrow its report, and an
// --only-cluster that names no cluster is a usage error, not a GO.
func TestPreflightFilters(t *testing.T) {
	out, errOut, code := run(t, "preflight", "--from", example, "--now", "2026-11-28T09:30:00Z", "--offline-registry",
		"--only-cluster", "edge-arm-1", "-o", "json")
	if code != ExitFindings {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var res struct {
		Blocking []struct {
			RootCause struct{ ID string } `json:"rootCause"`
			Clusters  []string            `json:"clusters"`
		} `json:"blocking"`
		Report struct {
			Hidden struct{ Filtered int } `json:"hidden"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Blocking) == 0 || res.Report.Hidden.Filtered == 0 {
		t.Errorf("want edge-arm-1's blockers and the rest hidden: %s", out)
	}
	for _, b := range res.Blocking {
		if !slices.Contains(b.Clusters, "edge-arm-1") {
			t.Errorf("blocking incident %s affects %v, not edge-arm-1", b.RootCause.ID, b.Clusters)
		}
	}
	out, _, _ = run(t, "preflight", "--from", example, "--now", "2026-11-28T09:30:00Z", "--offline-registry", "--only", "helm/")
	if !strings.Contains(out, "helm/release-pending") || strings.Contains(out, "agent/crd-missing") {
		t.Errorf("--only helm/ must keep the Helm blocker alone:\n%s", out)
	}
	_, errOut, code = run(t, "preflight", "--from", example, "--only-cluster", "prod-eu-9")
	if code != ExitUsage || !strings.Contains(errOut, `--only-cluster "prod-eu-9": no such cluster`) {
		t.Errorf("exit %d, stderr %q; want a usage error naming prod-eu-9", code, errOut)
	}
}
