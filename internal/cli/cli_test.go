package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/removedapi"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const example = "../../examples/fleet-upgrade-stuck"

// run executes the CLI in-process and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), code
}

type jsonReport struct {
	SchemaVersion string `json:"schemaVersion"`
	Clusters      []struct {
		Name string `json:"name"`
		Role string `json:"role"`
	} `json:"clusters"`
	Incidents []struct {
		RootCause jsonFinding   `json:"rootCause"`
		Symptoms  []jsonFinding `json:"symptoms"`
	} `json:"incidents"`
	Findings []jsonFinding `json:"findings"`
	Errors   []struct {
		File    string `json:"file"`
		Message string `json:"message"`
	} `json:"errors"`
}

type jsonFinding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Cluster  string `json:"cluster"`
	Affects  string `json:"affects"`
	Object   struct {
		APIVersion, Kind, Namespace, Name string
	} `json:"object"`
	Summary     string            `json:"summary"`
	Evidence    []json.RawMessage `json:"evidence"`
	Remediation []json.RawMessage `json:"remediation"`
}

func scanJSON(t *testing.T, from string) (jsonReport, string, int) {
	t.Helper()
	out, errOut, code := run(t, "scan", "--from", from, "-o", "json")
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("scan -o json printed no JSON (%v); stderr: %s", err, errOut)
	}
	return r, out, code
}

// The README's first command: the example fleet's stuck upgrades (three Fleet/SUC ones and
// two of Rancher's own), each an incident with the right root cause, nothing serious about
// the healthy clusters, exit 3.
func TestScanExampleFindsEachStuckUpgrade(t *testing.T) {
	r, _, code := scanJSON(t, example)
	if code != ExitFindings {
		t.Fatalf("exit code %d, want %d", code, ExitFindings)
	}
	want := map[string]string{ // root cause ID → the downstream cluster it is about
		"helm/release-pending":     "prod-eu-1",
		"agent/crd-missing":        "prod-us-1",
		"pod/unschedulable-taints": "edge-arm-1",
		// prod-ap-1 is not stuck: its next upgrade (its Plan: v1.32) would break it
		"api/removed-in-target":  "prod-ap-1",
		"crd/version-not-served": "prod-ap-1",
		// Rancher's own upgrades: a provisioned cluster's worker drain blocked by a
		// PodDisruptionBudget, and an imported cluster's stuck Rancher-managed upgrade (with
		// the operators' own Plan it disabled as a symptom).
		"rancher/drain-blocked":          "prod-eu-2",
		"rancher/imported-upgrade-stuck": "edge-rke2-7",
	}
	for id, cluster := range want {
		found := false
		for _, inc := range r.Incidents {
			rc := inc.RootCause
			if rc.ID == id && (rc.Cluster == cluster || rc.Affects == cluster) {
				found = true
			}
		}
		if !found {
			t.Errorf("no incident with root cause %s on %s", id, cluster)
		}
	}
	for _, f := range r.Findings {
		about := f.Cluster
		if f.Affects != "" {
			about = f.Affects
		}
		if (about == "staging-1" || about == "dev-1") && (f.Severity == "error" || f.Severity == "critical") {
			t.Errorf("healthy cluster %s flagged: %s %s", about, f.ID, f.Summary)
		}
	}
	if len(r.Errors) != 0 {
		t.Errorf("the example should load cleanly, got errors: %+v", r.Errors)
	}
}

// The JSON output has exactly the top-level shape of SPEC §2.2.
func TestScanJSONShape(t *testing.T) {
	_, out, _ := scanJSON(t, example)
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schemaVersion", "clusters", "incidents", "findings", "errors"} {
		if _, ok := top[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if string(top["schemaVersion"]) != `"1"` {
		t.Errorf("schemaVersion = %s, want \"1\"", top["schemaVersion"])
	}
	var r jsonReport
	_ = json.Unmarshal([]byte(out), &r)
	for _, f := range r.Findings {
		if f.ID == "" || f.Severity == "" || f.Cluster == "" || f.Object.Kind == "" || f.Object.Name == "" || f.Summary == "" || f.Evidence == nil || f.Remediation == nil {
			t.Errorf("finding lacks a SPEC field: %+v", f)
		}
	}
}

// A bundle packed as .tar.gz gives the same findings as the directory.
func TestTarGzGivesIdenticalFindings(t *testing.T) {
	tgz := filepath.Join(t.TempDir(), "bundle.tar.gz")
	packDir(t, example, "fleet-upgrade-stuck", tgz)
	_, dirOut, dirCode := scanJSON(t, example)
	_, tarOut, tarCode := scanJSON(t, tgz)
	if dirCode != tarCode {
		t.Errorf("exit codes differ: dir %d, tar.gz %d", dirCode, tarCode)
	}
	if dirOut != tarOut {
		t.Errorf("tar.gz scan differs from the directory scan:\n%s", firstDiff(dirOut, tarOut))
	}
}

func packDir(t *testing.T, dir, prefix, dest string) {
	t.Helper()
	f, err := os.Create(dest)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: prefix + "/" + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "line " + strconv.Itoa(i+1) + ":\n- " + al[i] + "\n+ " + bl[i]
		}
	}
	return "lengths differ"
}

