package promtool

import (
	"os/exec"
	"testing"
)

const rulesDir = "../../deploy/prometheus"

// The shipped alert rules are valid and fire at their thresholds, not before: promtool's own
// checker and unit tests (deploy/prometheus/unstick-rules.test.yaml).
func TestAlertRules(t *testing.T) {
	bin, err := Binary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--version"},
		{"check", "rules", "unstick-rules.yaml"},
		{"test", "rules", "unstick-rules.test.yaml"},
	} {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = rulesDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
			continue
		}
		t.Logf("promtool %v:\n%s", args, out)
	}
}
