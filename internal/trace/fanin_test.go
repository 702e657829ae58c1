package trace

import (
	"fmt"
	"strings"
	"testing"
)

// TestFanInSummarisesManyClusters: two clusters of 2,000 still on the old deploymentID make
// the BundleDeployment stage stop, and the summary counts the rest instead of listing them.
func TestFanInSummarisesManyClusters(t *testing.T) {
	var rows []ClusterRow
	for i := range 2000 {
		st := Stage{Name: StageDeployment, Status: Reached, Detail: "Ready at deploymentID s-1"}
		if i == 17 || i == 1203 {
			st = Stage{Name: StageDeployment, Status: Waiting, Detail: "WaitApplied: appliedDeploymentID s-0 ≠ deploymentID s-1"}
		}
		rows = append(rows, ClusterRow{Cluster: fmt.Sprintf("edge-%04d", i), Stages: []Stage{st}})
	}
	tr := &Trace{Clusters: rows}
	markStopped(tr)
	st := fanIn(StageDeployment, rows)
	want := "1,998 of 2,000 at the new deploymentID, 2 stopped: edge-0017 (WaitApplied"
	if st.Status != Waiting || !strings.HasPrefix(st.Detail, want) || !strings.Contains(st.Detail, "edge-1203") || st.At != nil {
		t.Errorf("fan-in: %s %q (at %v), want waiting, %q…", st.Status, st.Detail, st.At, want)
	}
	listed, hidden := listedRows(rows)
	if len(listed) != 2 || hidden != 1998 {
		t.Errorf("the table lists %d rows and hides %d; want the 2 stopped listed, 1998 counted", len(listed), hidden)
	}
}

// TestFanInFailureWins: one cluster whose apply failed makes the stage failed, whatever the
// others wait for.
func TestFanInFailureWins(t *testing.T) {
	rows := []ClusterRow{
		{Cluster: "a", Stages: []Stage{{Name: StageRelease, Status: Waiting, Detail: "revision 4 pending-upgrade"}}},
		{Cluster: "b", Stages: []Stage{{Name: StageRelease, Status: Failed, Detail: "revision 7 failed: timed out waiting for the condition"}}},
		{Cluster: "c", Stages: []Stage{{Name: StageRelease, Status: NotRead}}},
	}
	st := fanIn(StageRelease, rows)
	if st.Status != Failed || !strings.Contains(st.Detail, "2 stopped") || !strings.Contains(st.Detail, "1 not read") {
		t.Errorf("fan-in: %s %q; want failed, 2 stopped, 1 not read", st.Status, st.Detail)
	}
}

// TestParseTarget reads the forms kubectl users type.
func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"gitrepo/fleet-default/platform": {Kind: KindGitRepo, Namespace: "fleet-default", Name: "platform"},
		"gitrepos/platform":              {Kind: KindGitRepo, Name: "platform"},
		"bundle/fleet-default/apps-web":  {Kind: KindBundle, Namespace: "fleet-default", Name: "apps-web"},
		"bundles.fleet.cattle.io/x":      {Kind: KindBundle, Name: "x"},
		"platform":                       {Name: "platform"},
	} {
		got, err := ParseTarget(in, "")
		if err != nil || got != want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if got, err := ParseTarget("", "B7C91F0"); err != nil || got.Commit != "b7c91f0" {
		t.Errorf("--commit B7C91F0: %+v, %v", got, err)
	}
	for _, bad := range []string{"deployment/x", "gitrepo/a/b/c", "gitrepo/"} {
		if _, err := ParseTarget(bad, ""); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}