// Every renderer's output of the example is compared with its golden file (-update rewrites).
func TestRenderersGolden(t *testing.T) {
	for _, format := range []string{"table", "json", "yaml", "markdown"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := run(t, "scan", "--from", example, "-o", format, "--color", "never")
			if code != ExitFindings {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			golden := filepath.Join("testdata", "golden", "example."+format)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
			}
			if out != string(want) {
				t.Errorf("%s output differs from %s (rerun with -update if the change is intended):\n%s", format, golden, firstDiff(string(want), out))
			}
		})
	}
}

// The table's prose stays readable at 100 columns; a command stands whole on its own line,
// however long, since a folded command pasted into a shell runs as two.
func TestTableFitsHundredColumns(t *testing.T) {
	out, _, _ := run(t, "scan", "--from", example, "--color", "never")
	commands := 0
	for i, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "$ ") {
			commands++
			if !strings.Contains(line, "--context ") && !strings.Contains(line, "helm --kube-context ") {
				t.Errorf("line %d: a command without --context: %q", i+1, line)
			}
			continue
		}
		if n := len([]rune(line)); n > 100 {
			t.Errorf("line %d is %d columns: %q", i+1, n, line)
		}
	}
	if commands == 0 {
		t.Error("no command in the table")
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"explain known", []string{"explain", "helm/release-pending"}, ExitOK, ""},
		{"explain unknown suggests", []string{"explain", "helm/release-pendin"}, ExitUsage, "helm/release-pending"},
		{"explain a typo", []string{"explain", "helm/release-pendng"}, ExitUsage, "did you mean: helm/release-pending"},
		{"scan without input or kubeconfig", []string{"scan", "--kubeconfig", "testdata/no-such-kubeconfig"}, ExitFailed, "--from"},
		{"scan missing bundle", []string{"scan", "--from", "does-not-exist"}, ExitUsage, "does-not-exist"},
		{"bad --now", []string{"scan", "--from", example, "--now", "yesterday"}, ExitUsage, "RFC 3339"},
		{"bad -o", []string{"scan", "--from", example, "-o", "xml"}, ExitUsage, "xml"},
		{"unknown flag", []string{"scan", "--frm", example}, ExitUsage, "unknown flag"},
		{"unknown threshold", []string{"scan", "--from", example, "--threshold", "helm.pendingAftr=5m"}, ExitUsage, "helm.pendingAftr"},
		{"bad threshold value", []string{"scan", "--from", example, "--threshold", "helm.pendingAfter=soon"}, ExitUsage, "helm.pendingAfter"},
		{"unknown --only", []string{"scan", "--from", example, "--only", "helm/pendng"}, ExitUsage, "helm/pendng"},
		{"unknown --only family", []string{"scan", "--from", example, "--only", "sucx/"}, ExitUsage, "no finding ID starts with \"sucx/\" (the families are agent/,"},
		{"unknown fix --only family", []string{"fix", "--from", example, "--only", "hlem/*"}, ExitUsage, "no finding ID starts with \"hlem/\""},
		{"fail-on none", []string{"scan", "--from", example, "--fail-on", "none", "-o", "json"}, ExitOK, ""},
		{"not a bundle", []string{"scan", "--from", "cli_test.go"}, ExitFailed, "cli_test.go"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := run(t, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, c.code, errOut)
			}
			if c.err != "" && !strings.Contains(errOut, c.err) {
				t.Errorf("stderr %q does not mention %q", errOut, c.err)
			}
		})
	}
}

// --only and --cluster narrow the report.
func TestScanFilters(t *testing.T) {
	out, _, _ := run(t, "scan", "--from", example, "-o", "json", "--only", "helm/")
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) == 0 {
		t.Fatal("--only helm/ found nothing")
	}
	for _, f := range r.Findings {
		if !strings.HasPrefix(f.ID, "helm/") {
			t.Errorf("--only helm/ let %s through", f.ID)
		}
	}
	out, _, _ = run(t, "scan", "--from", example, "-o", "json", "--only-cluster", "edge-arm-1")
	r = jsonReport{}
	_ = json.Unmarshal([]byte(out), &r)
	for _, f := range r.Findings {
		if f.Cluster != "edge-arm-1" && f.Affects != "edge-arm-1" {
			t.Errorf("--only-cluster edge-arm-1 let through %s on %s/%s", f.ID, f.Cluster, f.Affects)
		}
	}
}

