package check_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
)

// helmWaitLinksPods: a Helm wait that timed out is a symptom of the pods of the workload it
// waited for. fleet/helm-wait-timeout-positive quotes Helm 4.2's message (the Deployment
// named with its namespace); the same bundle quoting Helm 4.0's form (no namespace) links the
// same way, the Deployment found by its name on the bundle's cluster; so does a message naming
// a StatefulSet before the Deployment.
func helmWaitLinksPods(t *testing.T, root string) {
	t.Helper()
	src := filepath.Join(root, "fleet", "helm-wait-timeout-positive")
	helm40 := copyScenario(t, src, strings.NewReplacer(
		"resource Deployment/shop/web not ready. status: InProgress, message: Updated: 1/3",
		"resource not ready, name: web, kind: Deployment, status: InProgress"))
	several := copyScenario(t, src, strings.NewReplacer(
		"resource Deployment/shop/web not ready.",
		"resource StatefulSet/shop/db not ready. status: InProgress, message: Ready: 0/1\nresource Deployment/shop/web not ready."))
	want := map[string][]string{
		src:     {"fleet/bundle-err-applied", "helm/release-failed"},
		helm40:  {"fleet/bundle-err-applied"},
		several: {"fleet/bundle-err-applied", "helm/release-failed"},
	}
	for dir, symptoms := range want {
		incs, _, _ := check.Evaluate(scenarioContext(t, dir), check.Filter{})
		for _, id := range symptoms {
			s, ok := symptomOf(incs, "pod/unschedulable-resources", id)
			if !ok {
				t.Errorf("%s: want %s as a symptom of the pod/unschedulable-resources incident", dir, id)
				continue
			}
			if s.LinkedBy != check.WorkloadKey("shop-eu-1", "shop", "web") {
				t.Errorf("%s: %s is linked by %q, want the Deployment the wait timed out on", dir, id, s.LinkedBy)
			}
		}
	}
}

func symptomOf(incs []finding.Incident, root, id string) (finding.Finding, bool) {
	for _, inc := range incs {
		if inc.RootCause.ID != root {
			continue
		}
		for _, s := range inc.Symptoms {
			if s.ID == id {
				return s, true
			}
		}
	}
	return finding.Finding{}, false
}

// copyScenario copies a scenario directory to a temporary one, rewriting its files' text.
func copyScenario(t *testing.T, src string, r *strings.Replacer) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), []byte(r.Replace(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
