package e2e

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives the tests a configuration directory of their own: fix --apply makes its
// per-user backup key there on first use, never in the home directory of whoever runs them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "unstick-e2e-config-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
