package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"

	"github.com/unstick-dev/unstick/internal/report/reporttest"
)

// TestMain keeps the developer's own ~/.config/unstick/config.yaml out of every test.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "unstick-cli-test-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// withVersion stamps a fixed version for output that names it (sarif, html).
func withVersion(t *testing.T, v string) {
	old := Version
	Version = v
	t.Cleanup(func() { Version = old })
}

// The report formats for people and CI are compared with golden files like the others
// (go test ./internal/cli -run TestRenderersGolden -update rewrites them), and each is
// checked to be what its consumers accept.
func TestRenderersGoldenReports(t *testing.T) {
	withVersion(t, "v0.0.0-golden")
	for _, format := range []string{"html", "sarif", "junit"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := run(t, "scan", "--from", example, "-o", format)
			if code != ExitFindings {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			golden := filepath.Join("testdata", "golden", "example."+format)
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/cli -run TestRenderersGolden -update to create it)", err)
			}
			if out != string(want) {
				t.Errorf("%s output differs from %s (rerun with -update if the change is intended):\n%s", format, golden, firstDiff(string(want), out))
			}
			switch format {
			case "sarif":
				if err := reporttest.ValidateSARIF(t, []byte(out)); err != nil {
					t.Errorf("the example's SARIF does not validate against the SARIF 2.1.0 schema: %v", err)
				}
			case "junit":
				suites, err := junit.Ingest([]byte(out))
				if err != nil {
					t.Fatalf("the example's JUnit does not parse: %v", err)
				}
				failed := map[string]int{}
				for _, s := range suites {
					failed[s.Name] = s.Totals.Failed
				}
				for _, c := range []string{"prod-eu-1", "prod-us-1", "edge-arm-1"} {
					if failed[c] == 0 {
						t.Errorf("JUnit: no failure on %s, which has a stuck upgrade", c)
					}
				}
				for _, c := range []string{"dev-1", "staging-1"} {
					if failed[c] != 0 {
						t.Errorf("JUnit: %d failures on the healthy cluster %s", failed[c], c)
					}
				}
			}
		})
	}
}

// --output-file writes the report there, nothing to stdout, and the exit code is unchanged.
func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "report.json")
	out, errOut, code := run(t, "scan", "--from", example, "-o", "json", "--output-file", file)
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d (stderr %s)", code, ExitFindings, errOut)
	}
	if out != "" {
		t.Errorf("stdout is not empty with --output-file: %q", out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	direct, _, _ := run(t, "scan", "--from", example, "-o", "json")
	if string(b) != direct {
		t.Errorf("the file differs from stdout output:\n%s", firstDiff(direct, string(b)))
	}
	// The report holds cluster data: only its owner reads it.
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	// --fail-on none: the same file, exit 0.
	if _, _, code := run(t, "scan", "--from", example, "-o", "json", "--output-file", file, "--fail-on", "none"); code != ExitOK {
		t.Errorf("--fail-on none with --output-file: exit %d", code)
	}
	// A directory that does not exist: a usage error naming it (more in TestOutputFileRefusedBeforeReading).
	bad := filepath.Join(dir, "no-such-dir", "r.html")
	_, errOut, code = run(t, "scan", "--from", example, "-o", "html", "--output-file", bad)
	if code != ExitUsage || !strings.Contains(errOut, "no-such-dir") {
		t.Errorf("unwritable --output-file: exit %d, stderr %q", code, errOut)
	}
}

// -v shows what unstick itself did, -vv with timings; by default stderr stays quiet.
func TestVerbosity(t *testing.T) {
	_, errOut, _ := run(t, "scan", "--from", example, "-o", "json")
	if errOut != "" {
		t.Errorf("stderr without -v: %q", errOut)
	}
	_, errOut, _ = run(t, "scan", "--from", example, "-o", "json", "-v")
	if !strings.Contains(errOut, "info: loaded clusters=9") || strings.Contains(errOut, "debug:") {
		t.Errorf("-v: %q", errOut)
	}
	_, errOut, _ = run(t, "-vv", "scan", "--from", example, "-o", "json")
	if !strings.Contains(errOut, "debug: evaluated") || !strings.Contains(errOut, "s] info: loaded") {
		t.Errorf("-vv: %q", errOut)
	}
	_, errOut, _ = run(t, "scan", "--from", example, "-o", "json", "--verbosity=2")
	if !strings.Contains(errOut, "debug:") {
		t.Errorf("--verbosity=2: %q", errOut)
	}
}

// The progress line counts and measures a rate, and lets log lines through above itself.
func TestProgressCountsAndRate(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, tty: true, on: true, phases: map[string]time.Time{}}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return clock }
	p.count("reading clusters", 0, 40, "clusters")
	clock = clock.Add(2 * time.Second)
	p.count("reading clusters", 10, 40, "clusters")
	if !strings.HasSuffix(b.String(), "reading clusters: 10/40 clusters (5.00/s, ~6s left)") {
		t.Errorf("status %q", b.String())
	}
	b.Reset()
	if _, err := p.Write([]byte("warning: something\n")); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "\r\x1b[Kwarning: something\nreading clusters: 10/40 clusters (5.00/s, ~6s left)" {
		t.Errorf("log line through the status: %q", got)
	}
	clock = clock.Add(time.Second)
	b.Reset()
	p.count("reading bundle", 1200, 0, "files")
	clock = clock.Add(time.Second)
	p.count("reading bundle", 2400, 0, "files")
	if !strings.HasSuffix(b.String(), "reading bundle: 2400 files (2400/s)") {
		t.Errorf("status %q", b.String())
	}
	p.done()
	if !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Errorf("done did not clear the line: %q", b.String())
	}
	// Not a terminal, or -q: no status at all, log lines still pass.
	var q bytes.Buffer
	np := newProgress(&q, false)
	np.count("reading", 5, 10, "things")
	_, _ = np.Write([]byte("info: x\n"))
	if q.String() != "info: x\n" {
		t.Errorf("off a terminal: %q", q.String())
	}
}

func decodeJSON(t *testing.T, s string) jsonReport {
	t.Helper()
	var r jsonReport
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return r
}

func runIn(t *testing.T, argv0 string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runAs(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, argv0, args)
	return out.String(), errOut.String(), code
}
