// Package promtool provides Prometheus's promtool for tests of the alert rules: built once
// per machine from the Go module proxy (like the test API server of internal/testenv) and
// cached under the user cache directory, keyed by version.
package promtool

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

const (
	// Version is the github.com/prometheus/prometheus module version (Prometheus 3.x is
	// published to the module proxy as v0.3xx.y).
	Version = "v0.316.0"
	pkg     = "github.com/prometheus/prometheus/cmd/promtool"
	// binEnv names a prebuilt promtool to use instead.
	binEnv = "UNSTICK_PROMTOOL"
)

var (
	mu   sync.Mutex
	path string
)

// Binary returns the path of promtool, building it first if it is not cached. Parallel test
// processes wait on a file lock instead of building twice.
func Binary(ctx context.Context) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if path != "" {
		return path, nil
	}
	if p := os.Getenv(binEnv); p != "" {
		path = p
		return p, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("promtool: no user cache directory: %w", err)
	}
	dir := filepath.Join(cache, "unstick", "promtool", Version)
	bin := filepath.Join(dir, "promtool")
	if executable(bin) {
		path = bin
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, dir+".lock", func() {
		fmt.Fprintf(os.Stderr, "promtool: waiting for another process building %s\n", bin)
	})
	if err != nil {
		return "", fmt.Errorf("promtool: locking %s: %w", dir, err)
	}
	defer unlock()
	if executable(bin) { // built while we waited
		path = bin
		return bin, nil
	}
	gobin, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	start := time.Now()
	fmt.Fprintf(os.Stderr, "promtool: building %s@%s from the Go module proxy (a few minutes, once)\n", pkg, Version)
	// remove_all_sd is Prometheus's own build tag for leaving out the service-discovery
	// plugins (the cloud providers' SDKs): promtool checks and tests rules without them, and
	// builds in a fraction of the time.
	cmd := exec.CommandContext(ctx, "go", "install", "-tags", "remove_all_sd", pkg+"@"+Version)
	// Outside any module and workspace, with this repository's flags kept out.
	cmd.Dir = gobin
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("promtool: go install %s@%s: %w\n%s", pkg, Version, err, tail(out))
	}
	if err := os.Rename(filepath.Join(gobin, "promtool"), bin); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "promtool: built in %s\n", time.Since(start).Round(time.Second))
	path = bin
	return bin, nil
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func tail(b []byte) []byte {
	if len(b) > 4000 {
		return b[len(b)-4000:]
	}
	return b
}
