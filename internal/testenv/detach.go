//go:build unix

package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Detach runs the current executable with args in the background, in its own session, its
// output to logPath, and waits until ready reports true. It fails, stopping what was started
// in dir, when the process exits first, timeout passes or ctx ends. hack/testenv and
// hack/testbed start their servers this way.
func Detach(ctx context.Context, dir, logPath string, args []string, timeout time.Duration, ready func() bool) (pid int, took time.Duration, err error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return 0, 0, err
	}
	defer logf.Close()
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("starting the background process: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logPath)
			return 0, 0, fmt.Errorf("it did not start (%v):\n%s", err, out)
		case <-deadline:
			_ = Stop(dir)
			return 0, 0, fmt.Errorf("it did not start within %s; see %s", timeout, logPath)
		case <-ctx.Done():
			_ = Stop(dir)
			return 0, 0, ctx.Err()
		case <-tick.C:
			if ready() {
				return cmd.Process.Pid, time.Since(began), nil
			}
		}
	}
}
