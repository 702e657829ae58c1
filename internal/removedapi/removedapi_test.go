package removedapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestLookupFromGeneratedMethods(t *testing.T) {
	cases := []struct {
		apiVersion, kind, in, repl, source string
		review                             bool
	}{
		{"flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", "1.32", "flowcontrol.apiserver.k8s.io/v1", "k8s.io/api", false},
		{"policy/v1beta1", "PodDisruptionBudget", "1.25", "policy/v1", "k8s.io/api", false},
		{"batch/v1beta1", "CronJob", "1.25", "batch/v1", "k8s.io/api", false},
		{"extensions/v1beta1", "Ingress", "1.22", "networking.k8s.io/v1", "k8s.io/api", true},
		{"extensions/v1beta1", "Deployment", "1.16", "apps/v1", "k8s.io/api", true},
		{"storage.k8s.io/v1beta1", "CSIStorageCapacity", "1.27", "storage.k8s.io/v1", "k8s.io/api", false},
		{"policy/v1beta1", "PodSecurityPolicy", "1.25", "", "deprecation guide", true},
		{"autoscaling/v2beta2", "HorizontalPodAutoscaler", "1.26", "autoscaling/v2", "deprecation guide", false},
		{"apiextensions.k8s.io/v1beta1", "CustomResourceDefinition", "1.22", "apiextensions.k8s.io/v1", "deprecation guide", true},
	}
	for _, c := range cases {
		r, ok := Lookup(c.apiVersion, c.kind)
		if !ok {
			t.Errorf("Lookup(%s, %s): not found", c.apiVersion, c.kind)
			continue
		}
		if r.RemovedIn != c.in || r.ReplacementAPIVersion() != c.repl || !strings.HasPrefix(r.Source, c.source) || (r.Review != "") != c.review {
			t.Errorf("Lookup(%s, %s) = %+v, want removed in %s → %q from %s (review %v)", c.apiVersion, c.kind, r, c.in, c.repl, c.source, c.review)
		}
	}
	for _, gv := range [][2]string{{"apps/v1", "Deployment"}, {"policy/v1", "PodDisruptionBudget"}, {"v1", "Pod"}, {"fleet.cattle.io/v1alpha1", "Bundle"}, {"not a version//", "X"}} {
		if r, ok := Lookup(gv[0], gv[1]); ok {
			t.Errorf("Lookup(%s, %s) = %+v, want not removed", gv[0], gv[1], r)
		}
	}
}

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

// The table is only as complete as the packages registered: every k8s.io/api directory with
// generated lifecycle methods must be registered or named as not an object, and the version
// constant must be the one go.mod requires.
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
	for _, d := range append(append([]string{}, schemeDirs...), notObjects...) {
		known[d] = true
	}
	if len(schemeDirs) != len(schemeBuilders) {
		t.Errorf("%d directories named for %d scheme builders", len(schemeDirs), len(schemeBuilders))
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
			t.Errorf("k8s.io/api/%s has prerelease-lifecycle methods but is not registered in schemeBuilders", rel)
		}
	}
	if n := len(All()); n < 80 {
		t.Errorf("only %d removals", n)
	}
}
