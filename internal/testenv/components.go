package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A Component is a program of the test bed (internal/testbed) built from the Go module proxy
// at a pinned version, like kube-apiserver: once per machine, into the user cache directory,
// under a file lock so parallel test processes wait instead of building twice.
type Component struct {
	// Name names the cache directory (<Name>-<Version>) and the build's log lines.
	Name    string
	Module  string
	Version string
	// Pkgs are the packages to build: "./cmd/x" relative to the module's root, or, for a
	// Kubernetes component, full import paths in k8s.io/kubernetes.
	Pkgs []string
	// Bins are the names of the programs the build installs, one per package.
	Bins []string
	// Kubernetes components build from the throwaway module of kube-apiserver (KubernetesVersion,
	// with Kubernetes' ./staging replaces pointed at the published staging modules). Others
	// build as their own main module, with their own go.mod, replaces and go.sum, as their
	// release builds do.
	Kubernetes bool
	// VersionVars are the variables the project's release build stamps with its version.
	VersionVars []string
	// Nested are directories of the module that are modules of their own, which its go.mod
	// replaces with the directory (github.com/rancher/fleet/pkg/apis => ./pkg/apis). The
	// module proxy's zip of the outer module leaves them out, so the build puts in each the
	// nested module at the same release: its own tag, or else the pseudo-version of the
	// outer tag's commit.
	Nested []string
}

// Versions of the test bed's programs besides kube-apiserver and etcd.
const (
	KWOKVersion = "v0.8.0"
)

// The test bed's programs. kube-controller-manager and kube-scheduler come from the same release
// as kube-apiserver; the system-upgrade-controller and Fleet from the versions whose CRDs
// the environment serves (SUCVersion, FleetVersion).
var (
	// One go build makes both: they share most of their packages, which two concurrent
	// builds would each compile.
	KubeControllers = Component{Name: "kube-controllers", Module: kubernetesModule, Version: KubernetesVersion,
		Pkgs: []string{"k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler"},
		Bins: []string{"kube-controller-manager", "kube-scheduler"}, Kubernetes: true}
	KWOK = Component{Name: "kwok", Module: "sigs.k8s.io/kwok", Version: KWOKVersion,
		Pkgs: []string{"./cmd/kwok"}, Bins: []string{"kwok"}} // its version is a constant
	SystemUpgradeController = Component{Name: "system-upgrade-controller", Module: SUCModule, Version: SUCVersion,
		Pkgs: []string{"."}, Bins: []string{"system-upgrade-controller"},
		VersionVars: []string{SUCModule + "/pkg/version.Version"}, Nested: []string{"pkg/apis"}}
	FleetComponent = Component{Name: "fleet", Module: FleetModule, Version: FleetVersion,
		Pkgs: []string{"./cmd/fleetcontroller", "./cmd/fleetagent"}, Bins: []string{"fleetcontroller", "fleetagent"},
		VersionVars: []string{FleetModule + "/pkg/version.Version"}, Nested: []string{"pkg/apis"}}
)

// Components lists every program of the test bed, for `hack/testbed.sh binaries`.
func Components() []Component {
	return []Component{KubeControllers, KWOK, SystemUpgradeController, FleetComponent}
}

var (
	componentMu    sync.Mutex
	componentPaths = map[string]map[string]string{}
)

// Dir is where the component's programs are kept.
func (c Component) Dir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testenv: no user cache directory to keep %s in: %w", c.Name, err)
	}
	return filepath.Join(base, "unstick", "testenv", c.Name+"-"+c.Version), nil
}

