package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A config file with a mistake is a usage error (exit 2) that names the file, the line and
// the key.
func TestConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name, config string
		want         []string
	}{
		{"unknown top-level key", "thresholds:\n  helm.pendingAfter: 5m\nsuppres:\n  - id: pod/crashloop\n", []string{":3:", `unknown key "suppres"`, `did you mean "suppress"`}},
		{"unknown key in a suppression", "suppress:\n  - id: pod/crashloop\n    reasn: known\n    expires: 2999-01-01\n", []string{":3:", "suppress[0].reasn", `unknown key "reasn"`}},
		{"unknown threshold", "thresholds:\n  helm.pendingAftr: 5m\n", []string{":2:", "thresholds.helm.pendingAftr", "unknown threshold"}},
		{"bad threshold value", "thresholds:\n  helm.pendingAfter: soon\n", []string{":2:", "thresholds.helm.pendingAfter", "soon"}},
		{"unknown severity", "severity:\n  suc/image-floating: meh\n", []string{":2:", "severity.suc/image-floating", "meh"}},
		{"unknown ID in severity", "severity:\n  suc/image-flaoting: info\n", []string{":2:", "severity.suc/image-flaoting", "suc/image-floating"}},
		{"unknown ID in a suppression", "suppress:\n  - id: helm/release-pendng\n    reason: x\n    expires: 2999-01-01\n", []string{":2:", "suppress[0].id", "helm/release-pending"}},
		{"suppression without reason", "suppress:\n  - id: helm/\n    expires: 2999-01-01\n", []string{":2:", "suppress[0].reason", "missing"}},
		{"suppression without expiry", "suppress:\n  - id: helm/\n    reason: noisy\n", []string{":2:", "suppress[0].expires", "missing"}},
		{"bad expiry", "suppress:\n  - id: helm/\n    reason: noisy\n    expires: next week\n", []string{":4:", "suppress[0].expires", "next week"}},
		{"registry: bad insecure host", "registry:\n  insecure: [\"http://registry.local\"]\n", []string{":2:", "registry.insecure[0]", "no scheme"}},
		{"registry: unknown key", "registry:\n  ofline: true\n", []string{":2:", "registry.ofline", `did you mean "offline"`}},
		{"not YAML", "thresholds: [\n", []string{"config.yaml"}},
		{"duplicate key", "thresholds:\n  helm.pendingAfter: 5m\n  helm.pendingAfter: 6m\n", []string{":3:", "duplicate"}},
		{"wrong shape", "suppress: pod/crashloop\n", []string{":1:", "suppress", "list"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.config)
			_, errOut, code := run(t, "scan", "--from", example, "--config", cfg)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", code, ExitUsage, errOut)
			}
			for _, w := range append(c.want, cfg) {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
		})
	}
	// --config naming a file that does not exist.
	_, errOut, code := run(t, "scan", "--from", example, "--config", "testdata/no-such-config.yaml")
	if code != ExitUsage || !strings.Contains(errOut, "no-such-config.yaml") {
		t.Errorf("missing --config file: exit %d, stderr %q", code, errOut)
	}
}

