// Package promtool provides Prometheus's promtool for tests of the alert rules, once per
// machine, cached under the user cache directory: taken from Debian's prometheus package where
// apt-get can download it (seconds; nothing is installed), else built from the Go module proxy
// (minutes of compiling on a fresh machine).
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
	debDir := filepath.Join(cache, "unstick", "promtool", "debian")
	dir := filepath.Join(cache, "unstick", "promtool", Version)
	bin := filepath.Join(dir, "promtool")
	for _, p := range []string{filepath.Join(debDir, "promtool"), bin} {
		if executable(p) {
			path = p
			return p, nil
		}
	}
	if p, err := fromDebian(ctx, debDir); err == nil {
		path = p
		return p, nil
	} else {
		fmt.Fprintf(os.Stderr, "promtool: not taken from Debian's prometheus package (%v); building it instead\n", err)
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

// fromDebian extracts promtool from Debian's prometheus package, downloaded by apt-get (no
// root needed, nothing installed) into dir. An empty package list is refreshed once when
// running as root, as hack/deps.sh does.
func fromDebian(ctx context.Context, dir string) (string, error) {
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("no %s", tool)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, dir+".lock", func() {
		fmt.Fprintf(os.Stderr, "promtool: waiting for another process extracting it into %s\n", dir)
	})
	if err != nil {
		return "", fmt.Errorf("locking %s: %w", dir, err)
	}
	defer unlock()
	bin := filepath.Join(dir, "promtool")
	if executable(bin) {
		return bin, nil
	}
	work, err := os.MkdirTemp(dir, ".download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	aptGet := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-q", "-o", "Debug::NoDropPrivs=true"}, args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	out, err := aptGet("download", "prometheus")
	if err != nil && os.Geteuid() == 0 {
		if upd, uerr := aptGet("update"); uerr != nil {
			return "", fmt.Errorf("apt-get update: %w\n%s", uerr, tail(upd))
		}
		out, err = aptGet("download", "prometheus")
	}
	if err != nil {
		return "", fmt.Errorf("apt-get download prometheus: %w\n%s", err, tail(out))
	}
	debs, _ := filepath.Glob(filepath.Join(work, "prometheus_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("apt-get download prometheus left %d packages in %s", len(debs), work)
	}
	tree := filepath.Join(work, "tree")
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[0], tree).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %w\n%s", filepath.Base(debs[0]), err, tail(out))
	}
	if err := os.Rename(filepath.Join(tree, "usr", "bin", "promtool"), bin); err != nil {
		return "", fmt.Errorf("%s has no usr/bin/promtool: %w", filepath.Base(debs[0]), err)
	}
	fmt.Fprintf(os.Stderr, "promtool: taken from Debian's %s\n", filepath.Base(debs[0]))
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
