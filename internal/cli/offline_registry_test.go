package cli

import (
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// trap is a TCP listener that counts every connection made to it: a registry that must not
// be contacted.
type trap struct {
	l        net.Listener
	accepted atomic.Int64
}

func newTrap(t *testing.T) *trap {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tr.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return tr
}

// trapBundle is a cluster whose every upgrade image lives on the trap's address.
func trapBundle(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"unstick-bundle.yaml": "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: '2026-11-28T09:30:00Z'\nclusters:\n- name: edge\n  role: downstream\n",
		"objects.yaml": fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: edge-1
  labels: {kubernetes.io/arch: arm64, kubernetes.io/os: linux, kubernetes.io/hostname: edge-1}
status:
  nodeInfo: {architecture: arm64, operatingSystem: linux, kubeletVersion: v1.30.3+k3s1}
---
apiVersion: upgrade.cattle.io/v1
kind: Plan
metadata: {name: os, namespace: system-upgrade}
spec:
  concurrency: 1
  cordon: true
  nodeSelector: {matchLabels: {kubernetes.io/os: linux}}
  imagePullSecrets: [{name: mirror}]
  upgrade: {image: %[1]s/ops/os-upgrade}
  version: v2026.11.2
status: {latestVersion: v2026.11.2, latestHash: 0123abcd}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: system-upgrade-controller, namespace: system-upgrade}
spec:
  template:
    metadata: {labels: {upgrade.cattle.io/controller: system-upgrade-controller}}
    spec:
      containers:
      - name: system-upgrade-controller
        image: %[1]s/rancher/system-upgrade-controller:v0.20.1
        env: [{name: SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE, value: "%[1]s/rancher/kubectl:v1.30.3"}]
`, host),
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// With --offline-registry (or registry.offline in the config file) no connection to any
// registry is attempted: a listener standing in for the registry never sees one. Without it,
// the same run does connect, which proves the listener would have noticed.
func TestOfflineRegistryMakesNoConnection(t *testing.T) {
	tr := newTrap(t)
	bundle := trapBundle(t, tr.l.Addr().String())
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("registry:\n  offline: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"images", "--from", bundle, "--offline-registry", "-o", "csv"},
		{"preflight", "--from", bundle, "--offline-registry"},
		{"preflight", "--from", bundle, "--offline-registry", "--target-version", "v1.31.4+k3s1", "-o", "json"},
		{"--config", cfg, "images", "--from", bundle},
	} {
		out, stderr, code := run(t, args...)
		if code != ExitOK && code != ExitFindings {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, stderr)
		}
		if n := tr.accepted.Load(); n != 0 {
			t.Fatalf("%v: %d connection(s) to the registry with registry access off", args, n)
		}
		if args[0] == "images" {
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil || len(recs) != 4 {
				t.Fatalf("%v: want a header and 3 references: %v\n%s", args, err, out)
			}
			for _, r := range recs[1:] {
				if r[2] != Unchecked {
					t.Errorf("%v: %s has status %q, want %q", args, r[0], r[2], Unchecked)
				}
			}
		}
	}

	// The control: registry access on, the same bundle does reach the listener.
	start := time.Now()
	out, stderr, code := run(t, "images", "--from", bundle, "--registry-timeout", "2s", "-o", "csv")
	if code != ExitOK {
		t.Fatalf("images with registry access: exit %d\n%s\n%s", code, out, stderr)
	}
	if tr.accepted.Load() == 0 {
		t.Fatalf("the control run made no connection either: the trap proves nothing\n%s", out)
	}
	if !strings.Contains(out, ",unreachable,") {
		t.Errorf("a registry that hangs up should make the references unreachable:\n%s", out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a registry that hangs up took %s to give up on", took)
	}
}

func TestImagesAndPreflightUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"images", "--from", "../../testdata/scenarios/suc/image-missing-positive", "-o", "yaml"}, "unknown output format"},
		{[]string{"preflight", "--from", "../../testdata/scenarios/suc/image-missing-positive", "--target-version", "1.x"}, "--target-version"},
		{[]string{"images", "--from", "../../testdata/scenarios/suc/image-missing-positive", "--target-version", "v1.31"}, "--target-version"},
		{[]string{"preflight", "--from", "../../testdata/scenarios/suc/image-missing-positive", "--insecure-registry", "http://mirror.local:5000"}, "--insecure-registry"},
		{[]string{"images", "--from", "does-not-exist"}, "--from does-not-exist"},
	} {
		_, stderr, code := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", c.args, code, stderr, c.want)
		}
	}
}

// Preflight on the scenario of a missing Plan image, registry off: no-go on the pull errors,
// exit 3; on its healthy look-alike: go, exit 0.
func TestPreflightOfflineVerdicts(t *testing.T) {
	out, _, code := run(t, "preflight", "--from", "../../testdata/scenarios/suc/image-missing-positive", "--offline-registry")
	if code != ExitFindings || !strings.Contains(out, "NO-GO") || !strings.Contains(out, "suc/image-missing") {
		t.Errorf("positive: exit %d\n%s", code, out)
	}
	out, _, code = run(t, "preflight", "--from", "../../testdata/scenarios/suc/image-missing-healthy", "--offline-registry")
	if code != ExitOK || !strings.Contains(out, "preflight: GO") {
		t.Errorf("healthy: exit %d\n%s", code, out)
	}
}
