package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Component is one or more programs of the test bed (internal/testbed) built from the Go
// module proxy at pinned versions, like kube-apiserver: once per machine, into the user cache
// directory, under a file lock so parallel test processes wait instead of building twice.
//
// A component is one go build. Programs that share most of their dependencies are one
// component, so those packages compile once: on a fresh 2-core machine compiling is what
// the test suite spends most of its first run on.
type Component struct {
	// Name names the cache directory (<Name>-<Version>) and the build's log lines.
	Name    string
	Version string
	// Kubernetes components build commands of k8s.io/kubernetes (Pkgs, full import paths,
	// installing Bins). Every component is built in the test bed's one module graph
	// (bedmodule.go), after kube-apiserver and etcd, so every package they share is compiled
	// once.
	Kubernetes bool
	Pkgs       []string
	Bins       []string
	// Modules are the released modules whose commands the component builds, each required at
	// its release with the union of their replace directives (see moduleReplaces).
	Modules []Module
}

// A Module is a released module of the test bed whose commands are built.
type Module struct {
	Path    string
	Version string
	// Pkgs are the commands to build: "./cmd/x" relative to the module's root, or ".".
	Pkgs []string
	// Bins are the names of the programs the build installs, one per package.
	Bins []string
	// VersionVars are the variables the project's release build stamps with its version.
	VersionVars []string
	// Nested are directories of the module that are modules of their own, which its go.mod
	// replaces with the directory (github.com/rancher/fleet/pkg/apis => ./pkg/apis). The
	// module proxy's zip of the outer module leaves them out, so the build requires each
	// nested module at the same release instead: its own tag, or else the pseudo-version of
	// the outer tag's commit.
	Nested []string
}

// Versions of the test bed's programs besides kube-apiserver and etcd.
const (
	KWOKVersion = "v0.8.0"
)

// The released modules of the test bed besides Kubernetes: the system-upgrade-controller and
// Fleet at the versions whose CRDs the environment serves (SUCVersion, FleetVersion).
var (
	KWOK = Module{Path: "sigs.k8s.io/kwok", Version: KWOKVersion,
		Pkgs: []string{"./cmd/kwok"}, Bins: []string{"kwok"}} // its version is a constant
	SystemUpgradeController = Module{Path: SUCModule, Version: SUCVersion,
		Pkgs: []string{"."}, Bins: []string{"system-upgrade-controller"},
		VersionVars: []string{SUCModule + "/pkg/version.Version"}, Nested: []string{"pkg/apis"}}
	Fleet = Module{Path: FleetModule, Version: FleetVersion,
		Pkgs: []string{"./cmd/fleetcontroller", "./cmd/fleetagent"}, Bins: []string{"fleetcontroller", "fleetagent"},
		VersionVars: []string{FleetModule + "/pkg/version.Version"}, Nested: []string{"pkg/apis"}}
)

// The test bed's components.
var (
	// kube-controller-manager and kube-scheduler, from the same release as kube-apiserver.
	KubeControllers = Component{Name: "kube-controllers", Version: KubernetesVersion, Kubernetes: true,
		Pkgs: []string{"k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler"},
		Bins: []string{"kube-controller-manager", "kube-scheduler"}}
	// KWOK, the system-upgrade-controller and Fleet, released on Kubernetes 1.36's client
	// libraries, built on the bed's 1.37 ones (bedmodule.go) with their own controller-runtime
	// and wrangler.
	Controllers = Component{Name: "controllers",
		Version: "kwok-" + KWOK.Version + "-suc-" + SystemUpgradeController.Version + "-fleet-" + Fleet.Version,
		Modules: []Module{KWOK, SystemUpgradeController, Fleet}}
)

// Components lists every component of the test bed, for `hack/testbed.sh binaries`.
func Components() []Component {
	return []Component{KubeControllers, Controllers}
}

// bins are the names of every program the component installs.
func (c Component) bins() []string {
	if c.Kubernetes {
		return c.Bins
	}
	var out []string
	for _, m := range c.Modules {
		out = append(out, m.Bins...)
	}
	return out
}

var (
	componentMu    sync.Mutex
	componentPaths = map[string]map[string]string{}
)

