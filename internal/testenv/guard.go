package testenv

import (
	"os"
	"path/filepath"
	"strings"
)

// Orphan protection. envtest starts kube-apiserver and etcd in their own process group, so
// when a test binary dies without running its cleanups (a -timeout panic, Ctrl-C, a crash)
// they would keep running, and keep their memory, forever. Instead envtest starts a link
// named kube-apiserver or etcd to the current executable, which — recognising the name and
// the target file next to it in this init — runs the real binary and kills it as soon as its
// own parent is gone. It is the reexec pattern of moby's pkg/reexec, and only ever triggers
// for an executable started under those names with that target file present.

const guardTargetSuffix = ".unstick-testenv-target"

func init() {
	base := filepath.Base(os.Args[0])
	if base != "kube-apiserver" && base != "etcd" {
		return
	}
	target, err := os.ReadFile(os.Args[0] + guardTargetSuffix)
	if err != nil {
		return
	}
	os.Exit(runGuarded(strings.TrimSpace(string(target)), os.Args[1:]))
}
