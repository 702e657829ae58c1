package source

// YAML alias bombs: documents of a few MiB (or a few KiB of .tar.gz) whose aliases expand to
// gigabytes while staying under go-yaml's own guard, which counts decode calls (more than
// 1,000 calls, 99% of them through aliases). Before the loader measured the expansion they
// took 2–5 GB with exit 0.

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// aliasList is n aliases to anchor in one flow sequence: [*a, *a, …].
func aliasList(anchor string, n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("*"+anchor+", ", n), ", ") + "]"
}

// aliasBombs are the shapes, by file name: each is one ConfigMap-looking document.
var aliasBombs = []struct{ file, body string }{
	// One 1.5 MiB anchored value aliased 900 times: 1.3 GiB expanded.
	{"big-scalar.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-agent-values\n  namespace: cattle-fleet-system\ndata:\n" +
		"  values: &v \"" + strings.Repeat("A", 3<<19) + "\"\n" +
		"aliases: " + aliasList("v", 900) + "\n"},
	// Nested "billion laughs" from a 4 KiB value: 9 levels of 9.
	{"nested-laughs.yaml", nestedLaughs()},
	// A mapping of one 4 MiB value aliased 330 times (3 decode calls each, under 1,000).
	{"big-mapping.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-agent-config\n  namespace: cattle-fleet-system\n" +
		"base: &m {config: \"" + strings.Repeat("B", 16<<18) + "\"}\n" +
		"overlays: " + aliasList("m", 330) + "\n"},
	// JSON in a YAML stream (a document that starts with ---): flow style takes anchors too.
	{"json-in-yaml.yaml", "--- {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"fleet-json\", \"namespace\": \"cattle-fleet-system\"}, " +
		"\"data\": {\"config\": &j \"" + strings.Repeat("C", 3<<19) + "\"}, \"copies\": " + aliasList("j", 900) + "}\n"},
	// A List whose first item is anchored and every other item an alias to it.
	{"list.yaml", "apiVersion: v1\nkind: List\nitems:\n- &cm {apiVersion: v1, kind: ConfigMap, metadata: {name: fleet-agent-big, namespace: cattle-fleet-system}, data: {config: \"" +
		strings.Repeat("D", 3<<19) + "\"}}\n" + strings.Repeat("- *cm\n", 300)},
}

func nestedLaughs() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\n  namespace: cattle-fleet-system\n")
	fmt.Fprintf(&b, "l0: &l0 %q\n", strings.Repeat("lol", 1<<12))
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d %s\n", i, i, aliasList(fmt.Sprintf("l%d", i-1), 9))
	}
	b.WriteString("data:\n  bomb: *l8\n")
	return b.String()
}

// aliasBombTarGz packs every shape and one good Pod into a .tar.gz of a few KiB.
func aliasBombTarGz(t *testing.T, dir string) string {
	p := filepath.Join(dir, "alias-bombs.tar.gz")
	ts := newTarStream(t, p, gzip.BestCompression)
	ts.add(t, &tar.Header{Name: "bundle/pods.yaml", Size: int64(len(goodPod))}, strings.NewReader(goodPod))
	for _, b := range aliasBombs {
		ts.add(t, &tar.Header{Name: "bundle/" + b.file, Size: int64(len(b.body))}, strings.NewReader(b.body))
	}
	ts.close(t)
	return p
}

// aliasBombDir writes one shape beside a good Pod.
func aliasBombDir(file string) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		for _, b := range aliasBombs {
			if b.file == file {
				return dirWith(map[string]string{file: b.body, "pods.yaml": goodPod})(t, filepath.Join(dir, strings.TrimSuffix(file, ".yaml")))
			}
		}
		t.Fatalf("no alias bomb %s", file)
		return ""
	}
}

// wantAliasRefused asserts the budget error on file and that the good Pod beside it loaded.
func wantAliasRefused(t *testing.T, s *snapshot.Snapshot, file string) {
	t.Helper()
	wantError(t, s, file, 0, "not read: with its YAML aliases expanded this document holds", "more than is left of the memory budget of 1024 MiB (raise it with UNSTICK_MAX_MEMORY)")
	c := onlyCluster(t, s)
	if len(c.Pods) != 1 {
		t.Errorf("the Pod beside %s must load:\n%s", file, describeSnap(s))
	}
	if n := len(c.ConfigMaps); n != 0 {
		t.Errorf("nothing of the bomb is kept, got %d ConfigMaps", n)
	}
}

