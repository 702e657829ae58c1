//go:build unix

package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// guardedPaths returns links to the current executable standing in for apiserver and etcd
// (see the guard package).
func guardedPaths(dir, apiserver, etcd string) (string, string, error) {
	self, err := os.Executable()
	if err != nil {
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
