package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// kwokDefaultStages are the stages kwokctl gives KWOK by default, read from the released kwok
// module: nodes become Ready and keep a lease; pods are created, become Ready, complete (a
// Job's) and are deleted.
var kwokDefaultStages = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/general/pod-create.yaml",
	"kustomize/stage/pod/general/pod-init-container-running.yaml",
	"kustomize/stage/pod/general/pod-init-container-completed.yaml",
	"kustomize/stage/pod/general/pod-ready.yaml",
	"kustomize/stage/pod/general/pod-complete.yaml",
	"kustomize/stage/pod/general/pod-delete.yaml",
}

// kwokConfig is KWOK's --config: the test's own stages, then the defaults.
func kwokConfig(ctx context.Context, extra [][]byte) ([]byte, error) {
	dir, err := testenv.KWOK.SourceDir(ctx)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	add := func(doc []byte) {
		if b.Len() > 0 {
			b.WriteString("\n---\n")
		}
		b.Write(bytes.TrimSpace(doc))
	}
	for _, s := range extra {
		add(s)
	}
	for _, f := range kwokDefaultStages {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return nil, fmt.Errorf("reading KWOK's default stage %s: %w", f, err)
		}
		add(data)
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}
