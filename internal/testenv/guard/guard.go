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
	"os"
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
	target, err := os.ReadFile(os.Args[0] + TargetSuffix)
	if err != nil {
		return
	}
	os.Exit(run(strings.TrimSpace(string(target)), os.Args[1:]))
}
