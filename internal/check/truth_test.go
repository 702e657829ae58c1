package check_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/source"
)

// scenarioContext loads a scenario bundle and the evaluation context its expect.yaml asks for.
func scenarioContext(t *testing.T, dir string) *check.Context {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want expectation
	if err := yaml.UnmarshalStrict(b, &want); err != nil {
		t.Fatalf("%s/expect.yaml: %v", dir, err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatalf("loading %s: %v", dir, err)
	}
	now := want.Now
	if now.IsZero() {
		now = snap.CollectedAt
	}
	return &check.Context{Snap: snap, Now: now, Thresholds: check.NewThresholds(cat), Catalog: cat}
}

func scenarioName(dir string) string {
	name, _ := filepath.Rel(filepath.Join("..", "..", "testdata", "scenarios"), dir)
	return name
}

// findingKey identifies a finding in a JSON report: what a user sees of it.
func findingKey(f finding.Finding) string {
	return f.ID + "|" + f.Cluster + "|" + f.Object.String() + "|" + f.Summary
}

// TestEveryFindingReachesTheReport holds grouping to its promise: a finding that explains
// another links it, it never hides it. Over every scenario, each finding the checks emit is
// in the JSON report's findings and in exactly one incident (as root cause or symptom), unless
// a user's suppression hides it: the report is made as scan makes it, once without suppressions
// and once suppressing the ID of the first finding emitted, which then alone is missing.
func TestEveryFindingReachesTheReport(t *testing.T) {
	for _, dir := range scenarioDirs(t) {
		t.Run(scenarioName(dir), func(t *testing.T) {
			ctx := scenarioContext(t, dir)
			raw := check.Run(ctx, check.All())
			cfgs := []*config.Config{{}}
			if len(raw.Findings) > 0 {
				cfgs = append(cfgs, &config.Config{Suppress: []config.Suppression{{ID: raw.Findings[0].ID, Reason: "test", Expires: ctx.Now.Add(time.Hour)}}})
			}
			for _, cfg := range cfgs {
				suppressed := ""
				if len(cfg.Suppress) > 0 {
					suppressed = cfg.Suppress[0].ID
				}
				incs, fs, errs := check.Evaluate(ctx, check.Filter{})
				cfg.OverrideSeverities(incs, fs)
				incs, fs, _ = cfg.Apply(ctx.Now, incs, fs)
				b, err := json.Marshal(report.New(ctx.Snap, ctx.Now, incs, fs, errs))
				if err != nil {
					t.Fatal(err)
				}
				var rep struct {
					Incidents []finding.Incident `json:"incidents"`
					Findings  []finding.Finding  `json:"findings"`
				}
				if err := json.Unmarshal(b, &rep); err != nil {
					t.Fatal(err)
				}
				listed, linked := map[string]int{}, map[string]int{}
				for _, f := range rep.Findings {
					listed[findingKey(f)]++
				}
				for _, inc := range rep.Incidents {
					linked[findingKey(inc.RootCause)]++
					for _, s := range inc.Symptoms {
						linked[findingKey(s)]++
					}
				}
				want := map[string]int{}
				for _, f := range raw.Findings {
					if f.ID != suppressed {
						want[findingKey(f)]++
					}
				}
				for k, n := range want {
					if listed[k] != n {
						t.Errorf("suppressing %q: emitted %d time(s), listed %d time(s) in the report's findings: %s", suppressed, n, listed[k], k)
					}
					if linked[k] != n {
						t.Errorf("suppressing %q: emitted %d time(s), in %d incident(s): %s", suppressed, n, linked[k], k)
					}
				}
				for k := range listed {
					if strings.HasPrefix(k, suppressed+"|") && suppressed != "" {
						t.Errorf("suppressed %s is still listed: %s", suppressed, k)
					}
				}
			}
		})
	}
}

// TestCatalogueDocumentsTheThresholdsChecksRead runs each check alone over every scenario,
// recording the thresholds it reads. Each must be documented by the catalogue entry of an ID
// the check emits, and each threshold an entry documents must be read by some check emitting
// that ID: users tune findings by what `unstick explain` says about them.
func TestCatalogueDocumentsTheThresholdsChecksRead(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	documented := func(id string) []string {
		e, _ := cat.Get(id)
		var out []string
		for _, th := range e.Thresholds {
			out = append(out, th.Name)
		}
		return out
	}
	readBy := map[string]map[string]bool{} // check name -> thresholds read
	emitted := map[string]bool{}
	for _, ch := range check.All() {
		readBy[ch.Name] = map[string]bool{}
	}
	const grouping = "incident grouping"
	readBy[grouping] = map[string]bool{}
	for _, dir := range scenarioDirs(t) {
		ctx := scenarioContext(t, dir)
		base := ctx.Thresholds
		for _, ch := range check.All() {
			tracked, reads := base.Tracked()
			ctx.Thresholds = tracked
			res := check.Run(ctx, []check.Check{ch})
			for _, n := range reads() {
				readBy[ch.Name][n] = true
			}
			for _, f := range res.Findings {
				emitted[f.ID] = true
			}
		}
		tracked, reads := base.Tracked()
		ctx.Thresholds = tracked
		check.Group(ctx, nil)
		for _, n := range reads() {
			readBy[grouping][n] = true
		}
	}
	emits := map[string][]string{grouping: {"fleet/fleetwide-failure"}}
	for _, ch := range check.All() {
		emits[ch.Name] = ch.Emits
	}
	for name, reads := range readBy {
		for th := range reads {
			ok := false
			for _, id := range emits[name] {
				if slices.Contains(documented(id), th) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s reads threshold %s, which no catalogue entry of its IDs (%s) documents", name, th, strings.Join(emits[name], ", "))
			}
		}
	}
	var ids []string
	for _, id := range cat.IDs() {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, th := range documented(id) {
			ok := false
			for name, reads := range readBy {
				if reads[th] && slices.Contains(emits[name], id) {
					ok = true
				}
			}
			if !ok && emitted[id] {
				t.Errorf("the catalogue entry of %s documents threshold %s, but no check emitting %s reads it", id, th, id)
			}
		}
	}
}

// TestRunRejectsUndeclaredIDs: a finding whose ID is not in its check's Emits is dropped and
// reported as that check's error; the check's declared findings still count.
func TestRunRejectsUndeclaredIDs(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx := &check.Context{Now: time.Now(), Thresholds: check.NewThresholds(cat), Catalog: cat}
	liar := check.Check{
		Name:  "test/liar",
		Emits: []string{"pod/crashloop"},
		Run: func(c *check.Context) ([]finding.Finding, error) {
			return []finding.Finding{
				c.New("pod/crashloop", nil, finding.ObjectRef{Kind: "Pod", Name: "a"}, "declared"),
				c.New("pod/oom-killed", nil, finding.ObjectRef{Kind: "Pod", Name: "b"}, "undeclared"),
			}, errors.New("could not list pods")
		},
	}
	res := check.Run(ctx, []check.Check{liar})
	if len(res.Findings) != 1 || res.Findings[0].ID != "pod/crashloop" {
		t.Errorf("want only the declared pod/crashloop finding, got %+v", res.Findings)
	}
	if len(res.Errors) != 1 {
		t.Fatalf("want one error for test/liar, got %v", res.Errors)
	}
	msg := res.Errors[0].Message
	for _, want := range []string{"pod/oom-killed", "could not list pods"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

// incidentWith returns the incident whose root cause has id and which holds a symptom of
// symptomID, if any.
func incidentWith(incs []finding.Incident, id, symptomID string) bool {
	for _, inc := range incs {
		if inc.RootCause.ID != id {
			continue
		}
		for _, s := range inc.Symptoms {
			if s.ID == symptomID {
				return true
			}
		}
	}
	return false
}

// TestRootCausesLinkWhatTheyExplain: a root cause that explains another finding keeps it as a
// symptom of its incident instead of hiding it. A clock that is behind explains an agent's
// "certificate ... not yet valid"; a missing image on a moving tag keeps its floating-tag
// finding, since the moving tag is why the image vanished; the pods of a workload a Helm wait
// timed out on explain the failed release and bundle.
func TestRootCausesLinkWhatTheyExplain(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "scenarios")
	for _, dir := range []string{"cluster/clock-skew-x509-log-positive", "cluster/real-k3s5163-clock-behind-positive"} {
		ctx := scenarioContext(t, filepath.Join(root, dir))
		incs, _, _ := check.Evaluate(ctx, check.Filter{})
		if !incidentWith(incs, "cluster/clock-skew", "agent/tls") {
			t.Errorf("%s: want agent/tls as a symptom of the cluster/clock-skew incident", dir)
		}
	}

	// The SUC outage of suc/image-missing-positive, its Plan on the moving tag :latest.
	src := filepath.Join(root, "suc", "image-missing-positive")
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "rancher/k3s-upgrade:v1.30.3-k3s1", "rancher/k3s-upgrade:latest")
		s = strings.ReplaceAll(s, "image: rancher/k3s-upgrade\n", "image: rancher/k3s-upgrade:latest\n")
		if err := os.WriteFile(filepath.Join(dst, e.Name()), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := scenarioContext(t, dst)
	incs, _, _ := check.Evaluate(ctx, check.Filter{})
	if !incidentWith(incs, "suc/image-missing", "suc/image-floating") {
		var got []string
		for _, inc := range incs {
			got = append(got, inc.RootCause.ID)
			for _, s := range inc.Symptoms {
				got = append(got, "  "+s.ID)
			}
		}
		t.Errorf("want suc/image-floating as a symptom of the suc/image-missing incident; got:\n%s", strings.Join(got, "\n"))
	}
	helmWaitLinksPods(t, root)
}
