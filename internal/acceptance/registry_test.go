// Package acceptance runs unstick end to end against real peers. These tests start Debian's
// docker-registry (CNCF distribution 2.8) on a free loopback port; TestMain installs it with
// hack/deps.sh when it is missing and fails — never skips — when it cannot.
package acceptance

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/unstick-dev/unstick/internal/cli"
)

var registryBin string

func TestMain(m *testing.M) {
	out, err := exec.Command("bash", filepath.Join("..", "..", "hack", "deps.sh"), "docker-registry").Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + strings.TrimSpace(string(ee.Stderr))
		}
		fmt.Fprintf(os.Stderr, "FAIL: the acceptance tests need Debian's docker-registry and hack/deps.sh could not provide it: %s\n"+
			"Install it with 'apt-get install docker-registry' (as root) and run the tests again.\n", msg)
		os.Exit(1)
	}
	registryBin = strings.TrimSpace(string(out))
	os.Exit(m.Run())
}

// startRegistry runs docker-registry on 127.0.0.1 with its storage in a temporary directory,
// deletes enabled (so a tag can be garbage-collected as in the field reports).
func startRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "data"), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(registryBin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", registryBin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("docker-registry did not answer on %s within 20s: %v\n%s", addr, err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pushImage(t *testing.T, ref string, arch string) {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

func deleteTag(t *testing.T, ref string) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r)
	if err != nil {
		t.Fatal(err)
	}
	// distribution deletes manifests by digest; the tag goes with it.
	if err := remote.Delete(r.Context().Digest(desc.Digest.String())); err != nil {
		t.Fatalf("delete %s: %v", ref, err)
	}
	if _, err := remote.Head(r); err == nil {
		t.Fatalf("%s still resolves after its manifest was deleted", ref)
	}
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), code
}

// TestPreflightAgainstDistributionRegistry is the acceptance of issue 4: a registry on
// 127.0.0.1 holding kubectl:v1.30.3 for amd64 only and no kubectl:v1.29.9 (pushed, then
// deleted as a registry garbage collection would); a bundle with amd64 and arm64 nodes and a
// Plan using both tags. preflight says no-go, naming suc/image-missing for v1.29.9 and
// suc/image-arch for v1.30.3 on the arm64 nodes; images -o csv lists both with their status.
func TestPreflightAgainstDistributionRegistry(t *testing.T) {
	host := startRegistry(t)
	pushImage(t, host+"/rancher/kubectl:v1.30.3", "amd64")
	pushImage(t, host+"/rancher/system-upgrade-controller:v0.20.1", "amd64")
	pushImage(t, host+"/rancher/kubectl:v1.29.9", "amd64")
	deleteTag(t, host+"/rancher/kubectl:v1.29.9")

	bundle := writeBundle(t, host)
	missing, arch := host+"/rancher/kubectl:v1.29.9", host+"/rancher/kubectl:v1.30.3"

	// Table: the verdict and the Plan's incident, its root cause with the arm64 nodes named and
	// the missing image among its symptoms (the JSON below quotes the missing reference).
	out, stderr, code := run(t, "preflight", "--from", bundle, "--insecure-registry", host)
	t.Logf("preflight:\n%s", out)
	if code != cli.ExitFindings {
		t.Fatalf("exit %d, want %d (no-go)\nstdout:\n%s\nstderr:\n%s", code, cli.ExitFindings, out, stderr)
	}
	for _, want := range []string{"NO-GO", "suc/image-missing", "suc/image-arch", arch, "linux/arm64", "edge-arm-1", "edge-arm-2"} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight output lacks %q:\n%s", want, out)
		}
	}

	// JSON: the same, precisely.
	out, stderr, code = run(t, "preflight", "--from", bundle, "--insecure-registry", host, "-o", "json")
	if code != cli.ExitFindings {
		t.Fatalf("-o json: exit %d\n%s\n%s", code, out, stderr)
	}
	var res struct {
		Verdict  string `json:"verdict"`
		Registry string `json:"registry"`
		Blocking []struct {
			RootCause blockingFinding   `json:"rootCause"`
			Symptoms  []blockingFinding `json:"symptoms"`
		} `json:"blocking"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("preflight -o json: %v\n%s", err, out)
	}
	if res.Verdict != "no-go" || res.Registry != "checked" {
		t.Errorf("verdict %q registry %q, want no-go, checked", res.Verdict, res.Registry)
	}
	var sawMissing, sawArch bool
	var found []blockingFinding
	for _, b := range res.Blocking {
		found = append(append(found, b.RootCause), b.Symptoms...)
	}
	for _, f := range found {
		switch {
		case f.ID == "suc/image-missing" && strings.Contains(f.Summary, missing):
			sawMissing = true
		case f.ID == "suc/image-arch" && strings.Contains(f.Summary, arch):
			sawArch = true
			if !strings.Contains(f.Summary, "edge-arm-1") || !strings.Contains(f.Summary, "edge-arm-2") || strings.Contains(f.Summary, "edge-amd-1") {
				t.Errorf("suc/image-arch should name the arm64 nodes only: %s", f.Summary)
			}
		}
	}
	if !sawMissing || !sawArch {
		t.Errorf("blocking findings lack suc/image-missing for %s (%v) or suc/image-arch for %s (%v): %+v", missing, sawMissing, arch, sawArch, res.Blocking)
	}

	// CSV inventory: both references with their status.
	out, stderr, code = run(t, "images", "--from", bundle, "--insecure-registry", host, "-o", "csv")
	if code != cli.ExitOK {
		t.Fatalf("images: exit %d\n%s\n%s", code, out, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("images -o csv: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	rows := map[string][]string{}
	for _, r := range recs[1:] {
		rows[r[col["reference"]]] = r
	}
	if r := rows[missing]; r == nil || r[col["status"]] != "missing" {
		t.Errorf("images -o csv: %s should be listed as missing: %v\n%s", missing, r, out)
	}
	if r := rows[arch]; r == nil || r[col["status"]] != "ok" || r[col["platforms"]] != "linux/amd64" || r[col["lacking_platforms"]] != "linux/arm64" || r[col["digest"]] == "" {
		t.Errorf("images -o csv: %s should be ok, linux/amd64 only, lacking linux/arm64, with a digest: %v\n%s", arch, r, out)
	}

	// Unpinned and unknown tags stay out of a healthy answer: the same registry, the Plan moved
	// to the existing tag only and only amd64 nodes, is a go.
	healthy := writeHealthyBundle(t, host)
	out, stderr, code = run(t, "preflight", "--from", healthy, "--insecure-registry", host)
	if code != cli.ExitOK || !strings.Contains(out, "GO") || strings.Contains(out, "NO-GO") {
		t.Errorf("healthy bundle: exit %d, want 0 and GO\n%s\n%s", code, out, stderr)
	}
}

func writeBundle(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"unstick-bundle.yaml": bundleInfo,
		"nodes.yaml":          nodesYAML("edge-amd-1", "amd64") + nodesYAML("edge-arm-1", "arm64") + nodesYAML("edge-arm-2", "arm64"),
		"plans.yaml":          fmt.Sprintf(planYAML, host+"/rancher/kubectl:v1.29.9", host+"/rancher/kubectl", "v1.30.3"),
		"controller.yaml":     fmt.Sprintf(controllerYAML, host+"/rancher/system-upgrade-controller:v0.20.1", host+"/rancher/kubectl:v1.30.3"),
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeHealthyBundle(t *testing.T, host string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"unstick-bundle.yaml": bundleInfo,
		"nodes.yaml":          nodesYAML("edge-amd-1", "amd64") + nodesYAML("edge-amd-2", "amd64"),
		"plans.yaml":          fmt.Sprintf(planYAML, host+"/rancher/kubectl:v1.30.3", host+"/rancher/kubectl", "v1.30.3"),
		"controller.yaml":     fmt.Sprintf(controllerYAML, host+"/rancher/system-upgrade-controller:v0.20.1", host+"/rancher/kubectl:v1.30.3"),
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const bundleInfo = `apiVersion: unstick.dev/v1alpha1
kind: BundleInfo
collectedAt: '2026-11-28T09:30:00Z'
collector: unstick acceptance test
clusters:
- name: edge-mixed
  role: downstream
  server: https://10.30.0.10:6443
`

func nodesYAML(name, arch string) string {
	return fmt.Sprintf(`---
apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  labels:
    kubernetes.io/arch: %[2]s
    kubernetes.io/hostname: %[1]s
    kubernetes.io/os: linux
    node-role.kubernetes.io/worker: "true"
spec:
  providerID: k3s://%[1]s
status:
  allocatable: {cpu: "4", memory: 16082432Ki, pods: "110"}
  capacity: {cpu: "4", memory: 16082432Ki, pods: "110"}
  conditions:
  - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status, lastHeartbeatTime: "2026-11-28T09:29:00Z", lastTransitionTime: "2026-10-01T00:00:00Z"}
  nodeInfo: {architecture: %[2]s, operatingSystem: linux, kubeletVersion: v1.30.3+k3s1, containerRuntimeVersion: "containerd://1.7.23-k3s2"}
