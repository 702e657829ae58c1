// Package testenv runs a real kube-apiserver and etcd for tests and demos, with the Fleet and
// system-upgrade-controller CRDs installed, and replays offline bundles into it.
//
// The two binaries are built from the Go module proxy on first use (nothing is downloaded
// from anywhere else) and cached under the user cache directory, keyed by version.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Versions of the binaries the environment runs. The staging modules of Kubernetes are
// published as v0.<minor>.<patch> of the same release.
const (
	KubernetesVersion = "v1.37.2"
	stagingVersion    = "v0.37.2"
	EtcdVersion       = "v3.7.3"
)

const (
	kubernetesModule = "k8s.io/kubernetes"
	apiserverPkg     = "k8s.io/kubernetes/cmd/kube-apiserver"
	etcdModule       = "go.etcd.io/etcd/server/v3" // its root package is the etcd main
	binDirEnv        = "UNSTICK_TESTENV_BIN_DIR"   // use prebuilt kube-apiserver and etcd from here
)

var (
	binMu                 sync.Mutex
	binAPIServer, binEtcd string
)

// Binaries returns the paths of kube-apiserver and etcd, building them once per machine into
// the user cache directory. Parallel test processes wait on a file lock instead of building
// twice. A missing Go toolchain or a failed build is an error, so tests fail loudly.
func Binaries(ctx context.Context) (apiserver, etcd string, err error) {
	binMu.Lock()
	defer binMu.Unlock()
	if binAPIServer != "" {
		return binAPIServer, binEtcd, nil
	}
	if dir := os.Getenv(binDirEnv); dir != "" {
		a, e := filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd")
		if !isExecutable(a) || !isExecutable(e) {
			return "", "", fmt.Errorf("testenv: %s=%s does not hold executable kube-apiserver and etcd", binDirEnv, dir)
		}
		binAPIServer, binEtcd = a, e
		return a, e, nil
	}
	dir, err := BinaryDir()
	if err != nil {
		return "", "", err
	}
	a, e := filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "etcd")
	if !built(dir) {
		if err := buildLocked(ctx, dir); err != nil {
			return "", "", err
		}
	}
	binAPIServer, binEtcd = a, e
	return a, e, nil
}

// binariesReady reports whether Binaries would return at once.
func binariesReady() bool {
	if os.Getenv(binDirEnv) != "" {
		return true
	}
	dir, err := BinaryDir()
	return err == nil && built(dir)
}

// BinaryDir is where the binaries of this version live.
func BinaryDir() (string, error) {
	return keyedDir("k8s-" + KubernetesVersion + "-etcd-" + EtcdVersion)
}

const stampFile = "complete"

// newBuildDir makes a throwaway build directory next to dir, has write put the build module's
// go.mod in it, and returns a runner of go commands there and the function removing it.
func newBuildDir(ctx context.Context, dir string, start time.Time, write func(goBin, work string, run func(args ...string) ([]byte, error)) error) (run func(args ...string) ([]byte, error), work string, cleanup func(), err error) {
	goBin, err := goTool()
	if err != nil {
		return nil, "", nil, err
	}
	work, err = os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return nil, "", nil, fmt.Errorf("testenv: creating build directory: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(work) }
	run = func(args ...string) ([]byte, error) {
		return runGo(ctx, goBin, work, start, args...)
	}
	if err := write(goBin, work, run); err != nil {
		cleanup()
		return nil, "", nil, err
	}
	return run, work, cleanup, nil
}

func built(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, stampFile))
	return err == nil && isExecutable(filepath.Join(dir, "kube-apiserver")) && isExecutable(filepath.Join(dir, "etcd"))
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// buildLocked takes the machine-wide lock for dir and builds unless another process did so
// while we waited.
func buildLocked(ctx context.Context, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("testenv: creating cache directory: %w", err)
	}
	unlock, err := buildLock(ctx, dir+".lock", "kube-apiserver and etcd", dir)
	if err != nil {
		return fmt.Errorf("testenv: locking %s.lock: %w", dir, err)
	}
	defer unlock()
	if built(dir) {
		return nil
	}
	removeStaleBuilds(filepath.Dir(dir))
	return build(ctx, dir)
}

