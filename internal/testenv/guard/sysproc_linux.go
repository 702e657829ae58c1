//go:build linux

package guard

import "syscall"

// The kernel kills target if this guard dies first (even by SIGKILL).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
