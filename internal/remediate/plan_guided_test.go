package remediate_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/remediate"
)

const example = "../../examples/fleet-upgrade-stuck"

// Where unstick takes no step, the plan does not send the operator to explain's placeholders:
// an agent kept off a tainted node gets the Fleet Cluster patch with the node's toleration,
// filled in as scan prints it, and the clusters the incident affects.
func TestManualEntryCarriesScansFilledStep(t *testing.T) {
	p := plan(t, example, remediate.Options{})
	var m *remediate.Manual
	for i := range p.Manual {
		if p.Manual[i].Finding.FindingID == "pod/unschedulable-taints" {
			m = &p.Manual[i]
		}
	}
	if m == nil {
		t.Fatalf("no manual entry for pod/unschedulable-taints: %+v", p.Manual)
	}
	if m.NextStep == nil || len(m.NextStep.Commands) == 0 {
		t.Fatalf("the manual entry has no filled-in step: %+v", m)
	}
	cmd := m.NextStep.Commands[0]
	if !strings.Contains(cmd, "agentTolerations") || strings.Contains(cmd, "<") {
		t.Errorf("the step's command is not the filled-in toleration patch: %s", cmd)
	}
	if len(m.Clusters) == 0 {
		t.Error("the manual entry names no cluster it affects")
	}
	var b bytes.Buffer
	if err := remediate.WriteTable(&b, p, remediate.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "$ "+cmd) {
		t.Errorf("the table does not print the step's command:\n%s", b.String())
	}
	if strings.Contains(b.String(), "follow `unstick explain pod/unschedulable-taints`") {
		t.Errorf("the table sends the operator to explain although the step is filled in:\n%s", b.String())
	}
}

// A planned incident keeps what scan says about its next step: the restart of an agent that
// lacks a CRD is enough only when the CRDs serve again, and the plan says so with the restart.
func TestPlannedIncidentKeepsScansCaveat(t *testing.T) {
	p := plan(t, example, remediate.Options{})
	var caveat string
	for _, ip := range p.Incidents {
		if ip.RootCause.FindingID == "agent/crd-missing" && ip.NextStep != nil {
			caveat = ip.NextStep.Action
		}
	}
	if caveat == "" {
		t.Fatalf("no planned agent/crd-missing incident with its next step: %+v", p.Incidents)
	}
	var b bytes.Buffer
	if err := remediate.WriteTable(&b, p, remediate.TableOptions{}); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	restart := strings.Index(out, "rollout restart")
	advice := strings.Index(out, "advice: "+strings.Join(strings.Fields(caveat), " "))
	if restart < 0 || advice < restart {
		t.Errorf("the restart step does not carry scan's caveat %q:\n%s", caveat, b.String())
	}
}
