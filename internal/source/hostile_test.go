package source

// Hostile bundles that once took gigabytes of memory or gave different findings from run to
// run: each is generated here and loaded under the default memory budget, with the live heap
// watched. docs/robustness.md lists them with the peak RSS of the built binary.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// hostileBundles builds each hostile bundle under dir, by name.
var hostileBundles = []struct {
	name string
	make func(t *testing.T, dir string) string
}{
	{"million-symlinks", func(t *testing.T, dir string) string {
		// 1,000,000 symlink entries in a 7 MB archive, after one good Pod.
		p := filepath.Join(dir, "million-symlinks.tar.gz")
		ts := newTarStream(t, p, gzip.BestCompression)
		ts.add(t, &tar.Header{Name: "bundle/pods.yaml", Size: int64(len(goodPod))}, strings.NewReader(goodPod))
		for i := 0; i < 1_000_000; i++ {
			ts.add(t, &tar.Header{Name: fmt.Sprintf("bundle/l/%07d", i), Typeflag: tar.TypeSymlink, Linkname: "../pods.yaml"}, nil)
		}
		ts.close(t)
		return p
	}},
	{"long-names", func(t *testing.T, dir string) string {
		// 1,000 members whose names are 1 MB each (a PAX path record), in a 1 MB archive.
		p := filepath.Join(dir, "long-names.tar.gz")
		ts := newTarStream(t, p, gzip.BestCompression)
		ts.add(t, &tar.Header{Name: "bundle/pods.yaml", Size: int64(len(goodPod))}, strings.NewReader(goodPod))
		for i := 0; i < 1000; i++ {
			name := fmt.Sprintf("bundle/%04d/", i) + strings.Repeat("a", 1_000_000-20)
			ts.add(t, &tar.Header{Name: name, Size: 2, Format: tar.FormatPAX}, strings.NewReader("{}"))
		}
		ts.close(t)
		return p
	}},
	{"helm-config-bombs", func(t *testing.T, dir string) string {
		// Four ~100 KB Helm release Secrets whose config holds 20 million empty objects each.
		var raw bytes.Buffer
		// Each record states its own revision (one digit, set per Secret below), as Helm
		// writes it: a record that disagrees with its Secret is malformed and left out.
		raw.WriteString(`{"name":"fleet-agent-local","namespace":"cattle-fleet-local-system","version":0,` +
			`"info":{"status":"pending-upgrade","last_deployed":"2026-11-28T08:00:00Z","description":"Preparing upgrade"},` +
			`"chart":{"metadata":{"name":"fleet-agent","version":"106.0.0+up0.12.0"}},"config":{"x":[`)
		for i := 0; i < 20_000_000; i++ {
			if i > 0 {
				raw.WriteByte(',')
			}
			raw.WriteString("{}")
		}
		raw.WriteString("]}}")
		record := raw.Bytes()
		digit := bytes.Index(record, []byte(`"version":0`)) + len(`"version":`)
		b := filepath.Join(dir, "helm-config-bombs")
		files := map[string]string{}
		for rev := 1; rev <= 4; rev++ {
			record[digit] = byte('0' + rev)
			stored := []byte(base64.StdEncoding.EncodeToString(gzBytes(record)))
			files[fmt.Sprintf("sh.helm.release.v1.fleet-agent-local.v%d.yaml", rev)] = helmSecretYAML("fleet-agent-local", "cattle-fleet-local-system", "pending-upgrade", rev, stored)
		}
		writeTree(t, b, files)
		return b
	}},
	{"600k-pods-list", func(t *testing.T, dir string) string {
		// One PodList of 600,000 Pods, as kubectl writes it, in a ~2 MB archive.
		p := filepath.Join(dir, "600k-pods-list.tar.gz")
		var body bytes.Buffer
		body.WriteString(`{"apiVersion":"v1","items":[`)
		for i := 0; i < 600_000; i++ {
			if i > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%06d","namespace":"default"}}`, i)
		}
		body.WriteString(`],"kind":"List","metadata":{"resourceVersion":""}}`)
		ts := newTarStream(t, p, gzip.BestCompression)
		ts.add(t, &tar.Header{Name: "bundle/pods.json", Size: int64(body.Len())}, &body)
		ts.close(t)
		return p
	}},
	{"same-path-twice", func(t *testing.T, dir string) string {
		p := filepath.Join(dir, "same-path-twice.tar.gz")
		running, pending := goodPod, strings.Replace(goodPod, "phase: Running", "phase: Pending", 1)
		ts := newTarStream(t, p, gzip.BestSpeed)
		ts.add(t, &tar.Header{Name: "bundle/pods.yaml", Size: int64(len(running))}, strings.NewReader(running))
		ts.add(t, &tar.Header{Name: "bundle/other.yaml", Size: int64(len(running))}, strings.NewReader(strings.ReplaceAll(running, "q8w2n", "zz9kq")))
		ts.add(t, &tar.Header{Name: "./bundle/pods.yaml", Size: int64(len(pending))}, strings.NewReader(pending))
		ts.close(t)
		return p
	}},
	{"alias-big-scalar", aliasBombDir("big-scalar.yaml")},
	{"alias-nested-laughs", aliasBombDir("nested-laughs.yaml")},
	{"alias-big-mapping", aliasBombDir("big-mapping.yaml")},
	{"alias-json-in-yaml", aliasBombDir("json-in-yaml.yaml")},
	{"alias-list", aliasBombDir("list.yaml")},
	{"alias-bombs-tar-gz", aliasBombTarGz},
}

