//go:build linux

package testenv

import "syscall"

// The kernel kills target if this guard dies first (even by SIGKILL).
func guardSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
