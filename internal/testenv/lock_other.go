//go:build !unix

package testenv

import (
	"context"
	"errors"
	"os"
	"time"
)

// lockFile falls back to an O_EXCL lock file where flock does not exist. A crashed holder
// leaves the file behind; it is taken over after an hour. The holder's PID is not known.
func lockFile(ctx context.Context, path string, waiting func(holder int)) (unlock func(), err error) {
	told := false
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(path)
			continue
		}
		if !told && waiting != nil {
			waiting(0)
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

func tryLock(path string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
	if errors.Is(err, os.ErrExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	f.Close()
	return func() { os.Remove(path) }, true, nil
}

func terminate(pid int) error { return kill(pid) }

func kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