func hostile(t *testing.T, name string) func(t *testing.T, dir string) string {
	for _, h := range hostileBundles {
		if h.name == name {
			return h.make
		}
	}
	t.Fatalf("no hostile bundle %s", name)
	return nil
}

// TestHostileBundlesStayInBudget loads each hostile bundle under the default budget: none
// crashes, none passes for a complete bundle, and the live heap stays far below the budget.
func TestHostileBundlesStayInBudget(t *testing.T) {
	runBadCases(t, []badCase{
		{
			name: "1,000,000 symlink entries", big: true, make: hostile(t, "million-symlinks"),
			maxHeap: 300 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				// Links count toward the file limit: refused after 500,000 entries, reported on
				// the archive; the Pod before them loads.
				wantError(t, s, "million-symlinks.tar.gz", 0, "was refused after 500001 entries", "more than 500000 files")
				if len(onlyCluster(t, s).Pods) != 1 {
					t.Errorf("the Pod before the links loads:\n%s", describeSnap(s))
				}
				// The 499,999 links read are listed up to the cap, then counted.
				if n := len(s.Skipped); n != snapshot.MaxListed+1 || !strings.Contains(s.Skipped[n-1].Reason, "this and 489998 more skipped entries, not listed") {
					t.Errorf("want %d skipped entries and a count of the rest, got %d (last %+v)", snapshot.MaxListed, n, s.Skipped[n-1])
				}
			},
		},
		{
			name: "1,000 members with 1 MB names", big: true, make: hostile(t, "long-names"),
			maxHeap: 100 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				if len(onlyCluster(t, s).Pods) != 1 {
					t.Errorf("the good Pod loads:\n%s", describeSnap(s))
				}
				// Each long name is reported, shortened; the names count toward the bytes an
				// archive may unpack to, which half the memory budget bounds: refused part-way.
				long := 0
				for _, e := range s.Errors {
					if e.File == "long-names.tar.gz" && strings.Contains(e.Message, "is 999992 bytes, more than the 4096-byte limit; not read") {
						long++
						if len(e.Message) > 400 {
							t.Fatalf("the error quotes the whole name (%d bytes)", len(e.Message))
						}
					}
				}
				wantError(t, s, "long-names.tar.gz", 0, "was refused after", "unpacks to more than 512 MiB, half the memory budget of 1024 MiB")
				if long < 500 {
					t.Errorf("want each long name read before the refusal reported, got %d:\n%s", long, describeSnap(s))
				}
			},
		},
		{
			name: "four Helm releases whose config holds 20 million {}", big: true, make: hostile(t, "helm-config-bombs"),
			maxHeap: 400 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if len(c.HelmReleases) != 4 || len(s.Errors) != 0 {
					t.Fatalf("want the 4 revisions decoded, no error:\n%s", describeSnap(s))
				}
				if r := c.HelmReleases[0]; r.Chart != "fleet-agent" || r.Status != "pending-upgrade" || r.PayloadError != nil {
					t.Errorf("release metadata: %+v", r)
				}
			},
		},
		{
			name: "600,000 Pods in one List", big: true, make: hostile(t, "600k-pods-list"),
			maxHeap: 900 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				wantError(t, s, "pods.json", 1, fmt.Sprintf("items[%d]: more than %d objects in one file", DefaultLimits.MaxObjectsPerFile, DefaultLimits.MaxObjectsPerFile), "the rest of this file was not read")
				if len(c.Pods) != DefaultLimits.MaxObjectsPerFile {
					t.Errorf("want the first %d Pods, got %d", DefaultLimits.MaxObjectsPerFile, len(c.Pods))
				}
			},
		},
		{
			name: "600,000 Pods in one List, small budget", make: hostile(t, "600k-pods-list"),
			lim:     &Limits{MaxFileBytes: 256 << 20, MaxTotalBytes: 4 << 30, MaxFiles: 1000, MaxLogLines: 10, MaxLineBytes: 100, MaxMemory: 256 << 20},
			maxHeap: 300 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "pods.json", 1, "fill the memory budget of 256 MiB (raise it with UNSTICK_MAX_MEMORY)")
				if n := len(onlyCluster(t, s).Pods); n == 0 || n >= 600_000 {
					t.Errorf("want the Pods that fit, got %d", n)
				}
			},
		},
		{
			name: "the same path twice", make: hostile(t, "same-path-twice"),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "pods.yaml", 0, "the archive holds this path twice (members 1 and 3); member 3 was read, member 1 ignored")
				c := onlyCluster(t, s)
				if len(c.Pods) != 2 {
					t.Fatalf("want both Pods, the twice-written one once:\n%s", describeSnap(s))
				}
				for _, pod := range c.Pods {
					if pod.Name == "fleet-agent-7d9c5b6f4-q8w2n" && pod.Status.Phase != "Pending" {
						t.Errorf("the later member (Pending) must win, got %s", pod.Status.Phase)
					}
				}
			},
		},
	})
}

