package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestServeUsage(t *testing.T) {
	out, _, code := run(t, "serve", "--help")
	if code != 0 || !strings.Contains(out, "/metrics") || !strings.Contains(out, "--listen") || !strings.Contains(out, "--rancher-refresh duration") {
		t.Errorf("serve --help: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"serve", "--listen", "no-port"},
		{"serve", "--interval", "0s"},
		{"serve", "--threshold", "helm.pendingAfter=soon"},
		{"serve", "--rancher-refresh", "5m"}, // no Rancher to list again
		{"serve", "--rancher", "--rancher-refresh", "-1m"},
	} {
		if _, errOut, code := run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, ExitUsage, errOut)
		}
	}
	// No kubeconfig and not in a pod: a clear error, not a hang.
	_, errOut, code := run(t, "serve", "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "--listen", "127.0.0.1:0")
	if code != ExitFailed || !strings.Contains(errOut, "kubeconfig") {
		t.Errorf("serve without a cluster: exit %d: %s", code, errOut)
	}
}
