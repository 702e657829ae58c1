//go:build unix && !linux

package guard

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
