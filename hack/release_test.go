// Package hack holds the project's scripts; this test runs the release build for the host
// platform and checks what it produces: a static, version-stamped binary, an archive with
// the files the krew manifest names, checksums, and a rendered krew manifest.
package hack

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// The manifest template covers exactly the targets release.sh builds, each with a bin that
// its archive holds.
func TestKrewManifestMatchesReleaseTargets(t *testing.T) {
	script, err := os.ReadFile("release.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^all_targets="([^"]+)"`).FindSubmatch(script)
	if m == nil {
		t.Fatal("release.sh: no all_targets line")
	}
	targets := strings.Fields(string(m[1]))
	tmpl, err := os.ReadFile("../deploy/krew/unstick.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rendered := regexp.MustCompile(`\{\{SHA256_[a-z0-9_]+\}\}`).ReplaceAllString(strings.ReplaceAll(string(tmpl), "{{VERSION}}", "v1.2.3"), strings.Repeat("a", 64))
	var p krewPlugin
	if err := yaml.UnmarshalStrict([]byte(rendered), &p); err != nil {
		t.Fatalf("the krew manifest is not a krew Plugin: %v", err)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "unstick" || p.Spec.Version != "v1.2.3" || p.Spec.ShortDescription == "" {
		t.Errorf("manifest header: %+v", p)
	}
	if len(p.Spec.Platforms) != len(targets) {
		t.Errorf("%d platforms, release.sh builds %d targets", len(p.Spec.Platforms), len(targets))
	}
	for i, pl := range p.Spec.Platforms {
		if i >= len(targets) {
			break
		}
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		if os+"/"+arch != targets[i] {
			t.Errorf("platform %d is %s/%s, release.sh builds %s", i, os, arch, targets[i])
		}
		if want := "unstick_v1.2.3_" + os + "_" + arch + ".tar.gz"; !strings.HasSuffix(pl.URI, "/v1.2.3/"+want) {
			t.Errorf("%s/%s: uri %s, want …/v1.2.3/%s", os, arch, pl.URI, want)
		}
		exe := "unstick"
		if os == "windows" {
			exe = "unstick.exe"
		}
		if pl.Bin != exe || len(pl.SHA256) != 64 {
			t.Errorf("%s/%s: bin %q sha256 %q", os, arch, pl.Bin, pl.SHA256)
		}
		has := false
		for _, f := range pl.Files {
			has = has || f.From == exe
		}
		if !has {
			t.Errorf("%s/%s: files do not copy %s", os, arch, exe)
		}
	}
}

// release.sh for the host platform: a static binary that says its version, an archive of
// it, SHA256SUMS that match, and the rendered manifest carrying the archive's sha256.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("release.sh needs bash")
	}
	target := runtime.GOOS + "/" + runtime.GOARCH
	if runtime.GOOS == "windows" {
		t.Skip("release.sh runs on unix")
	}
	dist := t.TempDir()
	cmd := exec.Command("bash", "release.sh", "v9.8.7-test")
	cmd.Env = append(os.Environ(), "TARGETS="+target, "DIST="+dist)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	name := "unstick_v9.8.7-test_" + runtime.GOOS + "_" + runtime.GOARCH
	v, err := exec.Command(filepath.Join(dist, name), "version").Output()
	if err != nil || !strings.HasPrefix(string(v), "unstick v9.8.7-test ") {
		t.Errorf("the binary says %q (%v), want version v9.8.7-test", v, err)
	}
	if runtime.GOOS == "linux" {
		if f, err := exec.LookPath("file"); err == nil {
			desc, _ := exec.Command(f, filepath.Join(dist, name)).Output()
			if !strings.Contains(string(desc), "statically linked") {
				t.Errorf("not a static binary: %s", desc)
			}
		}
	}
	archive := filepath.Join(dist, name+".tar.gz")
	files := tarList(t, archive)
	if strings.Join(files, " ") != "README.md kubectl_complete-unstick unstick" {
		t.Errorf("the archive holds %v", files)
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256File(t, archive)
	if !strings.Contains(string(sums), sum+"  "+name+".tar.gz\n") {
		t.Errorf("SHA256SUMS does not list %s with %s:\n%s", name, sum, sums)
	}
	manifest, err := os.ReadFile(filepath.Join(dist, "krew", "unstick.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(manifest), `sha256: "`+sum+`"`) || strings.Contains(string(manifest), "{{VERSION}}") {
		t.Errorf("the rendered krew manifest lacks the archive's sha256 or still has placeholders")
	}
}

func tarList(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: owner %d/%d %q, want 0/0 (reproducible)", h.Name, h.Uid, h.Gid, h.Uname)
		}
		names = append(names, h.Name)
	}
}

func sha256File(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
