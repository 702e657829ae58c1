package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/report"
)

// The views tell one story: on the example and on every scenario bundle, scan (JSON, JUnit,
// HTML), preflight and fix name the same clusters as affected, the same root causes and the
// same verdict. A preflight adds incidents of its own only for what only it reports, marked
// as such, and those never change one scan reports.
func TestViewsTellOneStory(t *testing.T) {
	inputs := map[string]string{"example": example}
	root := filepath.Join("..", "..", "testdata", "scenarios")
	for _, dir := range scenarioBundles(t, root) {
		name, _ := filepath.Rel(root, dir)
		inputs[name] = dir
	}
	for name, dir := range inputs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			v := readViews(t, dir)
			if v == nil {
				return
			}
			v.statusesAgree(t)
			v.blockingIsScans(t)
			v.planIsScans(t)
			v.verdictsAgree(t)
		})
	}
}

// scenarioBundles are the directories under root holding a scenario's expect.yaml beside its
// bundle.
func scenarioBundles(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "expect.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios under %s: %v", root, err)
	}
	return dirs
}

// scenarioNow is the time a scenario is judged at (its expect.yaml's now), else "" (the
// bundle's collection time).
func scenarioNow(t *testing.T, dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	if err != nil {
		return nil
	}
	var e struct {
		Now time.Time `json:"now"`
	}
	if err := yaml.Unmarshal(b, &e); err != nil {
		t.Fatalf("expect.yaml: %v", err)
	}
	if e.Now.IsZero() {
		return nil
	}
	return []string{"--now", e.Now.Format(time.RFC3339)}
}

// views are what every verb said about one input.
type views struct {
	scan        report.Report
	scanCode    int
	junit, html string
	pf          preflightResult
	pfCode      int
	plan        remediate.Plan
}

func readViews(t *testing.T, dir string) *views {
	t.Helper()
	now := scenarioNow(t, dir)
	v := &views{}
	var out, errOut string
	out, errOut, v.scanCode = run(t, append([]string{"scan", "--from", dir, "-o", "json"}, now...)...)
	if v.scanCode == ExitFailed {
		t.Logf("scan exits 1 (no verdict to compare): %s", errOut)
		return nil
	}
	decode(t, "scan -o json", out, &v.scan)
	v.junit, _, _ = run(t, append([]string{"scan", "--from", dir, "-o", "junit"}, now...)...)
	v.html, _, _ = run(t, append([]string{"scan", "--from", dir, "-o", "html"}, now...)...)
	out, _, v.pfCode = run(t, append([]string{"preflight", "--from", dir, "-o", "json", "--offline-registry"}, now...)...)
	decode(t, "preflight -o json", out, &v.pf)
	out, _, _ = run(t, append([]string{"fix", "--from", dir, "-o", "json"}, now...)...)
	decode(t, "fix -o json", out, &v.plan)
	return v
}

func decode(t *testing.T, what, out string, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
}

// statusesAgree: every cluster has the same status in scan's JSON, its JUnit suites (which
// fail exactly when the status is at or above error), its HTML grid, and preflight's report
// once the incidents only a preflight reports are set aside.
func (v *views) statusesAgree(t *testing.T) {
	want := map[string]string{}
	for _, n := range reportClusters(&v.scan) {
		want[n], _ = v.scan.StatusOf(n)
	}
	for name, status := range junitStatuses(t, v.junit) {
		if want[name] != status {
			t.Errorf("junit: cluster %s is %q, scan's JSON says %q", name, status, want[name])
		}
	}
	for name, status := range htmlStatuses(t, v.html) {
		if w := gridStatus(want[name]); w != status {
			t.Errorf("html: cluster %s is %q in the grid, scan's JSON says %q", name, status, want[name])
		}
	}
	pr := *v.pf.Report
	pr.Clusters = append([]report.Cluster{}, pr.Clusters...)
	pr.Incidents = nil
	for _, inc := range v.pf.Report.Incidents {
		if !inc.RootCause.PreflightOnly {
			pr.Incidents = append(pr.Incidents, inc)
		}
	}
	pr.SetClusterStatuses()
	for name, status := range want {
		if got, _ := pr.StatusOf(name); got != status {
			t.Errorf("preflight: cluster %s is %q without preflight's own incidents, scan says %q", name, got, status)
		}
	}
}