// removeStaleBuilds removes build directories a killed process left (a test that timed out
// during its first build); a day is far beyond any build still running from one.
func removeStaleBuilds(parent string) {
	old, _ := filepath.Glob(filepath.Join(parent, "build-*"))
	for _, d := range old {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			_ = os.RemoveAll(d)
		}
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testenv: "+format+"\n", args...)
}

// build builds kube-apiserver and etcd in the test bed's module (bedmodule.go) next to dir.
func build(ctx context.Context, dir string) error {
	if err := refuseBuild("kube-apiserver and etcd", dir); err != nil {
		return err
	}
	start := time.Now()
	logf("building kube-apiserver %s and etcd %s into %s from the Go module proxy (first use only: about 8 minutes and 2.5 GiB of memory with cold Go caches)",
		KubernetesVersion, EtcdVersion, dir)
	run, work, cleanup, err := newBedModule(ctx, dir, start)
	if err != nil {
		return err
	}
	defer cleanup()
	outDir := filepath.Join(work, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if _, err := run("build", "-trimpath", "-ldflags", versionLDFlags(), "-o", outDir+string(filepath.Separator), apiserverPkg, etcdModule); err != nil {
		return fmt.Errorf("testenv: building kube-apiserver and etcd: %w", err)
	}
	// go build names a /vN package's binary after the element before the major version.
	names := map[string]string{"kube-apiserver": "kube-apiserver", "server": "etcd"}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	for from, to := range names {
		if err := os.Rename(filepath.Join(outDir, from+exeSuffix()), filepath.Join(dir, to+exeSuffix())); err != nil {
			return fmt.Errorf("testenv: installing %s: %w", to, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(KubernetesVersion+" "+EtcdVersion+"\n"), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	logf("built kube-apiserver and etcd in %s", time.Since(start).Round(time.Second))
	return nil
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// versionLDFlags stamps the binary with its release, as Kubernetes' own build does, so the
// server reports v1.37.2 in /version rather than a development version.
func versionLDFlags() string {
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")[1]
	var b strings.Builder
	b.WriteString("-s -w")
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		fmt.Fprintf(&b, " -X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean",
			pkg, KubernetesVersion, pkg, pkg, minor, pkg)
	}
	return b.String()
}

var stagingReplace = regexp.MustCompile(`(?m)^\s*(?:replace\s+)?(k8s\.io/[\w.\-/]+)\s*=>\s*\./staging/`)

// stagingModules lists the module paths Kubernetes' go.mod replaces with ./staging directories.
func stagingModules(gomod []byte) []string {
	var mods []string
	for _, m := range stagingReplace.FindAllSubmatch(gomod, -1) {
		mods = append(mods, string(m[1]))
	}
	sort.Strings(mods)
	return mods
}

func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"+exeSuffix()); isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("testenv: the Go toolchain (go) is not in PATH; it is needed to build kube-apiserver and etcd for the test environment")
}

// runGo runs the go command in the build module, relaying its stderr (module downloads,
// errors) with a prefix and saying every half minute that it is still working.
func runGo(ctx context.Context, goBin, dir string, start time.Time, args ...string) ([]byte, error) {
	return runGoIn(ctx, goBin, dir, start, "-mod=mod", args...)
}

// runGoIn is runGo with GOFLAGS set to goflags.
func runGoIn(ctx context.Context, goBin, dir string, start time.Time, goflags string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS="+goflags,
		"CGO_ENABLED=0",
	)
	var stdout bytes.Buffer
	tail := &tailWriter{max: 64 << 10}
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(tail, &prefixWriter{w: os.Stderr, prefix: "testenv: go: "})
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				logf("still building (go %s, %s elapsed)", args[0], time.Since(start).Round(time.Second))
			}
		}
	}()
	err := cmd.Run()
	close(done)
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail.String())
	}
	return stdout.Bytes(), nil
}

type tailWriter struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailWriter) String() string { t.mu.Lock(); defer t.mu.Unlock(); return string(t.buf) }

type prefixWriter struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	partial []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := p.partial[:i]
		line = bytes.TrimPrefix(line, []byte("go: "))
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, line)
		p.partial = p.partial[i+1:]
	}
	return len(b), nil
}
