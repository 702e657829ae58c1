package removedapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRemovedBetween(t *testing.T) {
	if _, ok := RemovedBetween("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", 31, 32); !ok {
		t.Error("1.31 → 1.32 removes flowcontrol v1beta3")
	}
	if _, ok := RemovedBetween("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", 32, 33); ok {
		t.Error("1.32 → 1.33: already removed before, not by this upgrade")
	}
	if _, ok := RemovedBetween("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", 29, 31); ok {
		t.Error("1.29 → 1.31 still serves v1beta3")
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string][2]int{"v1.32.3+rke2r1": {1, 32}, "v1.31.4-k3s1": {1, 31}, "1.32": {1, 32}, "v1.33": {1, 33}, "v1.30.0-rc.1": {1, 30}} {
		if maj, min, ok := ParseVersion(in); !ok || maj != want[0] || min != want[1] {
			t.Errorf("ParseVersion(%q) = %d, %d, %v", in, maj, min, ok)
		}
	}
	for _, in := range []string{"", "v1", "latest", "v1.x", "stable"} {
		if _, _, ok := ParseVersion(in); ok {
			t.Errorf("ParseVersion(%q) accepted", in)
		}
	}
}

// The lifecycle cross-check is only as complete as the packages it registers: every k8s.io/api
// directory with generated removals must be registered or named as not an object, and the
// version constant must be the one go.mod requires.
func TestTableCoversTheDependency(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s*k8s\.io/api ` + regexp.QuoteMeta(APIModuleVersion) + `\s*$`).Match(gomod) {
		t.Fatalf("APIModuleVersion %s is not the k8s.io/api version go.mod requires", APIModuleVersion)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/api").Output()
	if err != nil {
		t.Skipf("go list k8s.io/api: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "zz_generated.prerelease-lifecycle.go"))
	if len(files) == 0 {
		t.Fatalf("no lifecycle files under %s", dir)
	}
	known := map[string]bool{}
	for d := range prerelease() {
		known[d] = true
	}
	for _, d := range notObjects {
		known[d] = true
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "APILifecycleRemoved()") {
			continue // introduced/deprecated only: nothing removed there yet
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(f))
		if !known[filepath.ToSlash(rel)] {
			t.Errorf("k8s.io/api/%s has prerelease-lifecycle methods but is not registered in prerelease()", rel)
		}
	}
	if n := len(All()); n < 80 {
		t.Errorf("only %d removals", n)
	}
}
