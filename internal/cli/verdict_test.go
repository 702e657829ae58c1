package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/catalog"
)

// copyTree copies the example (or a part of it) so a test can break it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

type verdictReport struct {
	Verdict  string   `json:"verdict"`
	FailOn   string   `json:"failOn"`
	Warnings []string `json:"warnings"`
	Hidden   struct {
		Filtered   int `json:"filtered"`
		Suppressed int `json:"suppressed"`
	} `json:"hidden"`
	Clock struct {
		Source  string `json:"source"`
		Ignored []struct {
			Time  string `json:"time"`
			Where string `json:"where"`
		} `json:"ignored"`
	} `json:"clock"`
	EvaluatedAt string `json:"evaluatedAt"`
	Clusters    []struct {
		Name    string `json:"name"`
		Objects int    `json:"objects"`
		Status  string `json:"status"`
	} `json:"clusters"`
	Findings []jsonFinding `json:"findings"`
	Skipped  []any         `json:"skipped"`
	Errors   []any         `json:"errors"`
}

func decodeVerdict(t *testing.T, out string) verdictReport {
	t.Helper()
	var r verdictReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return r
}

// A directory with nothing Kubernetes in it is not a healthy fleet: exit 1, saying what was read.
func TestScanOfNoObjectsFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.yaml"), []byte("hello: world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"scan", "preflight", "fix", "images"} {
		out, errOut, code := run(t, verb, "--from", dir, "--offline-registry")
		if code != ExitFailed {
			t.Errorf("%s of a directory without objects: exit %d, want %d\n%s%s", verb, code, ExitFailed, out, errOut)
		}
		if !strings.Contains(errOut, "no Kubernetes objects were read from "+dir) || !strings.Contains(errOut, "notes.yaml") {
			t.Errorf("%s: the error should say nothing was read and name the skipped file: %s", verb, errOut)
		}
		if strings.Contains(out, "No stuck upgrades found") {
			t.Errorf("%s printed the all-clear for an input without objects", verb)
		}
	}
	empty := t.TempDir()
	if _, errOut, code := run(t, "scan", "--from", empty); code != ExitFailed || !strings.Contains(errOut, "holds no files") {
		t.Errorf("empty directory: exit %d, %s", code, errOut)
	}
}

