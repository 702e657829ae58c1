package remediate_test

import (
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the packages that talk to clusters or registries. Judging (internal/check)
// and planning (internal/remediate) must not reach them, directly or through anything they
// import: that is what keeps both pure, testable offline and runnable on a bundle (STYLE.md;
// go-containerregistry's cmd/crane/depcheck_test.go).
var forbidden = []string{
	"k8s.io/client-go/",
	"github.com/google/go-containerregistry/",
	"github.com/unstick-dev/unstick/internal/registry",
	"github.com/unstick-dev/unstick/internal/source",
	"github.com/unstick-dev/unstick/internal/remediate/execute",
	"helm.sh/helm/v3/pkg/storage",
	"helm.sh/helm/v3/pkg/action",
	"helm.sh/helm/v3/pkg/kube",
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

func offending(list []string) []string {
	var bad []string
	for _, d := range list {
		for _, f := range forbidden {
			if d == strings.TrimSuffix(f, "/") || strings.HasPrefix(d, f) {
				bad = append(bad, d)
				break
			}
		}
	}
	return bad
}

func TestPlanningAndJudgingImportNoClient(t *testing.T) {
	for _, pkg := range []string{"github.com/unstick-dev/unstick/internal/remediate", "github.com/unstick-dev/unstick/internal/check", "github.com/unstick-dev/unstick/internal/trace"} {
		if bad := offending(deps(t, pkg)); len(bad) > 0 {
			t.Errorf("%s depends on %v; it must stay pure (no cluster or registry client)", pkg, bad)
		}
	}
	// The check above can fail: the executor, which must talk to clusters, is caught by it.
	if bad := offending(deps(t, "github.com/unstick-dev/unstick/internal/remediate/execute")); len(bad) == 0 {
		t.Errorf("the dependency check finds nothing in the executor, which imports client-go: the check is broken")
	}
}
