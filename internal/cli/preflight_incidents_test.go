package cli

import (
	"regexp"
	"strings"
	"testing"
)

// preflight blocks on incidents, each with one fix: on the example, 8 incidents, not the 18
// findings behind them; the agent that lacks a CRD is one blocker whose symptoms (its crash
// loop, stalled rollout, stale heartbeat) are listed on one line, not blockers each with a
// restart of their own.
func TestPreflightListsIncidentsWithOneFixEach(t *testing.T) {
	out, errOut, code := run(t, "preflight", "--from", example, "--offline-registry")
	if code != ExitFindings {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "NO-GO — 8 blocking") {
		t.Errorf("want 8 blocking incidents:\n%s", out)
	}
	_, blocking, _ := strings.Cut(out, "\nBLOCKING\n")
	blocking, _, _ = strings.Cut(blocking, "\nWARNINGS\n")
	head := regexp.MustCompile(`^  [A-Z]+ +(gate|stuck) `)
	blockers, fixes := 0, 0
	for _, l := range strings.Split(blocking, "\n") {
		switch {
		case head.MatchString(l):
			blockers++
		case strings.HasPrefix(l, "           fix ("):
			fixes++
		}
		if head.MatchString(l) && (strings.Contains(l, " pod/crashloop ") || strings.Contains(l, " fleet/agent-heartbeat-stale ")) {
			t.Errorf("a symptom of the missing CRD blocks on its own: %s", l)
		}
	}
	if blockers != 8 || fixes != 8 {
		t.Errorf("%d blockers with %d fixes, want 8 with one each:\n%s", blockers, fixes, blocking)
	}
	if !strings.Contains(blocking, "symptoms: pod/crashloop [prod-us-1], workload/rollout-stalled [prod-us-1]") {
		t.Errorf("the missing CRD's symptoms are not listed under it:\n%s", blocking)
	}
}

// An incident whose root cause has only an observe rung still gets its step as its fix.
func TestPreflightGivesEveryIncidentItsStep(t *testing.T) {
	out, _, _ := run(t, "preflight", "--from", "../../testdata/scenarios/rancher/upgrade-stuck-positive", "--offline-registry")
	_, after, ok := strings.Cut(out, "rancher/upgrade-stuck [local → prod-eu-2]")
	if !ok || !strings.Contains(after, "fix (observe, risk none)") || !strings.Contains(after, "$ kubectl --context local -n fleet-default get clusters.provisioning.cattle.io prod-eu-2") {
		t.Errorf("rancher/upgrade-stuck has no fix line with its filled-in commands:\n%s", out)
	}
}
