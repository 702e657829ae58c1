package check_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
)

// TestSymptomsAreLinkedByEvidence holds grouping to causal links, on every scenario and the
// example fleet: each symptom names the evidence that linked it (an object, a message, a node
// or a shared failure signature), never a key that only names a whole cluster or namespace,
// and no error-or-worse finding is the symptom of a warning-or-lower root cause.
func TestSymptomsAreLinkedByEvidence(t *testing.T) {
	dirs := append(scenarioDirs(t), filepath.Join("..", "..", "examples", "fleet-upgrade-stuck"))
	for _, dir := range dirs {
		rep := scanDir(t, dir, expectedNow(t, dir))
		for _, inc := range rep.Incidents {
			for _, s := range inc.Symptoms {
				if why := badLink(inc.RootCause, s); why != "" {
					t.Errorf("%s: %s is a symptom of %s (%s): %s", dir, s.ID, inc.RootCause.ID, s.LinkedBy, why)
				}
			}
		}
	}
}

func badLink(root, s finding.Finding) string {
	switch {
	case s.LinkedBy == "":
		return "no evidence names the link"
	case s.Severity >= finding.Error && root.Severity < finding.Error:
		return "an error is never the symptom of a warning"
	}
	kind, rest, _ := strings.Cut(s.LinkedBy, ":")
	switch kind {
	case "ns", "clock", "headroom", "cluster":
		return "the key names a whole namespace or cluster, not a cause"
	}
	if !strings.Contains(rest, "/") && kind != "etcd" && kind != "signature" {
		return "the key names only a cluster"
	}
	return ""
}
