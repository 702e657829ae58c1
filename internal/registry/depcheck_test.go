package registry

import (
	"os/exec"
	"strings"
	"testing"
)

// TestJudgesDoNotTalkToRegistries holds the layering of STYLE.md: the packages that judge
// (checks, the SUC and image views, the inventory) must not import the registry client or
// client-go; registry facts reach them as data, gathered by this package before they run
// (the pattern of go-containerregistry's cmd/crane/depcheck_test.go).
func TestJudgesDoNotTalkToRegistries(t *testing.T) {
	judges := []string{
		"github.com/unstick-dev/unstick/internal/check",
		"github.com/unstick-dev/unstick/internal/suc",
		"github.com/unstick-dev/unstick/internal/imageref",
		"github.com/unstick-dev/unstick/internal/inventory",
	}
	forbidden := []string{"github.com/google/go-containerregistry", "k8s.io/client-go", "github.com/unstick-dev/unstick/internal/registry"}
	for _, pkg := range judges {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
