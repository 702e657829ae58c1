package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// commandPaths lists every command of the tree ("scan", "completion bash", ...), root first.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	out := [][]string{prefix}
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		out = append(out, commandPaths(sub, append(append([]string{}, prefix...), sub.Name()))...)
	}
	return out
}

// Every line of every command's --help fits 100 columns, as unstick and as the kubectl plugin
// (whose help says "kubectl unstick", 8 columns longer).
func TestHelpFits100Columns(t *testing.T) {
	for _, argv0 := range []string{"unstick", "kubectl-unstick"} {
		root := newRoot(Streams{}, argv0)
		paths := commandPaths(root, nil)
		if len(paths) < 10 {
			t.Fatalf("only %d commands found", len(paths))
		}
		for _, p := range paths {
			out, errOut, code := runIn(t, argv0, append(append([]string{}, p...), "--help")...)
			if code != ExitOK {
				t.Errorf("%s %v --help: exit %d: %s", argv0, p, code, errOut)
				continue
			}
			for i, line := range strings.Split(out, "\n") {
				if n := len([]rune(line)); n > helpWidth {
					t.Errorf("%s %s --help, line %d has %d columns:\n%s", argv0, strings.Join(p, " "), i+1, n, line)
				}
			}
		}
	}
}

// As the kubectl plugin, help text that names a command names it as the user types it.
func TestPluginHelpSaysKubectlUnstick(t *testing.T) {
	root := newRoot(Streams{}, "kubectl-unstick")
	for _, p := range commandPaths(root, nil) {
		out, _, _ := runIn(t, "kubectl-unstick", append(append([]string{}, p...), "--help")...)
		for _, line := range strings.Split(out, "\n") {
			for _, cmd := range []string{"'unstick ", "`unstick ", "(unstick ", "  unstick ", "$ unstick "} {
				if strings.Contains(line, cmd) {
					t.Errorf("kubectl-unstick %s --help says %q: %s", strings.Join(p, " "), strings.TrimSpace(cmd), line)
				}
			}
		}
	}
}