// Dir is where the component's programs are kept.
func (c Component) Dir() (string, error) {
	return keyedDir(c.Name + "-" + c.Version)
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
	// kube-apiserver's build first: every component is built in its module graph (see
	// bedmodule.go) and reuses most of its compiled packages; built side by side, the two
	// would compile them twice.
	if _, _, err := Binaries(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("testenv: creating cache directory: %w", err)
	}
	unlock, err := buildLock(ctx, dir+".lock", c.Name, dir)
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
	for _, b := range c.bins() {
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
	for _, m := range c.Modules {
		for _, v := range m.VersionVars {
			fmt.Fprintf(&b, " -X %s=%s", v, m.Version)
		}
	}
	return b.String()
}

func (c Component) build(ctx context.Context, dir string) error {
	if err := refuseBuild(c.Name, dir); err != nil {
		return err
	}
	start := time.Now()
	logf("building %s %s into %s from the Go module proxy (first use only; minutes with cold Go caches)", c.Name, c.Version, dir)
	run, work, cleanup, err := newBedModule(ctx, dir, start)
	if err != nil {
		return err
	}
	defer cleanup()
	pkgs := c.Pkgs
	if !c.Kubernetes {
		pkgs = nil
		for _, m := range c.Modules {
			for _, p := range m.Pkgs {
				pkgs = append(pkgs, m.Path+strings.TrimPrefix(p, "."))
			}
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
	for _, b := range c.bins() {
		if err := os.Rename(filepath.Join(outDir, b+exeSuffix()), filepath.Join(dir, b+exeSuffix())); err != nil {
			return fmt.Errorf("testenv: installing %s: %w", b, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, stampFile), []byte(c.Name+" "+c.Version+"\n"), 0o644); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	logf("built %s in %s", c.Name, time.Since(start).Round(time.Second))
	return nil
}

// moduleReplaces reads the released modules' go.mod files and returns the union of their
// replace directives (the higher version where two replace the same module with different
// versions of it) and each nested module at the same release: its own tag, or else the
// pseudo-version of the outer tag's commit.
func moduleReplaces(ctx context.Context, goBin, work string, start time.Time, mods []Module) (map[string]modVersion, []modVersion, error) {
	type target struct{ path, version, from string }
	replace := map[string]target{}
	add := func(old string, t target) error {
		prev, ok := replace[old]
		if !ok {
			replace[old] = t
			return nil
		}
		if prev.path != t.path {
			return fmt.Errorf("testenv: %s replaces %s with %s, %s with %s: they cannot be built together", prev.from, old, prev.path, t.from, t.path)
		}
		switch cmp, ok := compareVersions(prev.version, t.version); {
		case !ok:
			return fmt.Errorf("testenv: %s replaces %s with %s, %s with %s: they cannot be built together", prev.from, old, prev.version, t.from, t.version)
		case cmp < 0:
			replace[old] = t
		}
		return nil
	}
	var nestedReqs []modVersion
	for _, m := range mods {
		outer, err := download(ctx, goBin, work, start, m.Path+"@"+m.Version)
		if err != nil {
			return nil, nil, err
		}
		out, err := runGo(ctx, goBin, work, start, "mod", "edit", "-json", outer.GoMod)
		if err != nil {
			return nil, nil, fmt.Errorf("testenv: reading %s: %w", outer.GoMod, err)
		}
		var gm struct {
			Replace []struct {
				Old, New struct{ Path, Version string }
			}
		}
		if err := json.Unmarshal(out, &gm); err != nil {
			return nil, nil, fmt.Errorf("testenv: reading %s: %w", outer.GoMod, err)
		}
		for _, r := range gm.Replace {
			if strings.HasPrefix(r.New.Path, ".") {
				if !slices.Contains(m.Nested, strings.TrimPrefix(r.New.Path, "./")) {
					return nil, nil, fmt.Errorf("testenv: %s@%s replaces %s with the directory %s, which its module zip leaves out; list it under Nested", m.Path, m.Version, r.Old.Path, r.New.Path)
				}
				continue
			}
			if err := add(r.Old.Path, target{r.New.Path, r.New.Version, m.Path}); err != nil {
				return nil, nil, err
			}
		}
		for _, n := range m.Nested {
			nested := m.Path + "/" + n
			v := m.Version
			if _, err := download(ctx, goBin, work, start, nested+"@"+v); err != nil {
				pseudo, perr := pseudoVersion(outer.Info)
				if perr != nil {
					return nil, nil, fmt.Errorf("%w (and no pseudo-version for %s@%s: %v)", err, m.Path, m.Version, perr)
				}
				if _, err := download(ctx, goBin, work, start, nested+"@"+pseudo); err != nil {
					return nil, nil, err
				}
				v = pseudo
			}
			if err := add(nested, target{nested, v, m.Path}); err != nil {
				return nil, nil, err
			}
			nestedReqs = append(nestedReqs, modVersion{nested, v})
		}
	}
	out := make(map[string]modVersion, len(replace))
	for old, t := range replace {
		out[old] = modVersion{t.path, t.version}
	}
	return out, nestedReqs, nil
}

// compareVersions orders two release versions vMAJOR.MINOR.PATCH; ok is false for anything
// else (pre-releases, pseudo-versions), which a build of several modules does not guess at.
func compareVersions(a, b string) (cmp int, ok bool) {
	parse := func(v string) ([3]int, bool) {
		var n [3]int
		parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
		if !strings.HasPrefix(v, "v") || len(parts) != 3 {
			return n, false
		}
		for i, p := range parts {
			x, err := strconv.Atoi(p)
			if err != nil || x < 0 {
				return n, false
			}
			n[i] = x
		}
		return n, true
	}
	if a == b {
		return 0, true
	}
	x, okA := parse(a)
	y, okB := parse(b)
	if !okA || !okB {
		return 0, false
	}
	for i := range x {
		if x[i] != y[i] {
			if x[i] < y[i] {
				return -1, true
			}
			return 1, true
		}
	}
	return 0, true
}

// SourceDir returns the module's released source tree in the Go module cache (downloading it
// through the module proxy if needed), for the files a test bed reads from it: KWOK's default
// stages, Fleet's charts.
func (m Module) SourceDir(ctx context.Context) (string, error) {
	dirs, err := moduleDirs(ctx, m.Path+"@"+m.Version)
	if err != nil {
		return "", err
	}
	return dirs[m.Path], nil
}

type downloaded struct {
	Dir, GoMod, Error, Info string
}

func download(ctx context.Context, goBin, work string, start time.Time, modVersion string) (downloaded, error) {
	var d downloaded
	out, err := runGo(ctx, goBin, work, start, "mod", "download", "-json", modVersion)
	if json.Unmarshal(out, &d) != nil || d.Dir == "" {
		return d, fmt.Errorf("testenv: downloading %s: %v %s", modVersion, err, d.Error)
	}
	return d, nil
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
