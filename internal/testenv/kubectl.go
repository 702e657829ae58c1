package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const kubectlPkg = "k8s.io/kubernetes/cmd/kubectl"

var (
	kubectlMu  sync.Mutex
	kubectlBin string
)

// Kubectl returns the path of a kubectl built from the same k8s.io/kubernetes release as the
// test kube-apiserver (KubernetesVersion), building it once per machine from the Go module
// proxy into the same cache directory as kube-apiserver. Parallel processes wait on a file
// lock instead of building twice. With UNSTICK_TESTENV_BIN_DIR set, a kubectl found there is
// used as is.
func Kubectl(ctx context.Context) (string, error) {
	kubectlMu.Lock()
	defer kubectlMu.Unlock()
	if kubectlBin != "" {
		return kubectlBin, nil
	}
	if dir := os.Getenv(binDirEnv); dir != "" {
		if p := filepath.Join(dir, "kubectl"+exeSuffix()); isExecutable(p) {
			kubectlBin = p
			return p, nil
		}
	}
	dir, err := BinaryDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "kubectl"+exeSuffix())
	if !kubectlBuilt(dir) {
		if err := buildKubectlLocked(ctx, dir); err != nil {
			return "", err
		}
	}
	kubectlBin = p
	return p, nil
}

const kubectlStamp = "kubectl.complete"

func kubectlBuilt(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, kubectlStamp))
	return err == nil && isExecutable(filepath.Join(dir, "kubectl"+exeSuffix()))
}

func buildKubectlLocked(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testenv: creating cache directory: %w", err)
	}
	lock := dir + ".kubectl.lock"
	unlock, err := buildLock(ctx, lock, "kubectl", dir)
	if err != nil {
		return fmt.Errorf("testenv: locking %s: %w", lock, err)
	}
	defer unlock()
	if kubectlBuilt(dir) {
		return nil
	}
	return buildKubectl(ctx, dir)
}

// buildKubectl builds k8s.io/kubernetes/cmd/kubectl the way build makes kube-apiserver: in the
// test bed's module (bedmodule.go), whose staging replaces include k8s.io/kubectl.
func buildKubectl(ctx context.Context, dir string) error {
	if err := refuseBuild("kubectl", dir); err != nil {
		return err
	}
	start := time.Now()
	logf("building kubectl %s into %s from the Go module proxy (first use only: a few minutes)", KubernetesVersion, dir)
	run, work, cleanup, err := newBedModule(ctx, dir, start)
	if err != nil {
		return err
	}
	defer cleanup()
	tmp := filepath.Join(work, "kubectl"+exeSuffix())
	if _, err := run("build", "-trimpath", "-ldflags", versionLDFlags(), "-o", tmp, kubectlPkg); err != nil {
		return fmt.Errorf("testenv: building kubectl: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "kubectl"+exeSuffix())); err != nil {
		return fmt.Errorf("testenv: installing kubectl: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, kubectlStamp), []byte(KubernetesVersion+"\n"), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	logf("built kubectl in %s", time.Since(start).Round(time.Second))
	return nil
}