// Build returns the paths of the component's programs by name, building them first if this
// machine has not. With UNSTICK_TESTENV_BIN_DIR set, programs found there are used as they are.
func (c Component) Build(ctx context.Context) (map[string]string, error) {
	componentMu.Lock()
	if p, ok := componentPaths[c.Name]; ok {
		componentMu.Unlock()
		return p, nil
	}
	componentMu.Unlock()
	if dir := os.Getenv(binDirEnv); dir != "" {
		if p, ok := c.paths(dir); ok {
			return c.remember(p), nil
		}
	}
	dir, err := c.Dir()
	if err != nil {
		return nil, err
	}
	if p, ok := c.installed(dir); ok {
		return c.remember(p), nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("testenv: creating cache directory: %w", err)
	}
	unlock, err := lockFile(ctx, dir+".lock", func() {
		logf("another process is building %s into %s; waiting for it", c.Name, dir)
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: locking %s.lock: %w", dir, err)
	}
	defer unlock()
	if p, ok := c.installed(dir); ok {
		return c.remember(p), nil
	}
	removeStaleBuilds(filepath.Dir(dir))
	if err := c.build(ctx, dir); err != nil {
		return nil, err
	}
	p, ok := c.installed(dir)
	if !ok {
		return nil, fmt.Errorf("testenv: building %s left no %s in %s", c.Name, strings.Join(c.Bins, ", "), dir)
	}
	return c.remember(p), nil
}

// BuildAll builds the components two at a time (a go build is parallel already; two overlap
// one's downloads and link with the other's compiling) and returns every program by name.
func BuildAll(ctx context.Context, comps ...Component) (map[string]string, error) {
	type result struct {
		paths map[string]string
		err   error
	}
	results := make([]result, len(comps))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, c := range comps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p, err := c.Build(ctx)
			results[i] = result{p, err}
		}()
	}
	wg.Wait()
	all := map[string]string{}
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		for k, v := range r.paths {
			all[k] = v
		}
	}
	return all, nil
}

func (c Component) remember(p map[string]string) map[string]string {
	componentMu.Lock()
	defer componentMu.Unlock()
	componentPaths[c.Name] = p
	return p
}

func (c Component) paths(dir string) (map[string]string, bool) {
	p := map[string]string{}
	for _, b := range c.Bins {
		f := filepath.Join(dir, b+exeSuffix())
		if !isExecutable(f) {
			return nil, false
		}
		p[b] = f
	}
	return p, true
}

func (c Component) installed(dir string) (map[string]string, bool) {
	if _, err := os.Stat(filepath.Join(dir, stampFile)); err != nil {
		return nil, false
	}
	return c.paths(dir)
}

func (c Component) ldflags() string {
	if c.Kubernetes {
		return versionLDFlags()
	}
	var b strings.Builder
	b.WriteString("-s -w")
	for _, v := range c.VersionVars {
		fmt.Fprintf(&b, " -X %s=%s", v, c.Version)
	}
	return b.String()
}

