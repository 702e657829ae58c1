package judge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/source"
)

const example = "../../examples/fleet-upgrade-stuck"

func options(t *testing.T, cfg *config.Config) judge.Options {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return judge.Options{Wallclock: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Thresholds: check.NewThresholds(cat), Catalog: cat, Config: cfg, FailOn: finding.Error}
}

// Every verb (serve included) gets suppressions, filters and the verdict from Judge: what a
// suppression hides is gone from findings and incidents and counted, never silently lost.
func TestJudgeAppliesSuppressionsAndCountsWhatIsHidden(t *testing.T) {
	snap, err := (&source.Offline{Path: example}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := judge.Judge(snap, options(t, nil)).Report
	if all.Verdict != report.VerdictFindings || all.Hidden != (report.Hidden{}) {
		t.Fatalf("unfiltered: verdict %s hidden %+v", all.Verdict, all.Hidden)
	}
	cfg, err := config.Parse([]byte("suppress:\n  - id: pod/crashloop\n    reason: tracked\n    expires: \"2099-01-01\"\n  - id: helm/\n    reason: tracked\n    expires: \"2099-01-01\"\n    clusters: [prod-eu-l]\n"), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := judge.Judge(snap, options(t, cfg))
	r := res.Report
	if r.Hidden.Suppressed != 1 || len(r.Findings) != len(all.Findings)-1 {
		t.Errorf("suppressed %d, %d of %d findings left; want exactly the crash loop hidden", r.Hidden.Suppressed, len(r.Findings), len(all.Findings))
	}
	for _, inc := range r.Incidents {
		for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
			if f.ID == "pod/crashloop" {
				t.Errorf("a suppressed finding is still in an incident")
			}
		}
	}
	warned := false
	for _, w := range r.Warnings {
		warned = warned || (contains(w, `"prod-eu-l"`) && contains(w, "not in this input"))
	}
	if !warned {
		t.Errorf("a suppression limited to an unknown cluster must be warned about: %v", r.Warnings)
	}

	opts := options(t, nil)
	opts.Filter = check.Filter{Only: []string{"helm/"}}
	f := judge.Judge(snap, opts).Report
	if f.Hidden.Filtered+len(f.Findings) != len(all.Findings) {
		t.Errorf("filtered %d + shown %d != %d", f.Hidden.Filtered, len(f.Findings), len(all.Findings))
	}
	opts.FailOn = 0
	if v := judge.Judge(snap, opts).Report.Verdict; v != report.VerdictClear {
		t.Errorf("--fail-on none on a fully read input: verdict %s, want clear", v)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
