package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/unstick-dev/unstick"
)

// The test bed's one module graph.
//
// Every program of the test bed — kube-apiserver and etcd, kubectl, kube-controller-manager and
// kube-scheduler, KWOK, the system-upgrade-controller and Fleet — is built from one throwaway
// module that requires them all and, besides, every module unstick's own go.mod requires, at
// unstick's version. Go's build cache keys a compiled package by its source and by the exact
// versions of everything it imports, so only in one graph does a package compiled for one
// program serve the others and the test binaries: k8s.io/api, client-go, apimachinery,
// golang.org/x/... compile once per machine instead of three times (in three graphs they were
// about 200 MB of Go source to compile on a fresh machine; in one, about 110 MB).
//
// That holds only where the versions agree. Where a program of the bed needs a module newer
// than unstick's go.mod asks for, the Go module system takes the newer one here, and the suite
// compiles that module and everything importing it twice: TestBedModuleKeepsTheProjectVersions
// names the modules to raise in go.mod.

// ProjectModule is unstick's module path: the go.mod whose requirements the bed module adopts.
const ProjectModule = "github.com/unstick-dev/unstick"

// bedRecipe changes whenever the way the bed module is written changes, so programs built the
// old way are not taken for the new.
const bedRecipe = "bed-module-1"

// bedOwn are modules the bed takes at the versions its programs require, not at unstick's:
// Fleet v0.16.0 and KWOK are released on controller-runtime v0.24, and unstick's newer one
// would change how the real controllers run, for a few hundred kilobytes of shared source.
var bedOwn = []string{"sigs.k8s.io/controller-runtime"}

// A modVersion is one requirement: a module at a version.
type modVersion struct{ Path, Version string }

// bedMains are the test bed's programs as `go get` arguments: every package any build of the
// bed makes, so that each build resolves the same graph.
func bedMains() []string {
	mains := []string{apiserverPkg + "@" + KubernetesVersion, etcdModule + "@" + EtcdVersion, kubectlPkg + "@" + KubernetesVersion}
	for _, p := range KubeControllers.Pkgs {
		mains = append(mains, p+"@"+KubernetesVersion)
	}
	for _, m := range Controllers.Modules {
		for _, p := range m.Pkgs {
			mains = append(mains, m.Path+strings.TrimPrefix(p, ".")+"@"+m.Version)
		}
	}
	return mains
}

var (
	projectOnce sync.Once
	projectReqs []modVersion
	projectErr  error
)

// projectRequires returns the requirements of unstick's go.mod as the running program was
// built with it (the module's root package embeds the file). No process looks for go.mod on
// disk, so each computes the same graph key whatever its working directory: the detached half
// of hack/testenv.sh start runs in the environment's directory, a benchmark anywhere.
func projectRequires() ([]modVersion, error) {
	projectOnce.Do(func() {
		projectReqs, projectErr = parseRequires([]byte(unstick.GoMod()))
	})
	return projectReqs, projectErr
}

var moduleLine = regexp.MustCompile(`(?m)^\s*module\s+"?([^\s"]+)"?\s*$`)

func modulePath(gomod []byte) string {
	if m := moduleLine.FindSubmatch(gomod); m != nil {
		return string(m[1])
	}
	return ""
}

// parseRequires reads the requirements of unstick's go.mod text with `go mod edit -json`, on a
// copy in a directory of its own.
func parseRequires(gomod []byte) ([]modVersion, error) {
	if got := modulePath(gomod); got != ProjectModule {
		return nil, fmt.Errorf("testenv: the embedded go.mod is module %q, not %s", got, ProjectModule)
	}
	tmp, err := os.MkdirTemp("", "unstick-gomod-")
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	defer os.RemoveAll(tmp)
	f := filepath.Join(tmp, "go.mod")
	if err := os.WriteFile(f, gomod, 0o600); err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	return readRequires(f)
}

// readRequires reads a go.mod's requirements with `go mod edit -json`.
func readRequires(gomod string) ([]modVersion, error) {
	goBin, err := goTool()
	if err != nil {
		return nil, err
	}
	out, err := runGoIn(context.Background(), goBin, filepath.Dir(gomod), time.Now(), "", "mod", "edit", "-json", gomod)
	if err != nil {
		return nil, fmt.Errorf("testenv: reading unstick's go.mod: %w", err)
	}
	var gm struct{ Require []modVersion }
	if err := json.Unmarshal(out, &gm); err != nil {
		return nil, fmt.Errorf("testenv: reading unstick's go.mod: %w", err)
	}
	sort.Slice(gm.Require, func(i, j int) bool { return gm.Require[i].Path < gm.Require[j].Path })
	return gm.Require, nil
}

// graphKeyEnv carries the graph key from a process to the one it detaches (Detach), which
// then uses its parent's cache directories instead of computing them again.
const graphKeyEnv = "UNSTICK_TESTENV_GRAPH_KEY"

var validGraphKey = regexp.MustCompile(`^[0-9a-f]{10}$`)

var (
	keyOnce sync.Once
	bedKey  string
	keyErr  error
)

// graphKey names the bed module's graph in the cache directories' names: the recipe, every
// program's version and unstick's requirements. A change to any of them builds the bed again
// (mostly from cached packages) instead of using programs compiled in another graph. A
// process Detach started takes its parent's key.
func graphKey() (string, error) {
	keyOnce.Do(func() {
		if k := os.Getenv(graphKeyEnv); k != "" {
			if !validGraphKey.MatchString(k) {
				keyErr = fmt.Errorf("testenv: %s=%q is not a graph key", graphKeyEnv, k)
			}
			bedKey = k
			return
		}
		bedKey, keyErr = computeGraphKey()
	})
	return bedKey, keyErr
}

