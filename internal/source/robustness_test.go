package source

// The bad-input catalogue of docs/robustness.md: every malformed input a bundle may hold, what
// the loader makes of it, and that it never panics, hangs, writes outside the bundle or eats
// memory without bound. The inputs are generated here, at test time; the 100 MB and
// million-entry cases are skipped under -short.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// badCase is one row of the catalogue.
type badCase struct {
	name string
	// big cases (100 MB inputs, half a million archive entries) are skipped under -short.
	big bool
	// make builds the bundle under dir and returns the path given to --from.
	make func(t *testing.T, dir string) string
	lim  *Limits
	// maxHeap bounds the live heap while loading (0: not checked).
	maxHeap uint64
	// check holds the result to the documented behaviour.
	check func(t *testing.T, s *snapshot.Snapshot, err error)
}

const badCaseTimeout = 60 * time.Second

// peakHeap samples the live heap until stop is closed and returns the highest value seen.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
			}
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

func runBadCases(t *testing.T, cases []badCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.big && testing.Short() {
				t.Skip("100 MB / half-million-entry input: skipped with -short")
			}
			dir := t.TempDir()
			path := c.make(t, dir)
			o := &Offline{Path: path}
			if c.lim != nil {
				o.Limits = *c.lim
			}
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			stop := make(chan struct{})
			peak := peakHeap(stop)
			type result struct {
				s   *snapshot.Snapshot
				err error
			}
			done := make(chan result, 1)
			ctx, cancel := context.WithTimeout(context.Background(), badCaseTimeout)
			defer cancel()
			start := time.Now()
			go func() {
				s, err := o.Load(ctx)
				done <- result{s, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(badCaseTimeout + 5*time.Second):
				t.Fatalf("Load did not return within %s", badCaseTimeout)
			}
			close(stop)
			p := <-peak
			if r.err != nil && r.s != nil {
				t.Fatalf("both a snapshot and an error: %v", r.err)
			}
			if r.err == nil && r.s == nil {
				t.Fatal("neither a snapshot nor an error")
			}
			if c.maxHeap > 0 && p > base.HeapAlloc+c.maxHeap {
				t.Errorf("live heap peaked at %d MiB over the %d MiB before the load, limit %d MiB", (p-base.HeapAlloc)>>20, base.HeapAlloc>>20, c.maxHeap>>20)
			}
			t.Logf("loaded in %s, heap peak +%d MiB", time.Since(start).Round(time.Millisecond), (max(p, base.HeapAlloc)-base.HeapAlloc)>>20)
			if testing.Verbose() {
				if r.err != nil {
					t.Logf("Load: %v", r.err)
				} else {
					t.Logf("snapshot:\n%s", describeSnap(r.s))
				}
			}
			c.check(t, r.s, r.err)
		})
	}
}

// ---------------------------------------------------------------- helpers

// oneFile writes files into a bundle directory and returns it.
func dirWith(files map[string]string) func(t *testing.T, dir string) string {
	return func(t *testing.T, dir string) string {
		b := filepath.Join(dir, "bundle")
		writeTree(t, b, files)
		return b
	}
}

// wantError asserts one scan error for file (at line, if > 0) whose text holds every part.
func wantError(t *testing.T, s *snapshot.Snapshot, file string, line int, parts ...string) {
	t.Helper()
	if s == nil {
		t.Fatal("no snapshot")
	}
	var got []string
	for _, e := range s.Errors {
		if e.File != file && !strings.HasPrefix(e.File, file+":") && !strings.HasPrefix(e.File, file+" ") {
			continue
		}
		got = append(got, e.String())
		if line > 0 && e.Line != line {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(e.String(), p)
		}
		if ok {
			return
		}
	}
	t.Errorf("want an error on %s (line %d) saying %q, got %v\n%s", file, line, parts, got, describeSnap(s))
}

func wantSkipped(t *testing.T, s *snapshot.Snapshot, file, reason string) {
	t.Helper()
	if s == nil {
		t.Fatal("no snapshot")
	}
	if got := skippedFor(s, file); !strings.Contains(got, reason) || got == "" {
		t.Errorf("want %s skipped as %q, got %q\n%s", file, reason, got, describeSnap(s))
	}
	if errs := errorsFor(s, file); len(errs) > 0 {
		t.Errorf("%s is skipped, not an error: %v", file, errs)
	}
}

