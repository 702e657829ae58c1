package check_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// judged is one scenario (or the example) loaded and judged as scan judges it.
type judged struct {
	name string
	snap *snapshot.Snapshot
	rep  *report.Report
}

// judgeAll loads and judges every scenario under testdata/scenarios and the example bundle,
// each at the time its expect.yaml names (the example at its collection time).
func judgeAll(t *testing.T) []judged {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "..", "testdata", "scenarios")
	dirs := append(scenarioDirs(t), filepath.Join("..", "..", "examples", "fleet-upgrade-stuck"))
	out := make([]judged, 0, len(dirs))
	for _, dir := range dirs {
		var want expectation
		if b, err := os.ReadFile(filepath.Join(dir, "expect.yaml")); err == nil {
			if err := yaml.Unmarshal(b, &want); err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
		}
		snap, err := (&source.Offline{Path: dir}).Load(context.Background())
		if err != nil {
			t.Fatalf("loading %s: %v", dir, err)
		}
		now := want.Now
		if now.IsZero() {
			now = snap.CollectedAt
		}
		ctx := &check.Context{Snap: snap, Now: now, Thresholds: check.NewThresholds(cat), Catalog: cat}
		incs, fs, errs := check.Evaluate(ctx, check.Filter{})
		name, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(name, "..") {
			name = filepath.Base(dir)
		}
		out = append(out, judged{name: name, snap: snap, rep: report.New(snap, now, incs, fs, errs)})
	}
	return out
}

// eachCommand calls fn with every command of every finding of every incident (root cause
// and symptoms) and of the incident's next step.
func eachCommand(r *report.Report, fn func(inc finding.Incident, f finding.Finding, cmd string)) {
	for _, inc := range r.Incidents {
		for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
			for _, st := range f.Remediation {
				for _, c := range st.Commands {
					fn(inc, f, c)
				}
			}
		}
		if inc.NextStep != nil {
			for _, c := range inc.NextStep.Commands {
				fn(inc, inc.RootCause, c)
			}
		}
	}
}

// secretFlag matches a credential given on a command line: a password or token flag with a
// value (--password-stdin and --token-file name where to read one, and pass), or a bearer
// header.
var secretFlag = regexp.MustCompile(`(?i)--[a-z-]*(password|passwd|token|secret-access-key)(=|\s+)[^-\s]|authorization:\s*bearer\s`)

// No printed command puts a secret on a command line, where shell history, ps and audit
// logs keep it: credentials are read from a file or stdin.
func TestNoCommandCarriesASecret(t *testing.T) {
	n := 0
	for _, j := range judgeAll(t) {
		eachCommand(j.rep, func(_ finding.Incident, f finding.Finding, cmd string) {
			n++
			if secretFlag.MatchString(cmd) {
				t.Errorf("%s: %s prints a credential on the command line: %s", j.name, f.ID, cmd)
			}
		})
	}
	if n == 0 {
		t.Fatal("no command in any scenario")
	}
}

// The incident's next safe step is the step fix takes first, or, where fix plans nothing,
// the one it guides first: scan and fix never send the operator different ways. A Helm
// release Fleet does not deploy gets no Fleet redeploy or force-sync as its next step.
func TestNextStepIsFixsFirstStep(t *testing.T) {
	checked := 0
	for _, j := range judgeAll(t) {
		for _, inc := range j.rep.Incidents {
			if inc.NextStep == nil {
				continue
			}
			want, how := fixFirstRung(j.snap, inc)
			if want == "" {
				continue
			}
			checked++
			if inc.NextStep.Rung != want {
				t.Errorf("%s: incident %s [%s]: next step is %s, fix %s %s", j.name, inc.RootCause.ID, inc.RootCause.Cluster, inc.NextStep.Rung, how, want)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no incident checked")
	}
}

// fixFirstRung is the rung of the first step fix plans for inc (observing aside), or, when
// it plans none, the rung its manual entry guides first: the first of the root cause's
// ladder with a command to run, else the first that changes something.
func fixFirstRung(snap *snapshot.Snapshot, inc finding.Incident) (string, string) {
	p := remediate.Build(remediate.Input{Snap: snap, Incidents: []finding.Incident{inc}, Options: remediate.Options{MaxRisk: remediate.High}})
	for _, ip := range p.Incidents {
		for _, a := range ip.Attempts {
			if a.Mutating() {
				return a.Rung, "plans"
			}
		}
	}
	var first string
	for _, r := range inc.RootCause.Remediation {
		if r.Rung == remediate.RungObserve {
			continue
		}
		if hasCommand(r) {
			return r.Rung, "guides"
		}
		if first == "" {
			first = r.Rung
		}
	}
	return first, "guides"
}

func hasCommand(st finding.Step) bool {
	for _, c := range st.Commands {
		if !shellcmd.IsWithheld(c) {
			return true
		}
	}
	return false
}

// A Helm release installed by hand on a cluster without a Fleet agent gets no Fleet command:
// nothing of Fleet deploys it, so a redeploy or a force-sync has nothing to retry, and the
// next step is the Helm rollback fix plans.
func TestHandInstalledReleaseGetsNoFleetStep(t *testing.T) {
	rep := scanDir(t, scenarioPath("helm/release-pending-by-hand-positive"), scenarioNow)
	if len(rep.Incidents) != 1 {
		t.Fatalf("want one incident, got:\n%s", describe(rep))
	}
	inc := rep.Incidents[0]
	eachCommand(rep, func(_ finding.Incident, f finding.Finding, cmd string) {
		if strings.Contains(cmd, ".fleet.cattle.io") {
			t.Errorf("%s prints a Fleet command for a release Fleet does not deploy: %s", f.ID, cmd)
		}
	})
	want := "helm --kube-context edge-lab-3-admin -n monitoring rollback kube-prometheus-stack 4"
	if inc.NextStep == nil || inc.NextStep.Rung != "repair" || len(inc.NextStep.Commands) != 1 || inc.NextStep.Commands[0] != want {
		t.Errorf("next step: got %+v, want the repair rung with %q", inc.NextStep, want)
	}
}
