package check_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/source"
)

// expectation is a scenario's expect.yaml: what a scan of the bundle beside it must say.
type expectation struct {
	Description string    `json:"description"`
	Now         time.Time `json:"now"`
	// RootCauses must each be the root cause of some incident.
	RootCauses []string `json:"rootCauses"`
	// Findings must each be reported (as root cause or symptom).
	Findings []string `json:"findings"`
	// Forbid must not be reported at all.
	Forbid []string `json:"forbid"`
	// MaxSeverity, when set, is the worst severity any finding may have (healthy look-alikes).
	MaxSeverity string `json:"maxSeverity"`
	// Errors is how many scan errors are expected (malformed files and the like).
	Errors int `json:"errors"`
	// Signatures must each be some finding's signature, and ForbidSignatures none's: what
	// tells two readings of one ID apart (a diff artefact from drift).
	Signatures       []string `json:"signatures"`
	ForbidSignatures []string `json:"forbidSignatures"`
}

// scenarioDirs finds every directory under testdata/scenarios holding an expect.yaml.
func scenarioDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	root := filepath.Join("..", "..", "testdata", "scenarios")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "expect.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no scenarios under testdata/scenarios")
	}
	return dirs
}

func scanDir(t *testing.T, dir string, now time.Time) *report.Report {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	if now.IsZero() {
		now = snap.CollectedAt
	}
	ctx := &check.Context{Snap: snap, Now: now, Thresholds: check.NewThresholds(cat), Catalog: cat}
	incs, fs, errs := check.Evaluate(ctx, check.Filter{})
	return report.New(snap, now, incs, fs, errs)
}

// TestScenarios scans every scenario bundle and holds it to its expect.yaml: the positive
// case of each catalogue ID is found as its root cause, and its healthy look-alike is not
// flagged.
func TestScenarios(t *testing.T) {
	for _, dir := range scenarioDirs(t) {
		name, _ := filepath.Rel(filepath.Join("..", "..", "testdata", "scenarios"), dir)
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var want expectation
			if err := yaml.UnmarshalStrict(b, &want); err != nil {
				t.Fatalf("expect.yaml: %v", err)
			}
			rep := scanDir(t, dir, want.Now)
			got, sigs := map[string]bool{}, map[string]bool{}
			for _, f := range rep.Findings {
				got[f.ID] = true
				sigs[f.Signature] = true
			}
			for _, s := range want.Signatures {
				if !sigs[s] {
					t.Errorf("want a finding with signature %s; got %v", s, sigs)
				}
			}
			for _, s := range want.ForbidSignatures {
				if sigs[s] {
					t.Errorf("no finding may have signature %s:\n%s", s, describe(rep))
				}
			}
			var roots []string
			for _, inc := range rep.Incidents {
				roots = append(roots, inc.RootCause.ID)
			}
			for _, id := range want.RootCauses {
				if !slices.Contains(roots, id) {
					t.Errorf("want %s as a root cause; incidents' root causes: %v\n%s", id, roots, describe(rep))
				}
			}
			for _, id := range want.Findings {
				if !got[id] {
					t.Errorf("want finding %s; got:\n%s", id, describe(rep))
				}
			}
			for _, id := range want.Forbid {
				if got[id] {
					t.Errorf("finding %s must not be reported; got:\n%s", id, describe(rep))
				}
			}
			if want.MaxSeverity != "" {
				max, err := finding.ParseSeverity(want.MaxSeverity)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range rep.Findings {
					if f.Severity > max {
						t.Errorf("finding %s (%s) is above the allowed %s: %s", f.ID, f.Severity, max, f.Summary)
					}
				}
			}
			if len(rep.Errors) != want.Errors {
				t.Errorf("want %d scan errors, got %d: %v", want.Errors, len(rep.Errors), rep.Errors)
			}
		})
	}
}

func describe(r *report.Report) string {
	var b strings.Builder
	for _, inc := range r.Incidents {
		b.WriteString("  incident " + inc.RootCause.ID + " [" + inc.RootCause.Cluster + "] " + inc.RootCause.Summary + "\n")
		for _, s := range inc.Symptoms {
			b.WriteString("    symptom " + s.ID + " [" + s.Cluster + "] " + s.Summary + "\n")
		}
	}
	for _, e := range r.Errors {
		b.WriteString("  error " + e.String() + "\n")
	}
	return b.String()
}

// TestEveryEmittedIDHasScenarios holds the test data to its promise: every ID a check can
// emit has a scenario that must report it and a healthy look-alike that must not.
func TestEveryEmittedIDHasScenarios(t *testing.T) {
	positive, negative := map[string]bool{}, map[string]bool{}
	for _, dir := range scenarioDirs(t) {
		b, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var e expectation
		if err := yaml.UnmarshalStrict(b, &e); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, id := range append(e.RootCauses, e.Findings...) {
			positive[id] = true
		}
		for _, id := range e.Forbid {
			negative[id] = true
		}
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range check.All() {
		for _, id := range ch.Emits {
			if _, ok := cat.Get(id); !ok {
				t.Errorf("check %s emits %s, which the catalogue lacks", ch.Name, id)
			}
			if !positive[id] {
				t.Errorf("no scenario expects %s (check %s)", id, ch.Name)
			}
			if !negative[id] {
				t.Errorf("no healthy look-alike forbids %s (check %s)", id, ch.Name)
			}
		}
	}
}

// Every command a SUC finding prints names the controller's namespace when the input holds
// it: the finding's own namespaced object (the controller's Deployment, a Job, a Plan), or, for
// a node, the cluster's only system-upgrade-controller. A "<suc-namespace>" left in the
// command when the scan read it would be a command to edit before running.
func TestSUCCommandsNameTheControllerNamespace(t *testing.T) {
	checked := 0
	for _, dir := range scenarioDirs(t) {
		name, _ := filepath.Rel(filepath.Join("..", "..", "testdata", "scenarios"), dir)
		if !strings.HasPrefix(name, "suc"+string(filepath.Separator)) && !strings.HasPrefix(name, filepath.Join("real", "suc-")) {
			continue
		}
		rep := scanDir(t, dir, time.Time{})
		for _, f := range rep.Findings {
			if !strings.HasPrefix(f.ID, "suc/") {
				continue
			}
			known := f.Object.Namespace != ""
			if !known {
				snap, err := (&source.Offline{Path: dir}).Load(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if c := snap.Cluster(f.Cluster); c != nil {
					known = len(inventory.Controllers(c)) == 1
				}
			}
			if !known {
				continue
			}
			for _, st := range f.Remediation {
				for _, c := range st.Commands {
					checked++
					if strings.Contains(c, "<suc-namespace>") {
						t.Errorf("%s: %s on %s: %q leaves <suc-namespace> unfilled", name, f.ID, f.Object.Kind+"/"+f.Object.Namespace+"/"+f.Object.Name, c)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no SUC finding's command was checked")
	}
	t.Logf("%d commands checked", checked)
}