func wantLoadError(t *testing.T, s *snapshot.Snapshot, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want Load to fail saying %q, got a snapshot:\n%s", parts, describeSnap(s))
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

func onlyCluster(t *testing.T, s *snapshot.Snapshot) *snapshot.Cluster {
	t.Helper()
	if s == nil || len(s.Clusters) != 1 {
		t.Fatalf("want one cluster, got:\n%s", describeSnap(s))
	}
	return s.Clusters[0]
}

// podYAML is goodPod with another name and creation time.
func podYAML(name, created string) string {
	return strings.NewReplacer("fleet-agent-7d9c5b6f4-q8w2n", name, "2026-11-28T08:00:00Z", created).Replace(goodPod)
}

// tarStream writes a .tar.gz entry by entry; bodies come from readers so that big members
// never sit in memory.
type tarStream struct {
	f  *os.File
	zw *gzip.Writer
	tw *tar.Writer
}

func newTarStream(t *testing.T, file string, level int) *tarStream {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, level)
	return &tarStream{f: f, zw: zw, tw: tar.NewWriter(zw)}
}

func (s *tarStream) add(t *testing.T, h *tar.Header, body io.Reader) {
	t.Helper()
	if h.Typeflag == 0 {
		h.Typeflag = tar.TypeReg
	}
	if h.Mode == 0 {
		h.Mode = 0o644
	}
	h.ModTime = time.Unix(1795000000, 0)
	if err := s.tw.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		if _, err := io.Copy(s.tw, body); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *tarStream) close(t *testing.T) {
	t.Helper()
	if err := s.tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.f.Close(); err != nil {
		t.Fatal(err)
	}
}

// zeros reads n zero bytes.
type zeros int64

func (z *zeros) Read(p []byte) (int, error) {
	if *z <= 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), int64(*z))
	clear(p[:n])
	*z -= zeros(n)
	return int(n), nil
}

func zeroReader(n int64) io.Reader { z := zeros(n); return &z }

