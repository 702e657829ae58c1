package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// Where the test bed keeps what it builds and makes, and what a process hands to the one it
// detaches.

// CacheDirEnv names a directory to keep the bed's programs and etcd templates in, instead of
// unstick/testenv in the user cache directory. (XDG_CACHE_HOME would move Go's build cache too.)
const CacheDirEnv = "UNSTICK_TESTENV_CACHE_DIR"

// NoBuildEnv, set to 1, makes any build of a program of the bed an error: a test that must find
// every program built (say, under another process's cache key) fails instead of building.
const NoBuildEnv = "UNSTICK_TESTENV_NO_BUILD"

// cacheDir is the directory holding the bed's cache directories and etcd templates.
func cacheDir() (string, error) {
	if d := os.Getenv(CacheDirEnv); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testenv: no user cache directory to keep the test bed's programs in: %w", err)
	}
	return filepath.Join(base, "unstick", "testenv"), nil
}

// keyedDir is the cache directory of name in the bed's module graph.
func keyedDir(name string) (string, error) {
	root, err := cacheDir()
	if err != nil {
		return "", err
	}
	key, err := graphKey()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, name+"-"+key), nil
}

// refuseBuild is the error a build returns when NoBuildEnv is set.
func refuseBuild(what, dir string) error {
	if os.Getenv(NoBuildEnv) != "1" {
		return nil
	}
	return fmt.Errorf("testenv: %s: not built in %s, and %s=1 forbids building (a process computing another cache key would build a second copy)", what, dir, NoBuildEnv)
}

// detachEnv is what a process passes to the one it detaches so that both use the same cache
// directories: the cache directory and the graph key, never computed again by the child. (A
// key this process could not compute — no Go toolchain, programs taken from
// UNSTICK_TESTENV_BIN_DIR — is left out: the child fails the same way where it needs one.)
func detachEnv() ([]string, error) {
	root, err := cacheDir()
	if err != nil {
		return nil, err
	}
	env := []string{CacheDirEnv + "=" + root}
	if key, err := graphKey(); err == nil {
		env = append(env, graphKeyEnv+"="+key)
	}
	return env, nil
}
