package testenv

import (
	// The orphan protection of kube-apiserver and etcd (see guard's package comment).
	"github.com/unstick-dev/unstick/internal/testenv/guard"
)

const guardTargetSuffix = guard.TargetSuffix