// declaredOnly is a .tar.gz whose one member declares size bytes and carries only a few: the
// header as tar(1) writes it, the body cut short, as a hostile archive would be.
func declaredOnly(t *testing.T, file string, size int64) {
	t.Helper()
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	if err := tw.WriteHeader(&tar.Header{Name: "bundle/pods.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: time.Unix(1795000000, 0)}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(goodPod)) // the header is out; the rest of the body never comes
	if err := os.WriteFile(file, gzBytes(tarBuf.Bytes()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeState lists every path under dir with its size and mode, to prove nothing was written.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", p, err)
			return nil
		}
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		fmt.Fprintf(&b, "%s %v %d\n", p, info.Mode(), info.Size())
		return nil
	})
	return b.String()
}

// ---------------------------------------------------------------- the catalogue

const deep = 100_000

func TestBadInputCatalogue(t *testing.T) {
	big := 100 << 20
	cmObject := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fleet-agent","namespace":"cattle-fleet-system"},"data":{"config":"`
	runBadCases(t, []badCase{
		// ------------------------------------------------------------ empty and near-empty
		{
			name: "empty files",
			make: dirWith(map[string]string{
				"empty.yaml": "", "empty.json": "", "pods_cattle-fleet-system_empty": "",
				"blank.yaml": "\n\n   \n", "comments.yaml": "# kubectl get pods -A -o yaml\n---\n# nothing\n",
				"logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log": "",
				"pods.yaml": goodPod,
			}),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				for _, f := range []string{"empty.yaml", "empty.json", "pods_cattle-fleet-system_empty", "blank.yaml"} {
					wantSkipped(t, s, f, "empty file")
				}
				wantSkipped(t, s, "comments.yaml", "no Kubernetes object")
				c := onlyCluster(t, s)
				if len(c.Pods) != 1 || len(s.Errors) != 0 {
					t.Errorf("the good file must load, nothing is an error:\n%s", describeSnap(s))
				}
			},
		},
		{
			name: "empty tar.gz",
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "empty.tar.gz")
				newTarStream(t, p, gzip.DefaultCompression).close(t)
				return p
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantLoadError(t, s, err, "empty.tar.gz", "holds no files")
			},
		},
		{
			name: "zero-byte .tgz",
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "support.tgz")
				os.WriteFile(p, nil, 0o644)
				return p
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantLoadError(t, s, err, "support.tgz", "neither a directory nor a .tar.gz archive")
			},
		},
		// ------------------------------------------------------------ huge lines
		{
			name: "100 MB log line",
			big:  true,
			make: func(t *testing.T, dir string) string {
				b := filepath.Join(dir, "bundle")
				writeTree(t, b, map[string]string{"pods.yaml": goodPod})
				line := bytes.Repeat([]byte(`level=error msg="x509: certificate signed by unknown authority" `), big/64+1)[:big]
				p := filepath.Join(b, "logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log")
				os.MkdirAll(filepath.Dir(p), 0o755)
				body := append(append([]byte("time=\"2026-11-28T08:00:00Z\" level=info msg=\"Starting fleet agent\"\n"), line...), "\nlast line\n"...)
				if err := os.WriteFile(p, body, 0o644); err != nil {
					t.Fatal(err)
				}
				return b
			},
			maxHeap: 320 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				l := c.Logs[snapshot.LogKey("cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n", "fleet-agent")]
				if l == nil || len(l.Current) != 3 {
					t.Fatalf("want the log's 3 lines, got %v", l)
				}
				if got := l.Current[1]; len(got) > DefaultLimits.MaxLineBytes+len(" …[cut]") || !strings.HasSuffix(got, "…[cut]") {
					t.Errorf("the 100 MB line is kept as %d bytes, want it cut at %d", len(got), DefaultLimits.MaxLineBytes)
				}
				if l.Current[2] != "last line" {
					t.Errorf("the line after the long one = %q", l.Current[2])
				}
			},
		},
		{
			name: "100 MB single-line JSON",
			big:  true,
			make: func(t *testing.T, dir string) string {
				b := filepath.Join(dir, "bundle")
				os.MkdirAll(b, 0o755)
				body := append([]byte(cmObject), bytes.Repeat([]byte("A"), big)...)
				body = append(body, `"}}`...)
				if err := os.WriteFile(filepath.Join(b, "configmaps.json"), body, 0o644); err != nil {
					t.Fatal(err)
				}
				return b
			},
			maxHeap: 700 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if len(c.ConfigMaps) != 1 || len(s.Errors) != 0 {
					t.Fatalf("the ConfigMap must load:\n%s", describeSnap(s))
				}
				if v, ok := c.ConfigMaps[0].Data["config"]; !ok || v != "" {
					t.Errorf("ConfigMap values are dropped at load, kept %d bytes", len(v))
				}
			},
		},
		{
			name: "100 MB single-line JSON, truncated",
			big:  true,
			make: func(t *testing.T, dir string) string {
				b := filepath.Join(dir, "bundle")
				os.MkdirAll(b, 0o755)
				body := append([]byte(cmObject), bytes.Repeat([]byte("A"), big)...)
				if err := os.WriteFile(filepath.Join(b, "configmaps.json"), body, 0o644); err != nil {
					t.Fatal(err)
				}
				return b
			},
			maxHeap: 450 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "configmaps.json", 1, "invalid JSON", "truncated")
			},
		},
		{
			name: "a million log lines",
			make: func(t *testing.T, dir string) string {
				var b bytes.Buffer
				for i := 0; i < 1_000_000; i++ {
					fmt.Fprintf(&b, "I1128 08:%02d:%02d.000000 1 agent.go:88] resync %d\n", i/60%60, i%60, i)
				}
				return dirWith(map[string]string{"logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log": b.String(), "pods.yaml": goodPod})(t, dir)
			},
			maxHeap: 256 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				l := onlyCluster(t, s).Logs[snapshot.LogKey("cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n", "fleet-agent")]
				if l == nil || len(l.Current) != DefaultLimits.MaxLogLines || !strings.HasSuffix(l.Current[len(l.Current)-1], "resync 999999") {
					t.Fatalf("want the last %d lines, got %d", DefaultLimits.MaxLogLines, len(l.Current))
				}
			},
		},
		{
			name: "Helm release payload gzip bomb",
			make: func(t *testing.T, dir string) string {
				var raw bytes.Buffer
				zw, _ := gzip.NewWriterLevel(&raw, gzip.BestSpeed)
				zw.Write([]byte(`{"name":"fleet-agent-local","version":3,"manifest":"`))
				io.Copy(zw, zeroReader(100<<20))
				zw.Write([]byte(`"}`))
				zw.Close()
				stored := []byte(base64.StdEncoding.EncodeToString(raw.Bytes()))
				return dirWith(map[string]string{
					"secrets/sh.helm.release.v1.fleet-agent-local.v3.yaml": helmSecretYAML("fleet-agent-local", "cattle-fleet-local-system", "pending-upgrade", 3, stored),
					"pods.yaml": goodPod,
				})(t, dir)
			},
			maxHeap: 256 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "secrets/sh.helm.release.v1.fleet-agent-local.v3.yaml", 1, "sh.helm.release.v1.fleet-agent-local.v3", "larger than 64 MiB decompressed")
				c := onlyCluster(t, s)
				if len(c.HelmReleases) != 1 || c.HelmReleases[0].Status != "pending-upgrade" {
					t.Errorf("the release is still known from its labels:\n%s", describeSnap(s))
				}
			},
		},
		// ------------------------------------------------------------ deep nesting
		{
			name: "JSON nested 100k levels",
			make: dirWith(map[string]string{
				"deep.json":  cmObject[:strings.Index(cmObject, `"data"`)] + `"data":` + strings.Repeat(`{"a":`, deep) + `1` + strings.Repeat("}", deep) + "}",
				"array.json": strings.Repeat("[", deep) + strings.Repeat("]", deep),
				"pods.yaml":  goodPod,
			}),
			maxHeap: 256 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "deep.json", 1, "invalid JSON", "depth")
				wantError(t, s, "array.json", 1, "invalid JSON", "depth")
				if len(onlyCluster(t, s).Pods) != 1 {
					t.Error("the rest of the bundle must load")
				}
			},
		},
		{
			name: "YAML nested 100k levels",
			make: dirWith(map[string]string{
				"flow.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata: " + strings.Repeat("[", deep) + strings.Repeat("]", deep) + "\n",
				"block.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\nitems:\n" + strings.Repeat("- ", deep) + "x\n",
				"pods.yaml":  goodPod,
			}),
			maxHeap: 256 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "flow.yaml", 0, "invalid YAML")
				wantError(t, s, "block.yaml", 0, "invalid YAML")
				if len(onlyCluster(t, s).Pods) != 1 {
					t.Error("the rest of the bundle must load")
				}
			},
		},
		// ------------------------------------------------------------ alias expansion
		{
			name: "YAML billion laughs",
			make: func(t *testing.T, dir string) string {
				var b strings.Builder
				b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\n  namespace: cattle-fleet-system\n")
				b.WriteString(`a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
				for i := 1; i < 9; i++ {
					prev, cur := string(rune('a'+i-1)), string(rune('a'+i))
					fmt.Fprintf(&b, "%s: &%s [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", cur, cur, prev, prev, prev, prev, prev, prev, prev, prev, prev)
				}
				b.WriteString("data:\n  bomb: *i\n")
				return dirWith(map[string]string{"lol.yaml": b.String(), "pods.yaml": goodPod})(t, dir)
			},
			maxHeap: 256 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "lol.yaml", 1, "not read: with its YAML aliases expanded this document holds 2356 MiB in 926177128 nodes", "memory budget of 1024 MiB")
				if len(onlyCluster(t, s).Pods) != 1 {
					t.Error("the rest of the bundle must load")
				}
			},
		},
		// ------------------------------------------------------------ kinds and fields
		{
			name: "wrong kinds",
			make: dirWith(map[string]string{
				"widget.yaml":     "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: default\n",
				"badspec.yaml":    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: fleet-agent-7d9c5b6f4-zz9kq\n  namespace: cattle-fleet-system\nspec: running\n",
				"numkind.yaml":    "apiVersion: v1\nkind: 42\nmetadata:\n  name: n\n",
				"listitems.yaml":  "apiVersion: v1\nkind: PodList\nitems: not-a-list\n",
				"scalars.yaml":    "apiVersion: v1\nkind: List\nitems:\n- 1\n- \"two\"\n- [3]\n",
				"deployment.json": `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fleet-agent","namespace":"cattle-fleet-system"},"spec":{"replicas":"one"}}`,
				"pods.yaml":       goodPod,
			}),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if len(c.Pods) != 1 || c.Get("Widget", "default", "w") == nil {
					t.Errorf("an unknown kind is kept as an other object, the good Pod loads:\n%s", describeSnap(s))
				}
				wantError(t, s, "badspec.yaml", 1, "cannot decode Pod cattle-fleet-system/fleet-agent-7d9c5b6f4-zz9kq")
				wantError(t, s, "deployment.json", 1, "cannot decode Deployment cattle-fleet-system/fleet-agent")
				wantSkipped(t, s, "numkind.yaml", "kind is not a string")
				wantSkipped(t, s, "listitems.yaml", "items is not a list")
				// Each scalar of a List is named, with the List's line.
				wantSkippedAt(t, s, "scalars.yaml", 1, "items[0]: a bare number")
				wantSkippedAt(t, s, "scalars.yaml", 1, "items[1]: a bare string")
				wantSkippedAt(t, s, "scalars.yaml", 1, "items[2]: a sequence, not a mapping")
			},
		},
		{
			name: "missing fields",
			make: dirWith(map[string]string{
				"nometa.yaml":       "apiVersion: v1\nkind: Pod\nspec:\n  nodeName: worker-1\n",
				"noname.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: cattle-fleet-system\n",
				"nokind.yaml":       "apiVersion: v1\nmetadata:\n  name: fleet-agent\n",
				"noapiversion.json": `{"kind":"Pod","metadata":{"name":"p"}}`,
				"noitems.yaml":      "apiVersion: v1\nkind: List\n",
				"pods.yaml":         goodPod,
			}),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "nometa.yaml", 1, "Pod object has no metadata.name")
				wantError(t, s, "noname.yaml", 1, "ConfigMap object has no metadata.name")
				wantSkipped(t, s, "nokind.yaml", "no kind (apiVersion v1)")
				wantSkipped(t, s, "noapiversion.json", "no apiVersion (kind Pod)")
				if len(onlyCluster(t, s).Pods) != 1 || len(s.Errors) != 2 {
					t.Errorf("two errors, the good Pod loads:\n%s", describeSnap(s))
				}
			},
		},
		{
			name: "duplicate objects",
			make: dirWith(map[string]string{
				"a/pods.yaml": goodPod,
				"b/pods.yaml": strings.Replace(goodPod, "phase: Running", "phase: Pending", 1),
				"c/list.yaml": "apiVersion: v1\nkind: List\nitems:\n" + indentList(goodPod) + indentList(goodPod),
			}),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if len(c.Pods) != 1 || len(s.Errors) != 0 {
					t.Fatalf("the same object in three places loads once, silently:\n%s", describeSnap(s))
				}
				// The copy of the file that sorts first wins, whatever order the parallel
				// reading added them in: the same bundle always gives the same snapshot.
				src := c.Source("Pod", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n")
				if !strings.HasPrefix(src, "a/pods.yaml") || c.Pods[0].Status.Phase != "Running" {
					t.Errorf("copy kept: %s (phase %s), want a/pods.yaml's (Running)", src, c.Pods[0].Status.Phase)
				}
			},
		},
		{
			name: "clock-skewed timestamps, with collectedAt",
			make: dirWith(map[string]string{
				BundleInfoFile: "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: \"2026-11-29T08:00:00Z\"\nclusters:\n- name: local\n",
				"future.yaml":  podYAML("fleet-agent-7d9c5b6f4-ftr2x", "2126-11-28T08:00:00Z"),
				"past.yaml":    podYAML("fleet-agent-7d9c5b6f4-pst4z", "1970-01-01T00:00:00Z"),
				"zero.yaml":    podYAML("fleet-agent-7d9c5b6f4-zrr5x", "0001-01-01T00:00:00Z"),
				"y10k.yaml":    podYAML("fleet-agent-7d9c5b6f4-tnk6q", "10000-01-01T00:00:00Z"),
			}),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if want := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC); !s.CollectedAt.Equal(want) {
					t.Errorf("CollectedAt = %s, want the metadata's %s", s.CollectedAt, want)
				}
				if p := c.Get("Pod", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-ftr2x"); p == nil || len(c.Pods) != 3 {
					t.Errorf("skewed but valid timestamps load as they are:\n%s", describeSnap(s))
				}
				wantError(t, s, "y10k.yaml", 1, "cannot decode Pod", "fleet-agent-7d9c5b6f4-tnk6q")
			},
		},
		{
			name: "clock-skewed timestamps, no collectedAt",
			make: dirWith(map[string]string{
				"future.yaml": podYAML("fleet-agent-7d9c5b6f4-ftr2x", "2126-11-28T08:00:00Z"),
				"pods.yaml":   goodPod,
			}),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				onlyCluster(t, s)
				// documented limitation: the newest timestamp found is the evaluation time
				if want := time.Date(2126, 11, 28, 8, 0, 0, 0, time.UTC); !s.CollectedAt.Equal(want) {
					t.Errorf("CollectedAt = %s; the catalogue documents %s (the newest timestamp)", s.CollectedAt, want)
				}
			},
		},
		// ------------------------------------------------------------ bytes that are not text
		{
			name: "binary files",
			make: func(t *testing.T, dir string) string {
				rnd := make([]byte, 64<<10)
				rand.New(rand.NewSource(42)).Read(rnd)
				rnd[100] = 0
				return dirWith(map[string]string{
					"pods.yaml":         string(rnd),
					"etcd-snapshot.db":  "\x00\x00\x00\x00bolt\x00" + strings.Repeat("\x00", 4096),
					"nested.tar.gz":     string(gzBytes([]byte(goodPod))),
					"utf16-no-bom.yaml": "a\x00p\x00i\x00V\x00e\x00r\x00s\x00i\x00o\x00n\x00:\x00 \x00v\x001\x00",
					"good.yaml":         goodPod,
				})(t, dir)
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				for _, f := range []string{"pods.yaml", "etcd-snapshot.db", "nested.tar.gz", "utf16-no-bom.yaml"} {
					wantSkipped(t, s, f, "binary data")
				}
				if len(onlyCluster(t, s).Pods) != 1 {
					t.Error("the good file must load")
				}
			},
		},
		{
			name: "invalid UTF-8",
			make: dirWith(map[string]string{
				"latin1.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n  namespace: default\n",
				"latin1.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"caf` + "\xe9" + `","namespace":"default"}}`,
				"logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log": "ok\n\xff\xfe\xfd broken\nafter\n",
				"pods.yaml": goodPod,
			}),
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "latin1.yaml", 0, "invalid YAML")
				c := onlyCluster(t, s)
				if c.Get("ConfigMap", "default", "caf\uFFFD") == nil {
					t.Errorf("JSON with invalid UTF-8 loads with U+FFFD, as encoding/json reads it:\n%s", describeSnap(s))
				}
				l := c.Logs[snapshot.LogKey("cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n", "fleet-agent")]
				if l == nil || len(l.Current) != 3 || l.Current[2] != "after" {
					t.Errorf("a log with invalid UTF-8 keeps its lines: %v", l)
				}
			},
		},
		// ------------------------------------------------------------ links and special files
		{
			name: "symlinks out of a directory bundle, and loops",
			make: func(t *testing.T, dir string) string {
				outside := filepath.Join(dir, "outside")
				writeTree(t, outside, map[string]string{"secret.yaml": podYAML("outside-pod-x2k4p", "2026-11-28T08:00:00Z")})
				b := filepath.Join(dir, "bundle")
				writeTree(t, b, map[string]string{"pods.yaml": goodPod})
				for link, target := range map[string]string{
					"escape.yaml": filepath.Join(outside, "secret.yaml"),
					"escape-dir":  outside,
					"relative":    "../outside",
					"passwd":      "/etc/passwd",
					"loop-a":      "loop-b",
					"loop-b":      "loop-a",
					"self":        ".",
					"dangling":    "does-not-exist",
				} {
					if err := os.Symlink(target, filepath.Join(b, link)); err != nil {
						t.Fatal(err)
					}
				}
				return b
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if c.Get("Pod", "cattle-fleet-system", "outside-pod-x2k4p") != nil {
					t.Error("an object outside the bundle was read through a link")
				}
				for _, l := range []string{"escape.yaml", "escape-dir", "relative", "passwd", "loop-a", "loop-b", "self", "dangling"} {
					wantSkipped(t, s, l, "symbolic link, not followed")
				}
				if len(c.Pods) != 1 {
					t.Errorf("the bundle's own file loads:\n%s", describeSnap(s))
				}
			},
		},
		{
			name: "bundle path is itself a symlink",
			make: func(t *testing.T, dir string) string {
				b := filepath.Join(dir, "bundle-2026-11-29")
				writeTree(t, b, map[string]string{"pods.yaml": goodPod})
				link := filepath.Join(dir, "latest")
				if err := os.Symlink(b, link); err != nil {
					t.Fatal(err)
				}
				return link
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if c := onlyCluster(t, s); len(c.Pods) != 1 {
					t.Errorf("--from a link to a bundle reads the bundle:\n%s", describeSnap(s))
				}
			},
		},
		{
			name: "FIFO and socket in a directory bundle",
			make: func(t *testing.T, dir string) string {
				b := dirWith(map[string]string{"pods.yaml": goodPod})(t, dir)
				if err := syscall.Mkfifo(filepath.Join(b, "pods-fifo.yaml"), 0o644); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				// a socket, as a collector's helper process might leave behind
				if l, err := net.Listen("unix", filepath.Join(b, "agent.sock")); err == nil {
					t.Cleanup(func() { l.Close() })
				}
				return b
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if len(c.Pods) != 1 || len(s.Errors) != 0 {
					t.Errorf("a FIFO is not a file: never opened (opening it would block):\n%s", describeSnap(s))
				}
			},
		},
		// ------------------------------------------------------------ hostile archives
		{
			name: "tar links and traversal write nothing",
			make: func(t *testing.T, dir string) string {
				archive := filepath.Join(dir, "sandbox", "evil.tar.gz")
				os.MkdirAll(filepath.Dir(archive), 0o755)
				packTarGz(t, archive, []tarEntry{
					{name: "bundle/", typ: tar.TypeDir},
					{name: "bundle/pods.yaml", body: goodPod},
					{name: "bundle/hard.yaml", typ: tar.TypeLink, link: "/etc/shadow"},
					{name: "bundle/logs/", typ: tar.TypeSymlink, link: "../../../../tmp"},
					{name: "bundle/logs/x/y/z.log", body: "written through a link?\n"},
					{name: "./../sibling.yaml", body: goodPod},
					{name: "bundle/../../up.yaml", body: goodPod},
					{name: "/tmp/abs.yaml", body: goodPod},
					{name: "..\\..\\windows.yaml", body: goodPod},
					{name: "bundle/dev", typ: tar.TypeChar},
					{name: "bundle/fifo", typ: tar.TypeFifo},
				})
				return archive
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				c := onlyCluster(t, s)
				if len(c.Pods) != 1 {
					t.Errorf("only the member inside the bundle loads:\n%s", describeSnap(s))
				}
				for _, n := range []string{"./../sibling.yaml", "bundle/../../up.yaml", "/tmp/abs.yaml"} {
					wantError(t, s, n, 0, "path escapes the bundle")
				}
				// the member named with backslashes has no "/", so the top directory stays in the names
				for _, n := range []string{"bundle/hard.yaml", "bundle/logs", "bundle/dev", "bundle/fifo"} {
					wantSkipped(t, s, n, "archive entry of type")
				}
				// on Linux a backslash is part of a name: an odd member name, read in memory like
				// any other, never a path
				if c.Get("Pod", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n") == nil {
					t.Error("the member named with backslashes is an ordinary member")
				}
			},
		},
		{
			name: "huge declared size",
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "bomb.tar.gz")
				declaredOnly(t, p, 1<<40)
				return p
			},
			maxHeap: 64 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "pods.yaml", 0, "1048576 MiB, more than the 256 MiB limit")
				wantError(t, s, "bomb.tar.gz", 0, "truncated or corrupt")
			},
		},
		{
			name: "declared size within the limit, body missing",
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "cut.tar.gz")
				declaredOnly(t, p, 200<<20)
				return p
			},
			maxHeap: 320 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantLoadError(t, s, err, "cut.tar.gz", "reading archive", "unexpected EOF")
			},
		},
		{
			name: "gzip bomb over the total limit",
			lim:  &Limits{MaxFileBytes: 16 << 20, MaxTotalBytes: 64 << 20, MaxFiles: 1000, MaxLogLines: 5000, MaxLineBytes: 16 << 10},
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "bomb.tar.gz")
				ts := newTarStream(t, p, gzip.BestSpeed)
				for i := 0; i < 10; i++ { // 150 MiB of zeros in well under 1 MiB
					ts.add(t, &tar.Header{Name: fmt.Sprintf("bundle/logs/ns/pod-%03d/c.log", i), Size: 15 << 20}, zeroReader(15<<20))
				}
				ts.close(t)
				return p
			},
			maxHeap: 160 << 20, // the 60 MiB read before the refusal, and their log lines as they are cut
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				// Refused part-way: what came before is read, the refusal is an error on the archive.
				wantError(t, s, "bomb.tar.gz", 0, "was refused after 5 entries", "unpacks to more than 64 MiB", "the rest was not")
			},
		},
		{
			name: "gzip bomb member over the file limit",
			big:  true,
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "bomb.tar.gz")
				ts := newTarStream(t, p, gzip.BestSpeed)
				ts.add(t, &tar.Header{Name: "bundle/pods.yaml", Size: int64(len(goodPod))}, strings.NewReader(goodPod))
				ts.add(t, &tar.Header{Name: "bundle/zeros.yaml", Size: 300 << 20}, zeroReader(300<<20))
				ts.close(t)
				return p
			},
			maxHeap: 64 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "zeros.yaml", 0, "300 MiB, more than the 256 MiB limit")
				if len(onlyCluster(t, s).Pods) != 1 {
					t.Error("the other member loads")
				}
			},
		},
		{
			name: "more members than MaxFiles",
			big:  true,
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "many.tar.gz")
				ts := newTarStream(t, p, gzip.BestSpeed)
				for i := 0; i <= DefaultLimits.MaxFiles; i++ {
					ts.add(t, &tar.Header{Name: fmt.Sprintf("bundle/logs/cattle-fleet-system/pod-%06d/agent.log", i)}, nil)
				}
				ts.close(t)
				return p
			},
			// Measured 264-286 MiB: every entry is counted and named in the refusal, well
			// inside the 1 GiB default budget; the bound guards against the 839 MB of before.
			maxHeap: 320 << 20,
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "many.tar.gz", 0, "was refused", fmt.Sprintf("more than %d files", DefaultLimits.MaxFiles))
			},
		},
		{
			name: "more members than MaxFiles (lowered limit)",
			lim:  &Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 30, MaxFiles: 100, MaxLogLines: 10, MaxLineBytes: 100},
			make: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "many.tar.gz")
				ts := newTarStream(t, p, gzip.BestSpeed)
				for i := 0; i < 5000; i++ {
					ts.add(t, &tar.Header{Name: fmt.Sprintf("bundle/pod-%04d.yaml", i), Size: int64(len(goodPod))}, strings.NewReader(goodPod))
				}
				ts.close(t)
				return p
			},
			check: func(t *testing.T, s *snapshot.Snapshot, err error) {
				wantError(t, s, "many.tar.gz", 0, "was refused after 101 entries", "more than 100 files")
				if len(onlyCluster(t, s).Pods) != 1 || len(s.Errors) != 1 {
					t.Errorf("the members before the refusal load (one Pod, 100 times):\n%s", describeSnap(s))
				}
			},
		},
	})
}

