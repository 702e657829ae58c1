package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Installed as kubectl-unstick, the binary is the kubectl plugin: its help says
// "kubectl unstick", in usage lines and examples alike.
func TestPluginDisplayName(t *testing.T) {
	for _, argv0 := range []string{"/usr/local/bin/kubectl-unstick", "kubectl-unstick.exe", "kubectl-unstick"} {
		if got := displayName(filepath.FromSlash(argv0)); got != "kubectl unstick" {
			t.Errorf("displayName(%q) = %q", argv0, got)
		}
	}
	if got := displayName("/usr/bin/unstick"); got != "unstick" {
		t.Errorf("displayName(unstick) = %q", got)
	}
	out, _, code := runIn(t, "/usr/local/bin/kubectl-unstick", "scan", "--help")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out, "Usage:\n  kubectl unstick scan [flags]") {
		t.Errorf("scan --help as a plugin does not say 'kubectl unstick scan':\n%s", out)
	}
	if !strings.Contains(out, "  kubectl unstick scan --from examples/fleet-upgrade-stuck") {
		t.Errorf("the examples do not say 'kubectl unstick':\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "unstick ") {
			t.Errorf("an example still says plain unstick: %q", line)
		}
	}
	out, _, _ = runIn(t, "/usr/local/bin/kubectl-unstick", "--help")
	if !strings.Contains(out, "kubectl unstick [command]") {
		t.Errorf("root --help as a plugin:\n%s", out)
	}
	_, errOut, code := runIn(t, "/usr/local/bin/kubectl-unstick", "scan", "--frm", "x")
	if code != ExitUsage || !strings.Contains(errOut, "See 'kubectl unstick scan --help'") {
		t.Errorf("usage error as a plugin: exit %d, %q", code, errOut)
	}
	_, errOut, code = runIn(t, "/usr/local/bin/unstick", "fix", "--max-risk", "extreme")
	if code != ExitUsage || !strings.Contains(errOut, "See 'unstick fix --help'") {
		t.Errorf("a usage error does not point at the subcommand's help: exit %d, %q", code, errOut)
	}
	_, errOut, code = runIn(t, "/usr/local/bin/unstick", "scna")
	if code != ExitUsage || !strings.Contains(errOut, "See 'unstick --help'") {
		t.Errorf("an unknown command does not point at the root help: exit %d, %q", code, errOut)
	}
	// As plain unstick nothing says kubectl.
	out, _, _ = runIn(t, "/usr/local/bin/unstick", "scan", "--help")
	if strings.Contains(out, "kubectl unstick") {
		t.Errorf("plain unstick's help mentions kubectl unstick")
	}
}

// The plugin contract end to end: the binary built as kubectl-unstick, on PATH, is what
// `kubectl unstick ARGS` runs, with ARGS passed through. When kubectl is installed it is
// the one calling; without it, the binary is run by the name kubectl would use.
func TestPluginBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := t.TempDir()
	name := "kubectl-unstick"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	build := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./cmd/unstick")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	example, _ := filepath.Abs(example)
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_CONFIG_HOME="+t.TempDir())
	var cmd *exec.Cmd
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		t.Logf("running the plugin through %s", kubectl)
		cmd = exec.Command(kubectl, "unstick", "scan", "--from", example, "-o", "json", "--only", "helm/")
	} else {
		t.Logf("kubectl is not installed: running %s as kubectl would", name)
		cmd = exec.Command(name, "scan", "--from", example, "-o", "json", "--only", "helm/")
	}
	cmd.Env = env
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFindings {
		t.Fatalf("kubectl unstick scan: %v (want exit %d)\n%s", err, ExitFindings, out)
	}
	r := decodeJSON(t, string(out))
	if len(r.Findings) == 0 {
		t.Fatal("no findings")
	}
	for _, f := range r.Findings {
		if !strings.HasPrefix(f.ID, "helm/") {
			t.Errorf("--only helm/ was not passed through: %s", f.ID)
		}
	}
	help := exec.Command(filepath.Join(bin, name), "--help")
	help.Env = env
	hout, err := help.Output()
	if err != nil || !strings.Contains(string(hout), "kubectl unstick [command]") {
		t.Errorf("%s --help: %v\n%s", name, err, hout)
	}
}

// Completion: verbs, flags, finding IDs and families, kubeconfig contexts, bundle clusters.
func TestCompletion(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: c-rancher, cluster: {server: "https://127.0.0.1:1"}}
- {name: c-prod, cluster: {server: "https://127.0.0.1:2"}}
contexts:
- {name: rancher, context: {cluster: c-rancher, user: admin}}
- {name: prod-eu-1, context: {cluster: c-prod, user: admin}}
users:
- {name: admin, user: {token: x}}
current-context: rancher
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args       []string
		want, not_ []string
	}{
		{[]string{"__complete", "sc"}, []string{"scan"}, []string{"explain"}},
		{[]string{"__complete", "scan", "--outp"}, []string{"--output", "--output-file"}, nil},
		{[]string{"__complete", "scan", "-o", ""}, []string{"html", "sarif", "junit", "table"}, nil},
		{[]string{"__complete", "explain", ""}, []string{"helm/release-pending", "pod/crashloop"}, nil},
		{[]string{"__complete", "scan", "--only", "he"}, []string{"helm/", "helm/release-pending"}, []string{"pod/"}},
		{[]string{"__complete", "scan", "--kubeconfig", kc, "--context", ""}, []string{"rancher", "prod-eu-1"}, nil},
		{[]string{"__complete", "scan", "--kubeconfig", kc, "--context", "pr"}, []string{"prod-eu-1"}, []string{"rancher"}},
		{[]string{"__complete", "scan", "--kubeconfig", kc, "--cluster", ""}, []string{"c-rancher", "c-prod"}, nil},
		{[]string{"__complete", "collect", "--kubeconfig", kc, "--context", ""}, []string{"rancher", "prod-eu-1"}, nil},
		{[]string{"__complete", "scan", "--from", example, "--only-cluster", ""}, []string{"prod-eu-1", "edge-arm-1", "local"}, nil},
		{[]string{"__complete", "completion", ""}, []string{"bash", "zsh", "fish", "powershell"}, nil},
	}
	for _, c := range cases {
		out, errOut, code := run(t, c.args...)
		if code != ExitOK {
			t.Errorf("%v: exit %d (%s)", c.args, code, errOut)
			continue
		}
		lines := strings.Split(out, "\n")
		has := func(s string) bool {
			for _, l := range lines {
				if l == s || strings.HasPrefix(l, s+"\t") {
					return true
				}
			}
			return false
		}
		for _, w := range c.want {
			if !has(w) {
				t.Errorf("%v: no %q in\n%s", c.args, w, out)
			}
		}
		for _, n := range c.not_ {
			if has(n) {
				t.Errorf("%v: %q should not be offered", c.args, n)
			}
		}
	}
	// Completion scripts generate for every shell, as the plugin too.
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		out, _, code := runIn(t, "/usr/local/bin/kubectl-unstick", "completion", sh)
		if code != ExitOK || len(out) < 500 {
			t.Errorf("completion %s: exit %d, %d bytes", sh, code, len(out))
		}
	}
}
