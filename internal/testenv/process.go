package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Files of an environment run by StartProcess, inside its directory.
const (
	PIDFile    = "testenv.pid"
	lockName   = "testenv.lock"
	readyFile  = "ready"
	Kubeconfig = "kubeconfig"
	// KubeconfigDirect talks to the API server itself, with administrator certificates;
	// Kubeconfig goes through the log proxy (LogProxy), which serves pods/log from LogsDir.
	KubeconfigDirect = "kubeconfig-direct"
	LogsDir          = "logs"
)

// created lists what StartProcess puts in the directory, for Stop to remove.
var created = []string{Kubeconfig, KubeconfigDirect, LogsDir, PIDFile, readyFile, "etcd", "pki", "bin", "testenv.log", waitName, lockName}

// StartProcess runs an environment outside a test, owned by the calling process (which
// should stay alive until it calls Stop on the Env, or until another process calls Stop(dir)
// and it is signalled). It writes dir/kubeconfig, with a context named after dir's base
// name, and dir/testenv.pid, and refuses to start twice in one directory.
func StartProcess(ctx context.Context, dir string, opts ...Option) (*Env, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	unlock, ok, err := tryLock(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("testenv: locking %s: %w", dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("testenv: an environment is already running in %s (stop it first)", dir)
	}
	name := filepath.Base(dir)
	if name == "" || name == "." || name == string(filepath.Separator) {
		name = "testenv"
	}
	for _, f := range []string{readyFile, Kubeconfig} {
		_ = os.Remove(filepath.Join(dir, f))
	}
	e, err := start(ctx, dir, append([]Option{WithContextName(name)}, opts...))
	if err != nil {
		unlock()
		return nil, err
	}
	// The test server has no kubelet: clients reach it through the log proxy, which answers
	// pods/log from the logs of the bundles loaded into it.
	proxyURL, closeProxy, err := ServeLogProxy(e.Config, filepath.Join(dir, LogsDir))
	if err == nil {
		err = WriteKubeconfig(filepath.Join(dir, KubeconfigDirect), e.Config, name)
	}
	if err == nil {
		err = WriteKubeconfig(filepath.Join(dir, Kubeconfig), &rest.Config{Host: proxyURL}, name)
	}
	if err != nil {
		_ = e.Stop()
		unlock()
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PIDFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		_ = closeProxy()
		_ = e.Stop()
		unlock()
		return nil, fmt.Errorf("testenv: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), []byte(e.URL()+"\n"), 0o644); err != nil {
		_ = e.Stop()
		unlock()
		return nil, fmt.Errorf("testenv: %w", err)
	}
	e.release = func() {
		_ = closeProxy()
		_ = os.Remove(filepath.Join(dir, readyFile))
		_ = os.Remove(filepath.Join(dir, PIDFile))
		unlock()
	}
	return e, nil
}

// Ready reports whether the environment in dir has started, and its server URL.
func Ready(dir string) (url string, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, readyFile))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// Stop ends the environment another process started in dir with StartProcess: it signals
// that process, waits for it to stop the servers, kills it if it does not, and removes the
// files the environment wrote. Stopping a directory where nothing runs only cleans up.
func Stop(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	lock := filepath.Join(dir, lockName)
	if _, err := os.Stat(lock); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("testenv: no environment in %s", dir)
	}
	free := func() bool {
		unlock, ok, err := tryLock(lock)
		if err != nil || !ok {
			return false
		}
		unlock()
		return true
	}
	if !free() {
		b, err := os.ReadFile(filepath.Join(dir, PIDFile))
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || pid <= 1 {
			return fmt.Errorf("testenv: an environment holds %s but its pid file is unreadable: %v", dir, errors.Join(err, perr))
		}
		_ = terminate(pid)
		if !waitFor(free, 45*time.Second) {
			_ = kill(pid)
			if !waitFor(free, 15*time.Second) {
				return fmt.Errorf("testenv: process %d running the environment in %s did not stop", pid, dir)
			}
		}
		// A killed owner's guards end kube-apiserver and etcd within a second.
		time.Sleep(time.Second)
	}
	var errs []error
	for _, f := range created {
		if err := os.RemoveAll(filepath.Join(dir, f)); err != nil {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(dir) // only if empty
	return errors.Join(errs...)
}

func waitFor(cond func() bool, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return cond()
}
