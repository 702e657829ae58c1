//go:build unix

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Detach runs the current executable with args in the background, in its own session, its
// output to logPath, and waits until ready reports true. It fails, stopping what was started
// in dir, when the process exits first, timeout passes or ctx ends. hack/testenv and
// hack/testbed start their servers this way.
//
// The process gets this one's cache directory and graph key (detachEnv), so it finds the
// programs this one built whatever its working directory. Time it spends waiting for a build
// (buildwait.go) does not count against timeout, and is reported on stderr.
func Detach(ctx context.Context, dir, logPath string, args []string, timeout time.Duration, ready func() bool) (pid int, took time.Duration, err error) {
	cmd, logFile, err := detachedCommand(dir, logPath, args)
	if err != nil {
		return 0, 0, err
	}
	defer logFile.Close()
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("starting the background process: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	w := startWatch{timeout: timeout, waitDir: filepath.Join(dir, waitName), last: time.Now()}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			return 0, 0, fmt.Errorf("it did not start (%v):\n%s", err, out)
		case <-ctx.Done():
			endDetached(dir, cmd, exited)
			return 0, 0, ctx.Err()
		case now := <-tick.C:
			if ready() {
				return cmd.Process.Pid, time.Since(began), nil
			}
			if w.expired(now) {
				endDetached(dir, cmd, exited)
				return 0, 0, fmt.Errorf("it did not start within %s%s; see %s", timeout, w.excluded(), logPath)
			}
		}
	}
}

// endDetached ends a process that did not start: Stop where it got as far as writing its PID
// file, else its whole process group (a go build it runs, say), so no half-started
// environment keeps running once this process has given up on it.
func endDetached(dir string, cmd *exec.Cmd, exited <-chan error) {
	_ = Stop(dir)
	pgid := cmd.Process.Pid // Setsid: the process leads its own group
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		_ = syscall.Kill(-pgid, sig)
		select {
		case <-exited:
			return
		case <-time.After(15 * time.Second):
		}
	}
}

// detachedCommand is the command Detach starts: this executable in its own session, in dir,
// with the cache directory, graph key and wait directory in its environment.
func detachedCommand(dir, logPath string, args []string) (*exec.Cmd, *os.File, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	env, err := detachEnv()
	if err != nil {
		return nil, nil, err
	}
	waitDir := filepath.Join(dir, waitName)
	_ = os.RemoveAll(waitDir)
	if err := os.MkdirAll(waitDir, 0o755); err != nil {
		return nil, nil, err
	}
	out, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), waitDirEnv+"="+waitDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd, out, nil
}

// startWatch measures a start against its timeout, leaving out the time the process reports
// waiting for a build.
type startWatch struct {
	timeout, counted, waited time.Duration
	waitDir                  string
	last                     time.Time
	saying                   string
}

// expired counts the time since the last tick, or reports the wait it was spent on.
func (w *startWatch) expired(now time.Time) bool {
	d := now.Sub(w.last)
	w.last = now
	waits := waitingFor(w.waitDir)
	if len(waits) == 0 {
		w.counted += d
		w.saying = ""
		return w.counted > w.timeout
	}
	w.waited += d
	if say := strings.Join(waits, "; "); say != w.saying {
		logf("the background process is %s; the %s start timeout counts from when it is done", say, w.timeout)
		w.saying = say
	}
	return false
}

// excluded says how much time the timeout left out.
func (w *startWatch) excluded() string {
	if w.waited < time.Second {
		return ""
	}
	return fmt.Sprintf(" (besides %s waiting for builds)", w.waited.Round(time.Second))
}