// indentList turns a YAML object into one item of a YAML list.
func indentList(obj string) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(obj))
	first := true
	for sc.Scan() {
		if first {
			b.WriteString("- " + sc.Text() + "\n")
			first = false
			continue
		}
		b.WriteString("  " + sc.Text() + "\n")
	}
	return b.String()
}

// The gzip layer cut or corrupted at each depth: before the header ends, inside the first
// block, and a bad checksum after a complete tar stream.
func TestBadInputTruncatedGzip(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.tar.gz")
	packTarGz(t, full, treeEntries(map[string]string{"a.yaml": goodPod, "b.yaml": podYAML("fleet-agent-7d9c5b6f4-zz9kq", "2026-11-28T08:00:00Z")}, "bundle/"))
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := (&Offline{Path: write("header-only.tar.gz", b[:6])}).Load(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "header-only.tar.gz") || !strings.Contains(err.Error(), "neither a directory nor a .tar.gz") {
		t.Errorf("gzip header cut: %v", err)
	}
	if _, err := (&Offline{Path: write("first-block.tar.gz", b[:40])}).Load(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "first-block.tar.gz") || !strings.Contains(err.Error(), "reading archive") {
		t.Errorf("cut in the first block: %v", err)
	}
	bad := append([]byte{}, b...)
	bad[len(bad)-6] ^= 0xff // inside the CRC-32 of the gzip trailer
	s, err := (&Offline{Path: write("bad-crc.tar.gz", bad)}).Load(context.Background())
	if err != nil {
		t.Fatalf("a bad checksum after complete members keeps them: %v", err)
	}
	wantError(t, s, "bad-crc.tar.gz", 0, "truncated or corrupt", "checksum")
	if c := onlyCluster(t, s); len(c.Pods) != 2 {
		t.Errorf("both members were read before the trailer:\n%s", describeSnap(s))
	}
}

