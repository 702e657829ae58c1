package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A start's timeout measures the start, not the builds it waits for. The process Detach starts
// tells it, through files in a directory named by waitDirEnv, what build it is waiting for or
// making; Detach does not count that time (on a fresh machine another process's build of
// kube-apiserver and etcd takes minutes).

// waitDirEnv names the directory; each wait is one file in it, holding what is awaited.
const waitDirEnv = "UNSTICK_TESTENV_WAIT_DIR"

// waitName is that directory, inside the environment's.
const waitName = "testenv.waiting"

// buildLock takes the lock at lockPath for building what into dir. While this process waits
// for it, and until unlock, the wait directory says so and the log names the holder's PID.
func buildLock(ctx context.Context, lockPath, what, dir string) (unlock func(), err error) {
	endWait := func() {}
	unlockFile, err := lockFile(ctx, lockPath, func(holder int) {
		by := holderName(holder)
		logf("%s is building %s into %s; waiting for it", by, what, dir)
		endWait = startWaiting("waiting for " + by + " to build " + what)
	})
	endWait()
	if err != nil {
		return nil, err
	}
	endBuild := startWaiting("building " + what)
	return func() { unlockFile(); endBuild() }, nil
}

// holderName names the process holding a lock, by its PID where the lock file gives it.
func holderName(pid int) string {
	if pid > 0 {
		return fmt.Sprintf("another process (pid %d)", pid)
	}
	return "another process"
}

// startWaiting records a wait in the wait directory, if this process has one, and returns the
// function ending it.
func startWaiting(what string) (done func()) {
	dir := os.Getenv(waitDirEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.CreateTemp(dir, "wait-")
	if err != nil {
		return func() {}
	}
	_, _ = f.WriteString(what)
	_ = f.Close()
	return func() { _ = os.Remove(f.Name()) }
}

// waitingFor lists the waits recorded in dir, or nothing.
func waitingFor(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && len(b) > 0 && len(b) < 1024 {
			out = append(out, strings.TrimSpace(string(b)))
		}
	}
	slices.Sort(out)
	return out
}