// TestAliasBombsStayInBudget loads each shape alone and all of them in one archive: each is
// refused with the budget's error, the rest of the bundle loads, and the heap stays small.
func TestAliasBombsStayInBudget(t *testing.T) {
	var cases []badCase
	for _, b := range aliasBombs {
		cases = append(cases, badCase{
			name: b.file, make: aliasBombDir(b.file), maxHeap: 200 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) { wantAliasRefused(t, s, b.file) },
		})
	}
	cases = append(cases, badCase{
		name: "every shape in a .tar.gz", make: aliasBombTarGz, maxHeap: 300 << 20,
		check: func(t *testing.T, s *snapshot.Snapshot, err error) {
			for _, b := range aliasBombs {
				wantAliasRefused(t, s, b.file)
			}
		},
	})
	runBadCases(t, cases)
}

// TestAliasesWithinBudgetLoad: anchors and aliases as people write them (a shared label set,
// merge keys) still load, and so does a modest expansion.
func TestAliasesWithinBudgetLoad(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: cattle-fleet-system\n  labels: &l {app: fleet-agent, tier: agent}\n  annotations:\n    <<: *l\n" +
		"data:\n  a: &v \"" + strings.Repeat("x", 10<<10) + "\"\n  b: *v\n  c: *v\n"
	dir := dirWith(map[string]string{"shared.yaml": cm, "pods.yaml": goodPod})(t, t.TempDir())
	s, err := (&Offline{Path: dir}).Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := onlyCluster(t, s)
	if len(s.Errors) != 0 || len(c.ConfigMaps) != 1 || len(c.Pods) != 1 {
		t.Fatalf("want the ConfigMap and the Pod, no error:\n%s", describeSnap(s))
	}
	if got := c.ConfigMaps[0].Annotations["app"]; got != "fleet-agent" {
		t.Errorf("merge key: annotations.app = %q", got)
	}
}

// TestBundleInfoAliasBomb: the metadata is read before anything else; its aliases are held to
// the budget too.
func TestBundleInfoAliasBomb(t *testing.T) {
	info := "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: \"2026-11-29T08:00:00Z\"\n" +
		"collector: &c \"" + strings.Repeat("u", 3<<19) + "\"\nredacted: " + aliasList("c", 900) + "\nclusters:\n- name: local\n"
	_, err := ParseBundleInfo([]byte(info))
	if err == nil || !strings.Contains(err.Error(), "with its YAML aliases expanded") {
		t.Fatalf("want the budget error, got %v", err)
	}
	dir := dirWith(map[string]string{BundleInfoFile: info, "pods.yaml": goodPod})(t, t.TempDir())
	s, err := (&Offline{Path: dir}).Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, s, BundleInfoFile, 0, "bundle metadata: not read: with its YAML aliases expanded")
	if len(onlyCluster(t, s).Pods) != 1 {
		t.Errorf("the rest of the bundle loads:\n%s", describeSnap(s))
	}
}

// TestWriteAliasBombCorpus writes the alias bombs as seeds of FuzzLoadFile and FuzzLoadTarGz
// under testdata/fuzz; skipped unless UNSTICK_WRITE_CORPUS is set.
func TestWriteAliasBombCorpus(t *testing.T) {
	if os.Getenv("UNSTICK_WRITE_CORPUS") == "" {
		t.Skip("set UNSTICK_WRITE_CORPUS=1 to rewrite the alias-bomb seeds in testdata/fuzz")
	}
	for _, b := range aliasBombs {
		if len(b.body) > 64<<10 {
			continue // packed in the archive seed instead: a seed of MiBs slows every mutation
		}
		name := "alias-bomb-" + strings.TrimSuffix(b.file, ".yaml")
		writeSeed(t, "FuzzLoadFile", name, fmt.Sprintf("[]byte(%q)\nbyte('\\x00')\n", b.body))
	}
	data, err := os.ReadFile(aliasBombTarGz(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	writeSeed(t, "FuzzLoadTarGz", "alias-bombs", fmt.Sprintf("[]byte(%q)\n", data))
}

func writeSeed(t *testing.T, target, name, body string) {
	t.Helper()
	p := filepath.Join("testdata", "fuzz", target, name)
	if err := os.WriteFile(p, []byte("go test fuzz v1\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
}
