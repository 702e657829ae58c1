package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The -v line that says registries were not asked gives the reason that holds for the run:
// the flag when it was given, the configuration file when it says so, and for an offline
// scan without --registry that a bundle is judged without registries; preflight's footer
// gives the same reason. Both used to blame --offline-registry whatever the reason.
func TestVerboseSaysWhyRegistriesAreOff(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("registry:\n  offline: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := "--now=2026-11-28T09:30:00Z"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-v", "scan", "--from", example, now}, "registry checks are off (an offline bundle is judged without asking registries unless --registry is given)"},
		{[]string{"-v", "scan", "--from", example, now, "--offline-registry"}, "registry checks are off (--offline-registry was given)"},
		{[]string{"-v", "--config", cfg, "preflight", "--from", example, now}, "registry checks are off (registry.offline is true in " + cfg + ")"},
	} {
		out, errOut, _ := run(t, tc.args...)
		if strings.Contains(strings.Join(tc.args, " "), "preflight") && !strings.Contains(out, "Images not checked (registry.offline is true in "+cfg+")") {
			t.Errorf("%s: the footer does not name the configuration file:\n%s", strings.Join(tc.args, " "), out)
		}
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: stderr does not say %q:\n%s", strings.Join(tc.args, " "), tc.want, errOut)
		}
		if !strings.Contains(strings.Join(tc.args, " "), "--offline-registry") && strings.Contains(errOut, "--offline-registry was given") {
			t.Errorf("%s: stderr blames a flag that was not given:\n%s", strings.Join(tc.args, " "), errOut)
		}
	}
}
