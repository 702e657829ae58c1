package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/source"
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
		{"serve", "--authn", "maybe"},
		{"serve", "--max-connections", "0"},
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

// --authn=auto guards the endpoints in a pod and nowhere else; in a pod whose ServiceAccount
// token is not mounted it refuses to start rather than serve the findings unguarded; --authn=on
// outside a pod reviews tokens with the first watched cluster.
func TestServeAuthnMode(t *testing.T) {
	// Not in a pod, whatever machine runs the test: rest.InClusterConfig fails.
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	inPod := func(k string) string {
		if k == "KUBERNETES_SERVICE_HOST" {
			return "10.43.0.1"
		}
		return ""
	}
	notInPod := func(string) string { return "" }
	targets := []source.Target{{Name: "prod-eu-1", Server: "https://10.0.0.1:6443", Config: &rest.Config{Host: "https://10.0.0.1:6443"}}}
	for _, c := range []struct {
		mode    string
		getenv  func(string) string
		guarded bool
		err     string
	}{
		{"auto", notInPod, false, ""},
		{"auto", inPod, false, "ServiceAccount token cannot be read"},
		{"off", inPod, false, ""},
		{"on", notInPod, true, ""},
	} {
		o := &serveOptions{authn: c.mode, g: &globalOptions{}}
		a, err := o.auth(targets, c.getenv)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("--authn=%s: %v, want an error saying %q", c.mode, err, c.err)
			}
			continue
		}
		if err != nil || (a != nil) != c.guarded {
			t.Errorf("--authn=%s: guarded %v (%v), want %v", c.mode, a != nil, err, c.guarded)
		}
	}
}
