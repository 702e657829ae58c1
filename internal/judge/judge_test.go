package judge_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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

// A hand-made input that holds no Secrets says that no Helm release was judged, so a clean
// report is not read as "the releases are fine"; a bundle unstick collected (which lists
// Secrets, and records when) and an input with Secrets say nothing of it.
func TestInputWithoutSecretsSaysHelmWasNotJudged(t *testing.T) {
	load := func(files map[string]string) *report.Report {
		dir := t.TempDir()
		for rel, body := range files {
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		snap, err := (&source.Offline{Path: dir}).Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return judge.Judge(snap, options(t, nil)).Report
	}
	pods := `{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "web-0", "namespace": "shop", "creationTimestamp": "2026-11-28T09:00:00Z"}}]}`
	warned := func(r *report.Report) bool {
		return slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "holds no Secrets, so no Helm release was judged") })
	}
	if r := load(map[string]string{"pods.json": pods}); !warned(r) {
		t.Errorf("pods only: warnings %q, want one saying no Helm release was judged", r.Warnings)
	}
	secret := `{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": {"name": "web-tls", "namespace": "shop"}}`
	if r := load(map[string]string{"pods.json": pods, "secret.json": secret}); warned(r) {
		t.Errorf("with a Secret: warnings %q", r.Warnings)
	}
	meta := "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: \"2026-11-28T09:30:00Z\"\n"
	if r := load(map[string]string{"pods.json": pods, "unstick-bundle.yaml": meta}); warned(r) {
		t.Errorf("collected by unstick: warnings %q", r.Warnings)
	}
}
