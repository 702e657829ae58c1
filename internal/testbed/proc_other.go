//go:build !linux

package testbed

import "syscall"

func childAttr() *syscall.SysProcAttr { return nil }