`, name, arch)
}

// planYAML: prepare with an explicit tag, upgrade untagged (SUC adds the Plan's version), cordon
// with the controller's kubectl image.
const planYAML = `apiVersion: upgrade.cattle.io/v1
kind: Plan
metadata:
  name: kubectl-tools
  namespace: system-upgrade
  creationTimestamp: "2026-11-27T09:00:00Z"
spec:
  concurrency: 1
  cordon: true
  nodeSelector:
    matchExpressions:
    - {key: node-role.kubernetes.io/worker, operator: In, values: ["true"]}
  serviceAccountName: system-upgrade
  prepare:
    image: %s
    args: [version, --client]
  upgrade:
    image: %s
    args: [version, --client]
  version: %s
status:
  latestVersion: v1.30.3
  latestHash: 8f0c2d6e4b1a9c7d5e3f1a0b2c4d6e8f0a1b3c5d7e9f1a2b3c4d5e6f
  conditions:
  - {type: LatestResolved, status: "True", reason: Version, lastUpdateTime: "2026-11-27T09:00:00Z"}
  - {type: Validated, status: "True", reason: PlanIsValid, lastUpdateTime: "2026-11-27T09:00:00Z"}
`

const controllerYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: system-upgrade-controller
  namespace: system-upgrade
spec:
  selector:
    matchLabels: {upgrade.cattle.io/controller: system-upgrade-controller}
  template:
    metadata:
      labels: {upgrade.cattle.io/controller: system-upgrade-controller}
    spec:
      serviceAccountName: system-upgrade
      containers:
      - name: system-upgrade-controller
        image: %s
        envFrom:
        - configMapRef: {name: default-controller-env}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: default-controller-env
  namespace: system-upgrade
data:
  SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE: %s
  SYSTEM_UPGRADE_JOB_ACTIVE_DEADLINE_SECONDS: "900"
`

// blockingFinding is a finding of a blocking incident in `unstick preflight -o json`.
type blockingFinding struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
	Object  struct{ Kind, Name string }
}
