package check_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/finding"
)

// reportedWithID returns every finding of the report with the given ID.
func reportedWithID(t *testing.T, dir, id string) []finding.Finding {
	t.Helper()
	var out []finding.Finding
	for _, f := range scanDir(t, dir, expectedNow(t, dir)).Findings {
		if f.ID == id {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no %s reported", dir, id)
	}
	return out
}

func commandsOf(f finding.Finding) string {
	var b strings.Builder
	for _, s := range f.Remediation {
		for _, c := range s.Commands {
			b.WriteString(c + "\n")
		}
		for _, n := range s.Notes {
			b.WriteString(n + "\n")
		}
	}
	return b.String()
}

// TestUnschedulableFixFitsItsWorkload: the Fleet Cluster's agentResources change only the
// Fleet agent. For the cattle-cluster-agent's surge pod the patch is left out and the step
// says why; for the fleet-agent's own pod it stays.
func TestUnschedulableFixFitsItsWorkload(t *testing.T) {
	for _, f := range reportedWithID(t, scenarioPath("pod/unschedulable-resources-positive"), "pod/unschedulable-resources") {
		text := commandsOf(f)
		if strings.Contains(text, "agentResources\":") {
			t.Errorf("%s: fix of a cattle-cluster-agent pod patches the Fleet agent's resources:\n%s", f.Object, text)
		}
		if !strings.Contains(text, "Deployment cattle-system/cattle-cluster-agent is not the agent") {
			t.Errorf("%s: the step does not say which workload to change:\n%s", f.Object, text)
		}
	}
	for _, f := range reportedWithID(t, scenarioPath("real/agent-pod-unschedulable-resources"), "pod/unschedulable-resources") {
		if text := commandsOf(f); !strings.Contains(text, "agentResources\":") {
			t.Errorf("%s: fix of the fleet-agent's pod lost the agentResources patch:\n%s", f.Object, text)
		}
	}
}

// TestQuotaFixNamesTheQuota: the ResourceQuota's name is in the API server's refusal, so the
// patch command names it instead of keeping <quota>.
func TestQuotaFixNamesTheQuota(t *testing.T) {
	want := map[string]string{"ReplicaSet/cattle-system": "resourcequota default-w8k2m ", "ReplicaSet/cattle-fleet-system": "resourcequota default-q7x2n "}
	for _, f := range reportedWithID(t, scenarioPath("workload/quota-exceeded-positive"), "workload/quota-exceeded") {
		text := commandsOf(f)
		if strings.Contains(text, "<quota>") {
			t.Errorf("%s: <quota> left unfilled:\n%s", f.Object, text)
		}
		if w := want[f.Object.Kind+"/"+f.Object.Namespace]; w != "" && !strings.Contains(text, w) {
			t.Errorf("%s: want %q in:\n%s", f.Object, w, text)
		}
	}
}

// expectedNow is the evaluation time of a scenario's expect.yaml (zero without one: the
// bundle's collection time).
func expectedNow(t *testing.T, dir string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	if os.IsNotExist(err) {
		return time.Time{}
	}
	if err != nil {
		t.Fatal(err)
	}
	var exp expectation
	if err := yaml.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return exp.Now
}