// readTarGz reads members into memory and never creates a file: loading a hostile archive
// leaves its directory, its parent, the working directory and the temporary directory as
// they were.
func TestBadInputArchiveWritesNothing(t *testing.T) {
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	archive := filepath.Join(sandbox, "evil.tar.gz")
	os.MkdirAll(sandbox, 0o755)
	packTarGz(t, archive, []tarEntry{
		{name: "bundle/pods.yaml", body: goodPod},
		{name: "bundle/link", typ: tar.TypeSymlink, link: dir},
		{name: "bundle/link/through.yaml", body: goodPod},
		{name: "../escape.yaml", body: goodPod},
		{name: filepath.Join(dir, "absolute.yaml"), body: goodPod},
		{name: "bundle/sub/", typ: tar.TypeDir},
	})
	cwd, _ := os.Getwd()
	watch := []string{dir, cwd}
	before := map[string]string{}
	for _, w := range watch {
		before[w] = treeState(t, w)
	}
	tmpBefore := dirNames(t, os.TempDir())
	s := load(t, archive)
	if len(onlyCluster(t, s).Pods) != 1 {
		t.Errorf("the member inside loads:\n%s", describeSnap(s))
	}
	for _, w := range watch {
		if got := treeState(t, w); got != before[w] {
			t.Errorf("%s changed while loading the archive:\nbefore:\n%s\nafter:\n%s", w, before[w], got)
		}
	}
	for _, n := range dirNames(t, os.TempDir()) {
		if !contains(tmpBefore, n) && strings.Contains(n, "bundle") {
			t.Errorf("%s appeared in the temporary directory", n)
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	i := sort.SearchStrings(list, s)
	return i < len(list) && list[i] == s
}