func (c Component) build(ctx context.Context, dir string) error {
	start := time.Now()
	logf("building %s %s into %s from the Go module proxy (first use only; minutes with cold Go caches)", c.Name, c.Version, dir)
	var (
		run     func(args ...string) ([]byte, error)
		work    string
		cleanup func()
		err     error
	)
	pkgs := c.Pkgs
	if c.Kubernetes {
		run, work, cleanup, err = newBuildModule(ctx, dir, start)
		if err != nil {
			return err
		}
		defer cleanup()
		get := []string{"get"}
		for _, p := range c.Pkgs {
			get = append(get, p+"@"+c.Version)
		}
		if _, err := run(get...); err != nil {
			return fmt.Errorf("testenv: resolving modules for %s: %w", c.Name, err)
		}
	} else {
		goBin, err := goTool()
		if err != nil {
			return err
		}
		work, err = os.MkdirTemp(filepath.Dir(dir), "build-")
		if err != nil {
			return fmt.Errorf("testenv: creating build directory: %w", err)
		}
		defer os.RemoveAll(work)
		src, err := c.sourceTree(ctx, goBin, work, start)
		if err != nil {
			return err
		}
		// The module builds as its own main module, with its go.sum as released:
		// -mod=readonly never changes it.
		run = func(args ...string) ([]byte, error) {
			return runGoIn(ctx, goBin, src, start, "-mod=readonly", args...)
		}
	}
	outDir := filepath.Join(work, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	args := append([]string{"build", "-trimpath", "-ldflags", c.ldflags(), "-o", outDir + string(filepath.Separator)}, pkgs...)
	if _, err := run(args...); err != nil {
		return fmt.Errorf("testenv: building %s: %w", c.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	for _, b := range c.Bins {
		if err := os.Rename(filepath.Join(outDir, b+exeSuffix()), filepath.Join(dir, b+exeSuffix())); err != nil {
			return fmt.Errorf("testenv: installing %s: %w", b, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(c.Module+" "+c.Version+"\n"), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	logf("built %s in %s", c.Name, time.Since(start).Round(time.Second))
	return nil
}

// SourceDir returns the component's released source tree in the Go module cache (downloading
// it through the module proxy if needed), for the files a test bed reads from it: KWOK's
// default stages, Fleet's charts.
func (c Component) SourceDir(ctx context.Context) (string, error) {
	dirs, err := moduleDirs(ctx, c.Module+"@"+c.Version)
	if err != nil {
		return "", err
	}
	return dirs[c.Module], nil
}

type downloaded struct {
	Dir, Error, Info string
}

func download(ctx context.Context, goBin, work string, start time.Time, modVersion string) (downloaded, error) {
	var d downloaded
	out, err := runGo(ctx, goBin, work, start, "mod", "download", "-json", modVersion)
	if json.Unmarshal(out, &d) != nil || d.Dir == "" {
		return d, fmt.Errorf("testenv: downloading %s: %v %s", modVersion, err, d.Error)
	}
	return d, nil
}

// sourceTree copies the released module into work/src, with its nested modules put in, and
// returns that directory.
func (c Component) sourceTree(ctx context.Context, goBin, work string, start time.Time) (string, error) {
	outer, err := download(ctx, goBin, work, start, c.Module+"@"+c.Version)
	if err != nil {
		return "", err
	}
	src := filepath.Join(work, "src")
	if len(c.Nested) == 0 {
		return outer.Dir, nil // built in place: nothing to add
	}
	if err := copyTree(outer.Dir, src); err != nil {
		return "", fmt.Errorf("testenv: copying %s: %w", c.Module, err)
	}
	for _, n := range c.Nested {
		nested := c.Module + "/" + n
		d, err := download(ctx, goBin, work, start, nested+"@"+c.Version)
		if err != nil {
			pseudo, perr := pseudoVersion(outer.Info)
			if perr != nil {
				return "", fmt.Errorf("%w (and no pseudo-version for %s@%s: %v)", err, c.Module, c.Version, perr)
			}
			if d, err = download(ctx, goBin, work, start, nested+"@"+pseudo); err != nil {
				return "", err
			}
		}
		dst := filepath.Join(src, filepath.FromSlash(n))
		if err := os.RemoveAll(dst); err != nil {
			return "", err
		}
		if err := copyTree(d.Dir, dst); err != nil {
			return "", fmt.Errorf("testenv: copying %s: %w", nested, err)
		}
	}
	return src, nil
}

// pseudoVersion is the pseudo-version of the commit a release tag points at, from the
// module proxy's .info record of the tag (its time and the commit hash of its origin).
func pseudoVersion(infoFile string) (string, error) {
	data, err := os.ReadFile(infoFile)
	if err != nil {
		return "", err
	}
	var info struct {
		Time   time.Time
		Origin struct{ Hash string }
	}
	if err := json.Unmarshal(data, &info); err != nil {
		return "", fmt.Errorf("%s: %w", infoFile, err)
	}
	if info.Time.IsZero() || len(info.Origin.Hash) < 12 {
		return "", fmt.Errorf("%s records no time or commit", infoFile)
	}
	return "v0.0.0-" + info.Time.UTC().Format("20060102150405") + "-" + info.Origin.Hash[:12], nil
}

// copyTree copies the regular files under from (a read-only module cache directory) to to,
// writable.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}
