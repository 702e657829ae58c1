//go:build linux

package testbed

import "syscall"

// childAttr makes the kernel kill a child when the test process dies without its cleanups (a
// -timeout panic), so no controller outlives its test.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
