//go:build unix

package guard

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// run runs target and returns its exit code. It ends target when this process's
// parent goes away; signals to the process group reach target directly, and a signal sent to
// this process alone is passed on if target has not stopped a few seconds later.
func run(target string, args []string) int {
	parent := os.Getppid()
	cmd := exec.Command(target, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = sysProcAttr()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: starting %s: %v\n", target, err)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var forward <-chan time.Time
	var pending os.Signal
	var kill <-chan time.Time
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ee.ExitCode() >= 0 {
					return ee.ExitCode()
				}
				return 1
			}
			if err != nil {
				return 1
			}
			return 0
		case s := <-sigs:
			pending = s
			forward = time.After(3 * time.Second)
		case <-forward:
			_ = cmd.Process.Signal(pending)
		case <-tick.C:
			if os.Getppid() != parent && kill == nil {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				kill = time.After(10 * time.Second)
			}
		case <-kill:
			_ = cmd.Process.Kill()
		}
	}
}
