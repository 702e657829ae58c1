//go:build unix && !linux

package testenv

import "syscall"

func guardSysProcAttr() *syscall.SysProcAttr { return nil }
