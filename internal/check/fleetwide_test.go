package check_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/report"
)

// A fleet-wide incident reads as one cause: its summary quotes the error every cluster
// shares, once; the clusters are listed once; there is no signature line of stripped names;
// its next step is what fixes the shared cause on a cluster, filled in, not a bare redeploy
// with placeholders; and the table gives it well under 30 lines.
func TestFleetwideNamesTheSharedCause(t *testing.T) {
	cases := []struct {
		scenario, shared, token, member, rung, command string
	}{
		{"fleet/fleetwide-agent-pending-positive", "another operation (install/upgrade/rollback) is in progress", "(install/upgrade/rollback)",
			"helm/release-pending", "resync", "patch clusters.fleet.cattle.io c-m-qz7r4 --type merge -p '{\"spec\":{\"redeployAgentGeneration\":2}}'"},
		{"fleet/real-rke2psp-fleetwide-positive", `no matches for kind "PodSecurityPolicy" in version "policy/v1beta1"`, `"edge-baseline-restricted"`,
			"api/removed", "repair", "mapkubeapis edge-baseline"},
	}
	for _, tc := range cases {
		t.Run(tc.scenario, func(t *testing.T) {
			rep := scanDir(t, scenarioPath(tc.scenario), scenarioNow)
			if len(rep.Incidents) != 1 || rep.Incidents[0].RootCause.ID != "fleet/fleetwide-failure" {
				t.Fatalf("want one fleet/fleetwide-failure incident:\n%s", describe(rep))
			}
			inc := rep.Incidents[0]
			if !strings.Contains(inc.RootCause.Summary, tc.shared) || !strings.Contains(inc.RootCause.Summary, "("+tc.member+")") {
				t.Errorf("summary does not name the shared cause %q (%s): %s", tc.shared, tc.member, inc.RootCause.Summary)
			}
			for _, e := range inc.RootCause.Evidence {
				if e.Source == "signature" || strings.Contains(e.Text, tc.shared) {
					t.Errorf("evidence repeats the signature or the shared error: %s [%s]", e.Text, e.Source)
				}
			}
			st := inc.NextStep
			if st == nil || st.Rung != tc.rung || !strings.Contains(strings.Join(st.Commands, "\n"), tc.command) {
				t.Errorf("next step: got %+v, want the %s rung of %s with %q", st, tc.rung, tc.member, tc.command)
			}
			var b bytes.Buffer
			if err := report.Render(&b, rep, "table", report.Options{}); err != nil {
				t.Fatal(err)
			}
			table := b.String()
			// The summary is wrapped in the table: count one word of the shared error.
			if n := strings.Count(table, tc.token); n != 1 {
				t.Errorf("the table quotes the shared error %d times, want once:\n%s", n, table)
			}
			start := strings.Index(table, " 1. ")
			end := strings.Index(table, "\nCLUSTERS")
			if start < 0 || end < start {
				t.Fatalf("no incident in the table:\n%s", table)
			}
			if lines := strings.Count(table[start:end], "\n"); lines >= 30 {
				t.Errorf("the incident takes %d table lines, want under 30:\n%s", lines, table[start:end])
			}
		})
	}
}