// TestSamePathTwiceIsDeterministic: the same archive gives the same snapshot every time (it
// once kept one copy or the other depending on which worker finished first).
func TestSamePathTwiceIsDeterministic(t *testing.T) {
	p := hostile(t, "same-path-twice")(t, t.TempDir())
	var first string
	for i := 0; i < 20; i++ {
		s, err := (&Offline{Path: p}).Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got := describeSnap(s)
		for _, pod := range s.Clusters[0].Pods {
			got += string(pod.Status.Phase)
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Fatalf("run %d differs:\n%s\nfirst:\n%s", i, got, first)
		}
	}
}

// TestWriteHostileBundles writes the hostile bundles to $UNSTICK_HOSTILE_OUT, for measuring
// the built binary on them (docs/robustness.md); skipped when it is not set.
func TestWriteHostileBundles(t *testing.T) {
	out := os.Getenv("UNSTICK_HOSTILE_OUT")
	if out == "" {
		t.Skip("set UNSTICK_HOSTILE_OUT to a directory to write the hostile bundles there")
	}
	for _, h := range hostileBundles {
		p := h.make(t, out)
		var size int64
		filepathWalkSize(p, &size)
		t.Logf("%s: %d KB", p, size>>10)
	}
}

func filepathWalkSize(p string, size *int64) {
	filepath.Walk(p, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			*size += fi.Size()
		}
		return nil
	})
}
