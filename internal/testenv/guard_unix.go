//go:build unix

package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// guardedPaths returns links to the current executable standing in for apiserver and etcd
// (see the guard package). An executable no longer on disk gets no links: the first `go run`
// of a program runs it from a temporary directory that go removes when it exits, and a link to
// it would fail with "fork/exec …/bin/etcd: no such file or directory".
func guardedPaths(dir, apiserver, etcd string) (string, string, error) {
	self, err := os.Executable()
	if err == nil {
		_, err = os.Stat(self)
	}
	if err != nil {
		logf("kube-apiserver and etcd run without the orphan guard: %v", err)
		return apiserver, etcd, nil // no guard, but still a working environment
	}
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return "", "", fmt.Errorf("testenv: %w", err)
	}
	var out []string
	for _, real := range []string{apiserver, etcd} {
		link := filepath.Join(binDir, filepath.Base(real))
		_ = os.Remove(link)
		if err := os.Symlink(self, link); err != nil {
			return "", "", fmt.Errorf("testenv: %w", err)
		}
		if err := os.WriteFile(link+guardTargetSuffix, []byte(real+"\n"), 0o644); err != nil {
			return "", "", fmt.Errorf("testenv: %w", err)
		}
		out = append(out, link)
	}
	return out[0], out[1], nil
}