// The default file is read when it exists, and ignored when it does not.
func TestConfigDefaultPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	if _, errOut, code := run(t, "scan", "--from", example, "-o", "json"); code != ExitFindings || errOut != "" {
		t.Fatalf("without a config file: exit %d, stderr %q", code, errOut)
	}
	if err := os.MkdirAll(filepath.Join(dir, "unstick"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "unstick", "config.yaml"), []byte("bogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "scan", "--from", example)
	if code != ExitUsage || !strings.Contains(errOut, filepath.Join(dir, "unstick", "config.yaml")) || !strings.Contains(errOut, `"bogus"`) {
		t.Errorf("a bad default config file: exit %d, stderr %q", code, errOut)
	}
}

// Suppressions hide what they name until they expire; an expired one is named in a warning
// and no longer hides anything. Severity overrides and thresholds apply; --threshold wins.
func TestConfigSuppressSeverityThresholds(t *testing.T) {
	base := decodeJSON(t, mustRun(t, "scan", "--from", example, "-o", "json"))
	count := func(r jsonReport, id string) int {
		n := 0
		for _, f := range r.Findings {
			if f.ID == id {
				n++
			}
		}
		return n
	}
	if count(base, "helm/release-pending") != 1 || count(base, "pod/unschedulable-taints") != 1 {
		t.Fatalf("the example changed: %+v", base.Findings)
	}

	cfg := writeConfig(t, `# the team's settings
suppress:
  - id: pod/unschedulable-taints
    reason: edge nodes are tainted on purpose; OPS-1234
    expires: 2999-12-31
    clusters: [edge-arm-1]
  - id: helm/release-pending
    reason: was being fixed
    expires: 2020-01-31
  - id: fleet/
    reason: only about prod-us-1
    expires: 2999-12-31T00:00:00Z
    clusters: [prod-us-1]
severity:
  workload/rollout-stalled: info
`)
	out, errOut, code := run(t, "scan", "--from", example, "-o", "json", "--config", cfg, "-v")
	if code != ExitFindings {
		t.Fatalf("exit %d (stderr %s)", code, errOut)
	}
	r := decodeJSON(t, out)
	if n := count(r, "pod/unschedulable-taints"); n != 0 {
		t.Errorf("the suppressed pod/unschedulable-taints is still reported %d times", n)
	}
	if n := count(r, "helm/release-pending"); n != 1 {
		t.Errorf("an expired suppression still hides helm/release-pending (%d reported)", n)
	}
	for _, w := range []string{"warning: " + cfg + ":7:", "helm/release-pending expired on 2020-01-31", "was being fixed"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr %q does not say %q", errOut, w)
		}
	}
	if !strings.Contains(errOut, "suppressed 1 finding of pod/unschedulable-taints") {
		t.Errorf("-v does not count what was suppressed: %q", errOut)
	}
	for _, f := range r.Findings {
		if strings.HasPrefix(f.ID, "fleet/") && f.Affects == "prod-us-1" {
			t.Errorf("fleet/ findings about prod-us-1 are suppressed, yet %s is reported", f.ID)
		}
		if f.ID == "workload/rollout-stalled" && f.Severity != "info" {
			t.Errorf("workload/rollout-stalled has severity %s, the config says info", f.Severity)
		}
	}
	// The edge-arm-1 incident lost its root cause: its next finding leads it now.
	for _, inc := range r.Incidents {
		if inc.RootCause.ID == "pod/unschedulable-taints" {
			t.Errorf("a suppressed finding still leads an incident")
		}
	}
	edge := false
	for _, inc := range r.Incidents {
		if inc.RootCause.Cluster == "edge-arm-1" || inc.RootCause.Affects == "edge-arm-1" {
			edge = true
		}
	}
	if !edge {
		t.Errorf("the edge-arm-1 incident disappeared with its suppressed root cause; its other findings should lead it")
	}
	// Thresholds from the config apply; --threshold wins over them.
	cfg = writeConfig(t, "thresholds:\n  helm.pendingAfter: 200h\n")
	r = decodeJSON(t, mustRunCode(t, ExitFindings, "scan", "--from", example, "-o", "json", "--config", cfg))
	if count(r, "helm/release-pending") != 0 {
		t.Errorf("helm.pendingAfter: 200h from the config did not apply")
	}
	r = decodeJSON(t, mustRunCode(t, ExitFindings, "scan", "--from", example, "-o", "json", "--config", cfg, "--threshold", "helm.pendingAfter=15m"))
	if count(r, "helm/release-pending") != 1 {
		t.Errorf("--threshold did not win over the config file")
	}
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	return mustRunCode(t, ExitFindings, args...)
}

func mustRunCode(t *testing.T, want int, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, args...)
	if code != want {
		t.Fatalf("%v: exit %d, want %d (stderr %s)", args, code, want, errOut)
	}
	return out
}
