package cli

import (
	"os"
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
	// The judging flags of scan, --now said to be for replays only.
	for _, want := range []string{"--fail-on string", "--allow-incomplete", "--now string", "only for data replayed into a cluster", "--max-log-reads int"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	for _, args := range [][]string{
		{"serve", "--listen", "no-port"},
		{"serve", "--interval", "0s"},
		{"serve", "--threshold", "helm.pendingAfter=soon"},
		{"serve", "--rancher-refresh", "5m"}, // no Rancher to list again
		{"serve", "--rancher", "--rancher-refresh", "-1m"},
		{"serve", "--authn", "maybe"},
		{"serve", "--max-connections", "0"},
		{"serve", "--max-log-reads", "0"},
		{"serve", "--now", "yesterday"},
		{"serve", "--fail-on", "severe"},
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

// A cluster that cannot be reached: serve says so once and exits 1, and never claims a
// dashboard that nothing will serve.
func TestServeUnreachableSaysItOnce(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	// 127.0.0.1:1 refuses connections: nothing listens on tcpmux.
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: prod-eu-1
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: prod-eu-1
  user: {token: not-a-secret}
contexts:
- name: prod-eu-1
  context: {cluster: prod-eu-1, user: prod-eu-1}
current-context: prod-eu-1
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "serve", "--kubeconfig", kc, "--listen", "127.0.0.1:0", "--authn", "off")
	if code != ExitFailed {
		t.Errorf("exit %d, want %d", code, ExitFailed)
	}
	if strings.Contains(errOut, "dashboard on") {
		t.Errorf("serve announced a dashboard though no cluster could be watched:\n%s", errOut)
	}
	if n := strings.Count(errOut, "cannot reach the API server"); n != 1 {
		t.Errorf("the error is printed %d times, want once:\n%s", n, errOut)
	}
}