// Bad input does not stop a scan: every bad file is named in the report and the exit code
// still reflects the findings of the good ones.
func TestScanNamesEveryBadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("core.bin", "\x7fELF\x02\x01\x01\x00\x00\x00binary\x00\x00data")
	write("broken.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   namespace: bad-indent\n")
	write("truncated.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fleet-agent-7d9f8","namespace":"cattle-fleet-system"},"status":{"pha`)
	// A pending agent release whose payload is corrupt: the labels still tell.
	write("helm-corrupt.yaml", `apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.fleet-agent-local.v7
  namespace: cattle-fleet-local-system
  labels: {name: fleet-agent-local, owner: helm, status: pending-upgrade, version: "7", modifiedAt: "1764309600"}
data:
  release: SDRzSUFBQUFBQUFBLytzTUtDbEtUY3N2eWszTk0=
`)
	out, errOut, code := run(t, "scan", "--from", dir, "--now", "2026-11-28T09:30:00Z", "--color", "never")
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d (the pending release is critical); stderr %s\n%s", code, ExitFindings, errOut, out)
	}
	for _, name := range []string{"core.bin", "broken.yaml:5", "truncated.json", "helm-corrupt.yaml"} {
		if !strings.Contains(out, name) {
			t.Errorf("the report does not name %s:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "helm/release-pending") {
		t.Errorf("the pending release (from its labels) was not reported:\n%s", out)
	}
}

// A server that does not answer fails fast, exit 1, naming the server. (A context that does
// not exist is a usage error: TestUnknownContextIsAUsageError.)
func TestLiveScanFailsFast(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: refused
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: refused
  context: {cluster: refused, user: u}
current-context: refused
users:
- name: u
  user: {token: not-a-real-token}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"scan", "--kubeconfig", kc, "--timeout", "5s"}, "https://127.0.0.1:1"},
		{[]string{"collect", "--kubeconfig", kc, "--timeout", "5s", "--to", filepath.Join(t.TempDir(), "b.tgz")}, "https://127.0.0.1:1"},
	}
	for _, c := range cases {
		start := time.Now()
		_, errOut, code := run(t, c.args...)
		if code != ExitFailed {
			t.Errorf("%v: exit %d, want 1 (stderr %q)", c.args, code, errOut)
		}
		if !strings.Contains(errOut, c.want) {
			t.Errorf("%v: stderr %q does not name %s", c.args, errOut, c.want)
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("%v took %s, more than its timeout", c.args, d)
		}
	}
}

// explain api/ names the removed-API table's source; --table lists it, and only for api/ IDs.
func TestExplainRemovedAPITable(t *testing.T) {
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
		return code, out.String()
	}
	code, out := run("explain", "api/removed-in-target")
	if code != ExitOK || !strings.Contains(strings.Join(strings.Fields(out), " "), removedapi.Source()) || strings.Contains(out, "PodDisruptionBudget") {
		t.Errorf("explain without --table (exit %d): want the source and no rows:\n%s", code, out)
	}
	code, out = run("explain", "api/removed", "--table")
	if code != ExitOK {
		t.Fatalf("explain --table: exit %d", code)
	}
	for _, r := range removedapi.All() {
		if !strings.Contains(out, r.APIVersion()) || !strings.Contains(out, r.Kind) {
			t.Errorf("--table lacks %s %s", r.APIVersion(), r.Kind)
		}
	}
	// The deprecated table follows, with planned removals marked as plans and each row's source.
	i := strings.Index(out, "DEPRECATED-API TABLE")
	if i < 0 {
		t.Fatalf("--table prints no deprecated table:\n%s", out)
	}
	dep := out[i:]
	for _, want := range []string{"Endpoints", "discovery.k8s.io/v1 EndpointSlice", "1.38 (plan)", "[k8s.io/api"} {
		if !strings.Contains(dep, want) {
			t.Errorf("--table's deprecated table lacks %q", want)
		}
	}
	if strings.Contains(out, "IngressClassList") && !strings.Contains(out, "names the list kind IngressClassList") {
		t.Error("IngressClass's replacement is the IngressClass kind")
	}
	if code, _ := run("explain", "helm/release-pending", "--table"); code != ExitUsage {
		t.Errorf("--table on a helm/ ID: want exit %d, got %d", ExitUsage, code)
	}
}
