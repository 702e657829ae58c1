package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

func TestFixUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fix", "--from", example, "--apply"}, "can only be printed"},
		{[]string{"fix", "--from", example, "--yes"}, "--yes answers --apply's prompts"},
		{[]string{"fix", "--from", example, "--backup-dir", "x"}, "without --apply nothing is written"},
		{[]string{"fix", "--from", example, "--max-risk", "extreme"}, "--max-risk"},
		{[]string{"fix", "--from", example, "--max-risk", "none"}, "--max-risk"},
		{[]string{"fix", "--from", example, "--image", "rancher/kubectl:v1.30.3"}, "want STAGE=IMAGE"},
		{[]string{"fix", "--from", example, "--image", "drain=rancher/kubectl:v1.30.3"}, "drain uses the controller's kubectl image"},
		{[]string{"fix", "--from", example, "--only", "helm/release-pendng"}, "did you mean helm/release-pending"},
		{[]string{"fix", "--from", example, "-o", "yaml"}, "unknown output format"},
		{[]string{"restore", filepath.Join(example, "no-such-dir")}, "no-such-dir does not exist"},
		{[]string{"restore", filepath.Join(example, "README.md")}, "is a file, not a backup directory"},
	} {
		_, errOut, code := run(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, errOut, tc.want)
		}
	}
}

// fix on the example fleet prints the ladder of each incident and changes nothing (it is an
// offline bundle); the JSON form is the same plan.
func TestFixPlansTheExampleFleet(t *testing.T) {
	out, errOut, code := run(t, "fix", "--from", example, "--now", "2026-11-28T09:30:00Z", "--offline-registry")
	if code != ExitFindings { // a printed plan leaves its incidents open
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Fix plan: 4 incidents, 10 steps; max risk low. Nothing is changed without --apply.",
		"Incident 1: helm/release-pending on prod-eu-1",
		`kubectl --context local -n fleet-default patch clusters.fleet.cattle.io c-m-4x7kq2zt --type merge -p '{"spec":{"redeployAgentGeneration":3}}'`,
		"helm --kube-context prod-eu-1 -n cattle-fleet-system rollback fleet-agent-c-m-4x7kq2zt 3",
		"above --max-risk low: not run",
		"kubectl --context prod-us-1 -n cattle-fleet-system rollout restart deployment/fleet-agent",
		"No automatic fix (4):",
		"pod/unschedulable-taints on edge-arm-1",
		// prod-ap-1's upgrade gate: the bundle's file is changed in Git, by hand.
		"api/removed-in-target on local — Bundle/fleet-default/platform-apf",
		// Rancher's own upgrades: guided fixes only.
		"rancher/drain-blocked on local — Machine/fleet-default/prod-eu-2-worker-6mq2r",
		"rancher/imported-upgrade-stuck on local — Cluster/c-9qzbw",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the plan does not say %q:\n%s", want, out)
		}
	}
	jout, _, code := run(t, "fix", "--from", example, "--now", "2026-11-28T09:30:00Z", "--offline-registry", "-o", "json", "--max-risk", "medium")
	if code != ExitFindings {
		t.Fatalf("-o json exit %d", code)
	}
	var p struct {
		SchemaVersion string `json:"schemaVersion"`
		MaxRisk       string `json:"maxRisk"`
		Incidents     []struct {
			Attempts []struct {
				AboveMaxRisk bool `json:"aboveMaxRisk"`
				Steps        []struct {
					ID, Action, Rung, Risk string
					Commands               []string
				} `json:"steps"`
			} `json:"attempts"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(jout), &p); err != nil {
		t.Fatal(err)
	}
	if p.SchemaVersion != "1" || p.MaxRisk != "medium" || len(p.Incidents) != 4 {
		t.Errorf("JSON plan: schema %q, maxRisk %q, %d incidents", p.SchemaVersion, p.MaxRisk, len(p.Incidents))
	}
	// Above --max-risk medium is only prod-ap-1's stored-versions trim (high).
	var above []string
	for _, inc := range p.Incidents {
		for _, a := range inc.Attempts {
			if a.AboveMaxRisk {
				for _, s := range a.Steps {
					above = append(above, s.Rung+"/"+s.Risk)
				}
			}
		}
	}
	if len(above) != 1 || above[0] != "realign/high" {
		t.Errorf("steps above --max-risk medium: %v; want only the CRD trim (realign/high)", above)
	}
	// Release payloads never appear in a plan: only the Secrets' names.
	b, err := os.ReadFile(filepath.Join(example, "clusters", "prod-eu-1", "cattle-fleet-system", "secrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, line := range strings.Split(string(b), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "release: ") && len(l) > 80 {
			checked++
			if strings.Contains(out+jout, l[len("release: "):][:60]) {
				t.Errorf("a release payload was printed")
			}
		}
	}
	if checked == 0 {
		t.Errorf("no release payload found to look for")
	}
}

// The summary of a run counts each incident once, by its outcome, and says why each one that
// is unverified or failed is not fixed.
func TestFixSummaryCountsOutcomes(t *testing.T) {
	bd := finding.ObjectRef{APIVersion: "fleet.cattle.io/v1alpha1", Kind: "BundleDeployment", Namespace: "cluster-fleet-default-c-m-8k2lq-d39d68e554a5", Name: "platform-ingress-nginx"}
	res := &execute.Result{Fixed: 1, Unverified: 1, Failed: 1, Open: 1, Incidents: []execute.IncidentOutcome{
		{ID: "a", Outcome: execute.IncidentFixed, RootCause: remediate.Reason{FindingID: "helm/release-pending", Cluster: "prod-eu-1"}},
		{ID: "b", Outcome: execute.IncidentUnverified, RootCause: remediate.Reason{FindingID: "fleet/bundle-err-applied", Cluster: "local", Object: bd},
			Message: "step 2 (resync Bundle/fleet-default/platform-ingress-nginx): written, but not verified within 5m0s: BundleDeployment … is ErrApplied"},
		{ID: "c", Outcome: execute.IncidentFailed, RootCause: remediate.Reason{FindingID: "suc/job-deadline", Cluster: "edge"}, Message: "step 4 (repair Job/system-upgrade/apply-k3s): refused"},
		{ID: "d", Outcome: execute.IncidentOpen, RootCause: remediate.Reason{FindingID: "fleet/agent-upgrade-stuck", Cluster: "local"}, Message: "declined"},
	}}
	var out strings.Builder
	writeFixSummary(&out, res, 2, "./fix", "unstick")
	for _, want := range []string{
		"Done: 1 incident fixed, 1 unverified, 1 failed, 3 open (2 of them with guided steps only, listed above).",
		"  unverified: fleet/bundle-err-applied on local BundleDeployment/cluster-fleet-default-c-m-8k2lq-d39d68e554a5/platform-ingress-nginx — step 2 (resync",
		"  failed: suc/job-deadline on edge",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary does not say %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "helm/release-pending") || strings.Contains(out.String(), "fleet/agent-upgrade-stuck") {
		t.Errorf("the summary lists a fixed or open incident as not fixed:\n%s", out.String())
	}
}