// A cluster of the bundle that holds no objects (a truncated copy) is "no data", and the
// scan is incomplete rather than the all-clear — unless the user accepts a partial read.
func TestScanWithAnEmptyClusterIsIncomplete(t *testing.T) {
	dir := copyTree(t, example+"/clusters/dev-1")
	bundle := t.TempDir()
	if err := os.Rename(dir, filepath.Join(bundle, "clusters", "dev-1")); err != nil {
		if err := os.MkdirAll(filepath.Join(bundle, "clusters"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir, filepath.Join(bundle, "clusters", "dev-1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(bundle, "clusters", "staging-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	info := "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: \"2026-11-28T09:30:00Z\"\nclusters:\n  - name: dev-1\n  - name: staging-1\n"
	if err := os.WriteFile(filepath.Join(bundle, "unstick-bundle.yaml"), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "scan", "--from", bundle)
	if code != ExitIncomplete {
		t.Fatalf("exit %d, want %d (incomplete)\n%s%s", code, ExitIncomplete, out, errOut)
	}
	if strings.Contains(out, "No stuck upgrades found") || !strings.Contains(out, "INCOMPLETE") || !strings.Contains(out, "staging-1") {
		t.Errorf("the table must say the scan is incomplete and name the empty cluster:\n%s", out)
	}
	if !strings.Contains(out, "no data") {
		t.Errorf("the empty cluster must show no data:\n%s", out)
	}
	if !strings.Contains(errOut, "not an all-clear") {
		t.Errorf("stderr should say why the exit code is 4: %s", errOut)
	}
	js, _, code := run(t, "scan", "--from", bundle, "-o", "json")
	r := decodeVerdict(t, js)
	if code != ExitIncomplete || r.Verdict != "incomplete" {
		t.Errorf("json: exit %d verdict %q", code, r.Verdict)
	}
	for _, c := range r.Clusters {
		if c.Name == "staging-1" && c.Status != "no data" {
			t.Errorf("staging-1 status %q, want no data", c.Status)
		}
	}
	if _, _, code := run(t, "scan", "--from", bundle, "--allow-incomplete"); code != ExitOK {
		t.Errorf("--allow-incomplete: exit %d, want 0", code)
	}
}

// A misspelt --only-cluster would hide every finding; it is a usage error naming the clusters.
func TestOnlyClusterMustNameAKnownCluster(t *testing.T) {
	for _, verb := range []string{"scan", "fix"} {
		_, errOut, code := run(t, verb, "--from", example, "--only-cluster", "prod-eu-l")
		if code != ExitUsage {
			t.Errorf("%s: exit %d, want %d", verb, code, ExitUsage)
		}
		if !strings.Contains(errOut, `"prod-eu-l"`) || !strings.Contains(errOut, "prod-eu-1") {
			t.Errorf("%s: the error should quote the bad name and list the known ones: %s", verb, errOut)
		}
	}
	// A Fleet Cluster name (what findings "about" a downstream cluster carry) is known too.
	if _, errOut, code := run(t, "scan", "--from", example, "--only-cluster", "c-m-4x7kq2zt"); code == ExitUsage {
		t.Errorf("a Fleet Cluster name was refused: %s", errOut)
	}
}

// What filters and suppressions hid is counted in every format.
func TestHiddenFindingsAreCounted(t *testing.T) {
	js, _, _ := run(t, "scan", "--from", example, "--only", "helm/", "-o", "json")
	r := decodeVerdict(t, js)
	if r.Hidden.Filtered == 0 || len(r.Findings) == 0 {
		t.Fatalf("hidden %+v with %d findings shown", r.Hidden, len(r.Findings))
	}
	all := decodeVerdict(t, mustOut(t, "scan", "--from", example, "-o", "json"))
	if got := len(r.Findings) + r.Hidden.Filtered; got != len(all.Findings) {
		t.Errorf("shown %d + hidden %d = %d, want every finding (%d)", len(r.Findings), r.Hidden.Filtered, got, len(all.Findings))
	}
	for _, format := range []string{"table", "markdown", "html", "sarif", "junit", "yaml"} {
		out, _, _ := run(t, "scan", "--from", example, "--only", "helm/", "-o", format)
		n := strings.Count(out, "hidden") + strings.Count(out, "Hidden")
		if n == 0 {
			t.Errorf("-o %s does not say that findings were hidden", format)
		}
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	conf := "suppress:\n  - id: pod/crashloop\n    reason: known, tracked in OPS-1\n    expires: \"2099-01-01\"\n"
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	r = decodeVerdict(t, mustOut(t, "scan", "--from", example, "--config", cfg, "-o", "json"))
	if r.Hidden.Suppressed != 1 {
		t.Errorf("suppressed %d, want 1", r.Hidden.Suppressed)
	}
}

// A filter that matches nothing in the input is not an all-clear: every human format says
// that the filters hid findings instead of "No stuck upgrades found".
func TestFilterMatchingNothingIsNotAllClear(t *testing.T) {
	all := decodeVerdict(t, mustOut(t, "scan", "--from", example, "-o", "json"))
	want := fmt.Sprintf("Nothing stuck matches the filters; they hid %d findings", len(all.Findings))
	for _, format := range []string{"table", "markdown", "html"} {
		out, errOut, code := run(t, "scan", "--from", example, "--only", "suc/", "-o", format)
		if code != ExitOK {
			t.Fatalf("-o %s: exit %d: %s", format, code, errOut)
		}
		if strings.Contains(strings.ToLower(out), "no stuck upgrades found") || !strings.Contains(out, want) {
			t.Errorf("-o %s on a filter that matched nothing:\n%s", format, out)
		}
	}
}

func mustOut(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, args...)
	if code != ExitOK && code != ExitFindings {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	return out
}

// One Event stamped in 2099 does not move the evaluation time of a bundle without metadata:
// it is left out and reported, and no release reads "pending for 26331 days".
func TestOneFarFutureTimestampDoesNotMoveTheClock(t *testing.T) {
	bundle := copyTree(t, example)
	if err := os.Remove(filepath.Join(bundle, "unstick-bundle.yaml")); err != nil {
		t.Fatal(err)
	}
	before := decodeVerdict(t, mustOut(t, "scan", "--from", bundle, "-o", "json"))
	ev := `apiVersion: v1
kind: Event
metadata:
  name: fleet-agent.from-the-future
  namespace: cattle-fleet-system
involvedObject:
  kind: Pod
  namespace: cattle-fleet-system
  name: fleet-agent-0
reason: Pulled
message: Container image "rancher/fleet-agent:v0.16.0" already present on machine
type: Normal
count: 1
firstTimestamp: "2099-01-01T00:00:00Z"
lastTimestamp: "2099-01-01T00:00:00Z"
`
	if err := os.WriteFile(filepath.Join(bundle, "clusters", "dev-1", "cattle-fleet-system", "future-event.yaml"), []byte(ev), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := run(t, "scan", "--from", bundle, "-o", "json")
	r := decodeVerdict(t, out)
	if r.EvaluatedAt != before.EvaluatedAt {
		t.Errorf("evaluated at %s, want %s as without the 2099 event", r.EvaluatedAt, before.EvaluatedAt)
	}
	if r.Clock.Source != "newest" || len(r.Clock.Ignored) != 1 || !strings.HasPrefix(r.Clock.Ignored[0].Time, "2099") {
		t.Errorf("clock %+v: want the 2099 timestamp reported as ignored", r.Clock)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "2099-01-01") || !strings.Contains(errOut, "2099-01-01") {
		t.Errorf("the ignored timestamp must be a warning in the report and on stderr: %v / %s", r.Warnings, errOut)
	}
	if len(r.Findings) != len(before.Findings) {
		t.Errorf("%d findings, want %d as without the 2099 event", len(r.Findings), len(before.Findings))
	}
}

// --now before the collection time is warned about and never turns heartbeats into clock skew.
func TestNowBeforeCollectionIsNotClockSkew(t *testing.T) {
	out, errOut, _ := run(t, "scan", "--from", example, "--now", "2026-11-27T09:30:00Z", "-o", "json")
	r := decodeVerdict(t, out)
	for _, f := range r.Findings {
		if f.ID == "cluster/clock-skew" {
			t.Errorf("--now a day early reported clock skew: %s", f.Summary)
		}
	}
	if len(r.Warnings) == 0 || !strings.Contains(errOut, "before the objects were collected") {
		t.Errorf("want a warning that --now is before the collection time; report %v, stderr %s", r.Warnings, errOut)
	}
}

// scan and preflight judge alike: every critical or error incident of scan blocks preflight,
// on the same clusters (and about the same downstream cluster).
func TestPreflightBlocksOnEveryScanIncident(t *testing.T) {
	scan := decodeVerdict(t, mustOut(t, "scan", "--from", example, "-o", "json"))
	var full jsonReport
	if err := json.Unmarshal([]byte(mustOut(t, "scan", "--from", example, "-o", "json")), &full); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "preflight", "--from", example, "--offline-registry", "-o", "json")
	if code != ExitFindings {
		t.Fatalf("preflight exit %d: %s", code, errOut)
	}
	var pf struct {
		Verdict  string `json:"verdict"`
		Blocking []struct {
			RootCause jsonFinding `json:"rootCause"`
			Blocks    string      `json:"blocks"`
		} `json:"blocking"`
	}
	if err := json.Unmarshal([]byte(out), &pf); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	// Each blocker says whether the catalogue calls its root cause an upgrade gate.
	blocks := map[string]bool{}
	for _, b := range pf.Blocking {
		rc := b.RootCause
		e, _ := cat.Get(rc.ID)
		if want := map[bool]string{true: "gate", false: "stuck"}[e != nil && e.Preflight]; b.Blocks != want {
			t.Errorf("blocker %s marked %q, want %q (catalogue preflight attribute)", rc.ID, b.Blocks, want)
		}
		blocks[rc.ID+"|"+rc.Cluster+"|"+rc.Affects] = true
	}
	n := 0
	for _, inc := range full.Incidents {
		rc := inc.RootCause
		if rc.Severity != "critical" && rc.Severity != "error" {
			continue
		}
		n++
		if !blocks[rc.ID+"|"+rc.Cluster+"|"+rc.Affects] {
			t.Errorf("scan's %s incident %s on %s (about %q) is not a preflight blocker", rc.Severity, rc.ID, rc.Cluster, rc.Affects)
		}
	}
	if n == 0 || len(scan.Findings) == 0 {
		t.Fatal("the example should have critical/error incidents")
	}
	table, _, _ := run(t, "preflight", "--from", example, "--offline-registry")
	if !strings.Contains(table, "local → prod-us-1") {
		t.Errorf("preflight's table must keep the management → downstream attribution:\n%s", table)
	}
}

// fix plans from a bundle exit 3 while incidents remain, and its footer fits the input.
func TestFixFromBundleExitsThreeAndHintsLive(t *testing.T) {
	out, errOut, code := run(t, "fix", "--from", example)
	if code != ExitFindings {
		t.Errorf("fix --from the example: exit %d, want %d (incidents remain)\n%s", code, ExitFindings, errOut)
	}
	if strings.Contains(out, "Run again with --apply") {
		t.Errorf("a plan from --from cannot be applied; the footer must not suggest --apply on it:\n%s", out)
	}
	if !strings.Contains(out, "fix --context") {
		t.Errorf("the footer should say how to apply against the live clusters:\n%s", out)
	}
}

// A truncated archive is never the all-clear: the clusters it lost show no data, the error
// names the archive, and a report that still has findings says it may not be all.
func TestTruncatedArchiveIsNotAnAllClear(t *testing.T) {
	whole := filepath.Join(t.TempDir(), "bundle.tar.gz")
	packDir(t, example, "", whole)
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(b) / 8, len(b) / 3, len(b) * 2 / 3} {
		p := filepath.Join(t.TempDir(), "truncated.tar.gz")
		if err := os.WriteFile(p, b[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := run(t, "scan", "--from", p)
		if code == ExitOK || strings.Contains(out, "No stuck upgrades found") {
			t.Errorf("cut at %d bytes: exit %d, an all-clear for a truncated archive\n%s%s", cut, code, out, errOut)
		}
		js, _, _ := run(t, "scan", "--from", p, "-o", "json")
		if strings.TrimSpace(js) == "" {
			continue // nothing readable at all: exit 1 with the reason, checked above
		}
		var r struct {
			Verdict       string `json:"verdict"`
			InputComplete bool   `json:"inputComplete"`
		}
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatal(err)
		}
		if r.InputComplete {
			t.Errorf("cut at %d bytes: inputComplete true", cut)
		}
		if r.Verdict == "findings" && !strings.Contains(out, "part of the input could not be read") {
			t.Errorf("cut at %d bytes: findings shown without saying the input was partial:\n%s", cut, out)
		}
	}
}

// --target-version judges every cluster against that version: a release whose manifest uses an
// API it removes blocks, named with its revision, the removed version, the replacement and the
// fix command aimed at its cluster; without the flag (and no Plan) the same cluster is a go.
func TestPreflightTargetVersionGate(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "scenarios", "api", "real-k8s132-flowschema-removed-healthy")
	out, errOut, code := run(t, "preflight", "--from", dir, "--offline-registry", "--now", "2026-11-28T09:30:00Z")
	if code != ExitOK || strings.Contains(out, "api/removed") {
		t.Fatalf("without --target-version: exit %d, want %d:\n%s%s", code, ExitOK, out, errOut)
	}
	out, errOut, code = run(t, "preflight", "--from", dir, "--offline-registry", "--now", "2026-11-28T09:30:00Z", "--target-version", "v1.32.0")
	if code != ExitFindings {
		t.Fatalf("--target-version v1.32.0: exit %d, want %d:\n%s%s", code, ExitFindings, out, errOut)
	}
	for _, want := range []string{
		"gate  api/removed-in-target [prod-ap-1] Helm release kube-system/apf-tuning",
		"(revision 2)", "flowcontrol.apiserver.k8s.io/v1beta3 (→ flowcontrol.apiserver.k8s.io/v1)", "--target-version is v1.32.0",
		// The bundle names its one cluster but records no context: the placeholder stands in.
		"$ helm --kube-context <context> mapkubeapis apf-tuning --namespace kube-system",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("preflight does not say %q:\n%s", want, out)
		}
	}
	// A minor alone is enough for the API gate.
	out, errOut, code = run(t, "preflight", "--from", dir, "--offline-registry", "--now", "2026-11-28T09:30:00Z", "--target-version", "v1.32")
	if code != ExitFindings || !strings.Contains(out, "gate  api/removed-in-target [prod-ap-1] Helm release kube-system/apf-tuning") {
		t.Errorf("--target-version v1.32: exit %d, want %d with the release blocking:\n%s%s", code, ExitFindings, out, errOut)
	}
}

// A bundle without clusters/ is one cluster, named after what it holds ("local" for a
// management cluster). Nothing recorded the kubeconfig context it was read through, and
// neither that name nor the bundle directory's is one: its commands carry --context
// <context> and say what to put there, never the loader's placeholder for the cluster (a
// NUL-prefixed name once reached `fix`'s kubectl lines).
func TestSingleClusterBundleCommandsNameTheCluster(t *testing.T) {
	dir := "../../testdata/scenarios/fleet/agent-upgrade-stuck-positive"
	js := mustOut(t, "scan", "--from", dir, "--now", "2026-11-28T09:30:00Z", "-o", "json")
	var r struct {
		Clusters []struct{ Name, Context, ContextSource string }
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Clusters) != 1 || r.Clusters[0].Name != "local" || r.Clusters[0].Context != "" || r.Clusters[0].ContextSource != "unknown" {
		t.Errorf("clusters %+v, want one named local whose context is unknown", r.Clusters)
	}
	for _, args := range [][]string{
		{"scan", "--from", dir, "--now", "2026-11-28T09:30:00Z"},
		{"fix", "--from", dir, "--now", "2026-11-28T09:30:00Z"},
		{"fix", "--from", dir, "--now", "2026-11-28T09:30:00Z", "-o", "json"},
	} {
		out, _, _ := run(t, args...)
		// fix -o json escapes < and > as JSON's encoder does by default.
		aimed := strings.Contains(out, "--context <context> -n fleet-default patch") || strings.Contains(out, `--context \u003ccontext\u003e -n fleet-default patch`)
		if strings.ContainsRune(out, 0) || strings.Contains(out, `\u0000`) || strings.Contains(out, "context 'root'") || !aimed {
			t.Errorf("%v: the redeploy command is not aimed at --context <context>:\n%s", args, out)
		}
		if strings.Contains(out, "--context local") || strings.Contains(out, "--context agent-upgrade-stuck-positive") {
			t.Errorf("%v: a command is aimed at a context nothing recorded:\n%s", args, out)
		}
	}
}