// computeGraphKey hashes what graphKey names. Its inputs and their order are the cache's
// names on every machine: changing them rebuilds every program of the bed.
func computeGraphKey() (string, error) {
	reqs, err := projectRequires()
	if err != nil {
		return "", fmt.Errorf("%w (the test bed's cache key needs them)", err)
	}
	h := sha256.New()
	fmt.Fprintln(h, bedRecipe, KubernetesVersion, stagingVersion, EtcdVersion)
	for _, m := range Controllers.Modules {
		fmt.Fprintln(h, m.Path, m.Version)
	}
	for _, r := range reqs {
		fmt.Fprintln(h, r.Path, r.Version)
	}
	return hex.EncodeToString(h.Sum(nil))[:10], nil
}

// newBedModule makes a throwaway build directory next to dir holding the bed module, resolved
// (see writeBedModule), and returns a runner of go commands in it and the function removing it.
func newBedModule(ctx context.Context, dir string, start time.Time) (run func(args ...string) ([]byte, error), work string, cleanup func(), err error) {
	return newBuildDir(ctx, dir, start, func(goBin, work string, run func(args ...string) ([]byte, error)) error {
		gomod, err := bedGoMod(ctx, goBin, work, start)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(work, "go.mod"), gomod, 0o644); err != nil {
			return fmt.Errorf("testenv: writing the build module: %w", err)
		}
		if _, err := run(append([]string{"get"}, bedMains()...)...); err != nil {
			return fmt.Errorf("testenv: resolving the test bed's modules: %w", err)
		}
		return nil
	})
}

// bedGoMod writes the bed module's go.mod:
//   - it requires k8s.io/kubernetes, etcd's server module, KWOK, the system-upgrade-controller
//     and Fleet at their releases, and every module unstick's go.mod requires at its version;
//   - Kubernetes' go.mod replaces each k8s.io staging module with ./staging/src/..., which a
//     module requiring k8s.io/kubernetes must point at the published staging modules: they are
//     replaced at stagingVersion (Fleet's own replaces pin the previous minor, which
//     Kubernetes' commands do not build with);
//   - the union of KWOK's, SUC's and Fleet's other replace directives, with each nested module
//     (Fleet's pkg/apis) at the same release.
func bedGoMod(ctx context.Context, goBin, work string, start time.Time) ([]byte, error) {
	out, err := runGo(ctx, goBin, work, start, "mod", "download", "-json", kubernetesModule+"@"+KubernetesVersion)
	if err != nil {
		return nil, fmt.Errorf("testenv: downloading %s@%s: %w", kubernetesModule, KubernetesVersion, err)
	}
	var kmod struct{ GoMod, Error string }
	if err := json.Unmarshal(out, &kmod); err != nil || kmod.GoMod == "" {
		return nil, fmt.Errorf("testenv: locating the go.mod of %s@%s: %v %s", kubernetesModule, KubernetesVersion, err, kmod.Error)
	}
	kgomod, err := os.ReadFile(kmod.GoMod)
	if err != nil {
		return nil, fmt.Errorf("testenv: reading %s: %w", kmod.GoMod, err)
	}
	staging := stagingModules(kgomod)
	if len(staging) == 0 {
		return nil, fmt.Errorf("testenv: %s has no ./staging replace directives; the build recipe needs updating", kmod.GoMod)
	}
	replaces, nested, err := moduleReplaces(ctx, goBin, work, start, Controllers.Modules)
	if err != nil {
		return nil, err
	}
	project, err := projectRequires()
	if err != nil {
		return nil, err
	}
	return composeBedGoMod(project, staging, replaces, nested), nil
}

// composeBedGoMod is bedGoMod's text, from what it read.
func composeBedGoMod(project []modVersion, staging []string, replaces map[string]modVersion, nested []modVersion) []byte {
	require := map[string]string{}
	for _, r := range project {
		// A module another one replaces is left to that replace, and bedOwn to the bed's
		// programs; unstick's own path and Kubernetes are required below.
		if _, replaced := replaces[r.Path]; (replaced && !slices.Contains(staging, r.Path)) || r.Path == ProjectModule || r.Path == kubernetesModule || slices.Contains(bedOwn, r.Path) {
			continue
		}
		require[r.Path] = r.Version
	}
	require[kubernetesModule] = KubernetesVersion
	require[etcdModule] = EtcdVersion
	for _, m := range Controllers.Modules {
		require[m.Path] = m.Version
	}
	for _, n := range nested {
		require[n.Path] = n.Version
	}
	replace := map[string]modVersion{}
	for old, to := range replaces {
		if old != kubernetesModule && !slices.Contains(staging, old) {
			replace[old] = to
		}
	}
	for _, s := range staging {
		replace[s] = modVersion{s, stagingVersion}
	}
	var b bytes.Buffer
	b.WriteString("// Throwaway module written by unstick's internal/testenv to build the test bed's programs.\n")
	b.WriteString("module unstick.invalid/testbed-build\n\ngo 1.26.0\n\nrequire (\n")
	for _, p := range slices.Sorted(maps.Keys(require)) {
		fmt.Fprintf(&b, "\t%s %s\n", p, require[p])
	}
	b.WriteString(")\n\nreplace (\n")
	for _, p := range slices.Sorted(maps.Keys(replace)) {
		fmt.Fprintf(&b, "\t%s => %s %s\n", p, replace[p].Path, replace[p].Version)
	}
	b.WriteString(")\n")
	return b.Bytes()
}
