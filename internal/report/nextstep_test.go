package report

import (
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
)

// The table's "next safe step" skips a rung whose every command was left out as not
// applicable (the restart of a Deployment the cluster does not have) for the next rung that
// still has one; with none left it shows the first rung that changes something, and its notes
// say why.
func TestNextStepSkipsARungWithNoCommandLeft(t *testing.T) {
	restart := finding.Step{Rung: "restart", Notes: []string{"The restart command is left out: cluster edge has no Deployment cattle-fleet-system/fleet-agent."}}
	resync := finding.Step{Rung: "resync", Commands: []string{"kubectl --context rancher -n fleet-default patch clusters.fleet.cattle.io c-m-1 --type merge -p '{\"spec\":{\"redeployAgentGeneration\":2}}'"}}
	observe := finding.Step{Rung: "observe", Commands: []string{"kubectl get clusters.fleet.cattle.io -A"}}
	if s, _ := finding.NextStep(finding.Finding{Remediation: []finding.Step{observe, restart, resync}}); s.Rung != "resync" {
		t.Errorf("next step %q, want resync (the restart has no command left)", s.Rung)
	}
	if s, _ := finding.NextStep(finding.Finding{Remediation: []finding.Step{observe, restart}}); s.Rung != "restart" {
		t.Errorf("next step %q, want restart with its note", s.Rung)
	}
	if s, _ := finding.NextStep(finding.Finding{Remediation: []finding.Step{observe}}); s.Rung != "observe" {
		t.Errorf("next step %q, want observe", s.Rung)
	}
}

// The table's first line says which kubeconfig file the commands name when a live read was
// given one, so a reader knows the commands below are for that file.
func TestContextLineNamesTheKubeconfig(t *testing.T) {
	cs := []Cluster{{Name: "local", Context: "local", ContextSource: "kubeconfig", Kubeconfig: "/home/ops/fleet.yaml"},
		{Name: "prod-eu-1", Context: "prod-eu-1", ContextSource: "kubeconfig", Kubeconfig: "/home/ops/fleet.yaml"}}
	if got := contextLine(cs); !strings.Contains(got, "--kubeconfig /home/ops/fleet.yaml and --context") {
		t.Errorf("context line %q does not name the kubeconfig file", got)
	}
	cs[1].Kubeconfig = ""
	if got := contextLine(cs); strings.Contains(got, "--kubeconfig") {
		t.Errorf("context line %q names a file not every cluster's commands carry", got)
	}
}
