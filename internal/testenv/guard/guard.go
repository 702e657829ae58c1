// Package guard is testenv's orphan protection, in a package of its own so that it runs first.
//
// envtest starts kube-apiserver and etcd in their own process group, so when a test binary
// dies without running its cleanups (a -timeout panic, Ctrl-C, a crash) they would keep
// running, and keep their memory, forever. Instead envtest starts a link named kube-apiserver
// or etcd to the current executable, which — recognising the name and the target file next
// to it in this init — runs the real binary and kills it as soon as its own parent is gone.
// It is the reexec pattern of moby's pkg/reexec, and only ever triggers for an executable
// started under those names with that target file present.
//
// This package imports only the standard library. Go initialises, among the packages whose
// imports are initialised, the first by import path, so this init runs before client-go's,
// Helm's and the other heavy ones a test binary carries: a guard process (two per API server a
// test starts, hundreds in a run of the suite) does not pay for initialising them.
package guard

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// TargetSuffix names the file, next to the link, that holds the real program's path.
const TargetSuffix = ".unstick-testenv-target"

func init() {
	base := filepath.Base(os.Args[0])
	if base != "kube-apiserver" && base != "etcd" {
		return
	}
	b, err := os.ReadFile(os.Args[0] + TargetSuffix)
	if err != nil {
		return
	}
	target := strings.TrimSpace(string(b))
	if len(os.Args) == 2 && os.Args[1] == "--help" {
		os.Exit(help(target))
	}
	os.Exit(run(target, os.Args[1:]))
}

// help answers `--help`, which envtest runs on every start to look for a flag in the output
// (kube-apiserver's costs a fifth of a CPU-second), from a copy kept next to the program and
// refreshed when the program is newer. Output is the program's stdout and stderr together,
// as envtest reads them.
func help(target string) int {
	cache := target + ".help"
	if c, err := os.Stat(cache); err == nil {
		if p, err := os.Stat(target); err == nil && !c.ModTime().Before(p.ModTime()) {
			if b, err := os.ReadFile(cache); err == nil {
				_, _ = os.Stdout.Write(b)
				return 0
			}
		}
	}
	out, err := exec.Command(target, "--help").CombinedOutput()
	_, _ = os.Stdout.Write(out)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			return ee.ExitCode()
		}
		return 1
	}
	// Written whole or not at all; a cache directory that is not writable only costs the run.
	if tmp, err := os.CreateTemp(filepath.Dir(cache), filepath.Base(cache)+".*"); err == nil {
		_, werr := tmp.Write(out)
		cerr := tmp.Close()
		if werr != nil || cerr != nil || os.Rename(tmp.Name(), cache) != nil {
			_ = os.Remove(tmp.Name())
		}
	}
	return 0
}