// reportClusters are the clusters read and those an incident names.
func reportClusters(r *report.Report) []string {
	seen := map[string]bool{}
	for _, c := range r.Clusters {
		seen[c.Name] = true
	}
	for _, inc := range r.Incidents {
		for _, c := range inc.Clusters {
			seen[c] = true
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// gridStatus is how the HTML grid shows a status: a severity, else ok.
func gridStatus(status string) string {
	if _, err := finding.ParseSeverity(status); err != nil {
		return "ok"
	}
	return status
}

// incidentKey names an incident by its root cause and the clusters it affects.
func incidentKey(inc finding.Incident) string {
	rc := inc.RootCause
	return rc.ID + " " + rc.Cluster + " " + rc.Object.String() + " " + strings.Join(inc.Clusters, ",")
}

// blockingIsScans: preflight blocks on exactly scan's incidents at or above error, with the
// same root cause, object and clusters, each with the incident's next step as its one fix;
// any other blocker is one only a preflight reports, marked a gate.
func (v *views) blockingIsScans(t *testing.T) {
	want := map[string]finding.Incident{}
	for _, inc := range v.scan.Incidents {
		if inc.Worst() >= finding.Error {
			want[incidentKey(inc)] = inc
		}
	}
	for _, b := range v.pf.Blocking {
		k := incidentKey(b.Incident)
		if b.RootCause.PreflightOnly {
			if b.Kind != "gate" {
				t.Errorf("preflight's own blocker %s is marked %q, want gate", k, b.Kind)
			}
			continue
		}
		inc, ok := want[k]
		if !ok {
			t.Errorf("preflight blocks on %s, which scan does not report at or above error", k)
			continue
		}
		delete(want, k)
		if !sameStep(inc.NextStep, b.NextStep) {
			t.Errorf("preflight's fix for %s is %+v, scan's next step %+v", k, b.NextStep, inc.NextStep)
		}
	}
	for k := range want {
		t.Errorf("scan's incident %s does not block preflight", k)
	}
}

// planIsScans: every incident fix plans or leaves to the operator is one of scan's, with the
// same root cause, clusters and next step.
func (v *views) planIsScans(t *testing.T) {
	scan := map[string]finding.Incident{}
	for _, inc := range v.scan.Incidents {
		scan[reasonKey(inc.RootCause.ID, inc.RootCause.Cluster, inc.RootCause.Object)] = inc
	}
	check := func(r remediate.Reason, clusters []string, next *finding.Step) {
		k := reasonKey(r.FindingID, r.Cluster, r.Object)
		inc, ok := scan[k]
		switch {
		case !ok:
			t.Errorf("fix plans %s, not an incident scan reports", k)
		case strings.Join(clusters, ",") != strings.Join(inc.Clusters, ","):
			t.Errorf("fix says %s affects %v, scan %v", k, clusters, inc.Clusters)
		case !sameStep(inc.NextStep, next):
			t.Errorf("fix's next step for %s is %+v, scan's %+v", k, next, inc.NextStep)
		}
	}
	for _, ip := range v.plan.Incidents {
		check(ip.RootCause, ip.Clusters, ip.NextStep)
	}
	for _, m := range v.plan.Manual {
		check(m.Finding, m.Clusters, m.NextStep)
	}
}

func reasonKey(id, cluster string, obj finding.ObjectRef) string {
	return id + " " + cluster + " " + obj.String()
}

func sameStep(a, b *finding.Step) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// verdictsAgree: scan exits 3 exactly when preflight blocks on one of scan's incidents, and 4
// exactly when preflight, blocked by nothing, is incomplete.
func (v *views) verdictsAgree(t *testing.T) {
	scansBlock, ownBlock := false, len(v.pf.BlockingImages) > 0
	for _, b := range v.pf.Blocking {
		if b.RootCause.PreflightOnly {
			ownBlock = true
		} else {
			scansBlock = true
		}
	}
	if (v.scanCode == ExitFindings) != scansBlock {
		t.Errorf("scan exits %d but preflight blocks on scan's incidents: %v", v.scanCode, scansBlock)
	}
	if v.scanCode == ExitFindings != (v.scan.Verdict == report.VerdictFindings) {
		t.Errorf("scan exits %d with verdict %q", v.scanCode, v.scan.Verdict)
	}
	incomplete := v.scanCode == ExitIncomplete
	if want := incomplete && !ownBlock; want != (v.pf.Verdict == verdictIncomplete) {
		t.Errorf("scan exits %d, preflight's verdict is %q (own blockers: %v)", v.scanCode, v.pf.Verdict, ownBlock)
	}
	if v.pf.Verdict == "go" && v.scanCode != ExitOK {
		t.Errorf("preflight says go, scan exits %d", v.scanCode)
	}
	if want := map[string]int{"go": ExitOK, "no-go": ExitFindings, verdictIncomplete: ExitIncomplete}[v.pf.Verdict]; v.pfCode != want {
		t.Errorf("preflight's verdict %q exits %d, want %d", v.pf.Verdict, v.pfCode, want)
	}
}
