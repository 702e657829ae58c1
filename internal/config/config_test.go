package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

const full = `# every key
thresholds:
  helm.pendingAfter: 5m
  fleet.heartbeatStaleAfter: 1h
severity:
  suc/image-floating: info
suppress:
  - id: pod/oom-killed
    reason: known leak, OPS-77
    expires: 2026-12-31
    clusters: [edge-arm-1, edge-arm-2]
    object: Pod/cattle-fleet-system/fleet-agent-x
  - id: helm/
    reason: migration window
    expires: 2026-12-01T18:00:00Z
registry:
  offline: true
  insecure: [registry.local:5000, 10.0.0.5]
`

func TestParseEveryKey(t *testing.T) {
	c, err := Parse([]byte(full), "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Thresholds) != 2 || c.Thresholds[0] != (Threshold{"helm.pendingAfter", "5m", 3}) {
		t.Errorf("thresholds %+v", c.Thresholds)
	}
	if len(c.Severity) != 1 || c.Severity[0].Severity != finding.Info || c.Severity[0].Line != 6 {
		t.Errorf("severity %+v", c.Severity)
	}
	if len(c.Suppress) != 2 {
		t.Fatalf("suppress %+v", c.Suppress)
	}
	s := c.Suppress[0]
	if s.ID != "pod/oom-killed" || s.Line != 8 || len(s.Clusters) != 2 || s.Object != "Pod/cattle-fleet-system/fleet-agent-x" ||
		!s.Expires.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || s.ExpiresText != "2026-12-31" {
		t.Errorf("suppression %+v", s)
	}
	if !c.Suppress[1].Expires.Equal(time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)) {
		t.Errorf("RFC 3339 expiry %v", c.Suppress[1].Expires)
	}
	if !c.Registry.Offline || strings.Join(c.Registry.Insecure, ",") != "registry.local:5000,10.0.0.5" {
		t.Errorf("registry %+v", c.Registry)
	}
}

func TestEmptyAndMissing(t *testing.T) {
	for _, doc := range []string{"", "# nothing\n", "---\n", "thresholds:\nsuppress:\n"} {
		if _, err := Parse([]byte(doc), "c.yaml"); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
	if c, err := Load("/no/such/dir/config.yaml", false); err != nil || c.Path != "" {
		t.Errorf("a missing default file: %+v %v", c, err)
	}
	if _, err := Load("/no/such/dir/config.yaml", true); err == nil {
		t.Error("a missing --config file is not an error")
	}
}

func TestErrorsNameFileLineAndKey(t *testing.T) {
	_, err := Parse([]byte("registry:\n  offline: maybe\n"), "c.yaml")
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 || ce.Key != "registry.offline" || !strings.Contains(err.Error(), "c.yaml:2: registry.offline: want true or false") {
		t.Errorf("got %v", err)
	}
}

func at(day int) time.Time { return time.Date(2026, 12, day, 12, 0, 0, 0, time.UTC) }

func TestActiveUntilTheEndOfTheDay(t *testing.T) {
	c, _ := Parse([]byte(full), "c.yaml")
	s := c.Suppress[0] // expires: 2026-12-31
	if !s.Active(time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)) || s.Active(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Error("a date expiry holds through that day, UTC")
	}
	if got := c.Expired(at(2)); len(got) != 1 || got[0].ID != "helm/" {
		t.Errorf("expired on Dec 2: %+v", got)
	}
}

func f(id, cluster, affects string, sev finding.Severity) finding.Finding {
	return finding.Finding{ID: id, Cluster: cluster, Affects: affects, Severity: sev, Object: finding.ObjectRef{Kind: "Pod", Namespace: "ns", Name: id}}
}

// Suppression happens after grouping: an incident whose root cause is suppressed is led by
// its first remaining symptom; one with nothing left disappears.
func TestApply(t *testing.T) {
	c := &Config{Suppress: []Suppression{
		{ID: "helm/release-pending", Reason: "x", Expires: at(31)},
		{ID: "fleet/", Reason: "y", Expires: at(31), Clusters: []string{"prod-us-1"}},
		{ID: "pod/crashloop", Reason: "expired", Expires: at(1)},
	}}
	hp := f("helm/release-pending", "prod-eu-1", "", finding.Critical)
	ea := f("fleet/bundle-err-applied", "local", "prod-eu-1", finding.Error)
	us := f("fleet/agent-upgrade-stuck", "local", "prod-us-1", finding.Error)
	cl := f("pod/crashloop", "prod-us-1", "", finding.Error)
	incs := []finding.Incident{
		{RootCause: hp, Symptoms: []finding.Finding{ea}},
		{RootCause: us},
		{RootCause: cl, Symptoms: []finding.Finding{us}},
	}
	gotIncs, gotFs, sup := c.Apply(at(15), incs, []finding.Finding{hp, ea, us, cl})
	if len(gotIncs) != 2 || gotIncs[0].RootCause.ID != "fleet/bundle-err-applied" || gotIncs[1].RootCause.ID != "pod/crashloop" || len(gotIncs[1].Symptoms) != 0 {
		t.Errorf("incidents: %+v", gotIncs)
	}
	if len(gotFs) != 2 || sup.Total != 2 || sup.Count[0] != 1 || sup.Count[1] != 1 || sup.Count[2] != 0 {
		t.Errorf("findings %d, suppressed %+v", len(gotFs), sup)
	}
	// Object-scoped: Kind/namespace/name or Kind/name.
	for _, obj := range []string{"Pod/ns/helm/release-pending", "Pod/helm/release-pending"} {
		s := Suppression{ID: "helm/release-pending", Object: obj}
		if !s.Matches(hp) {
			t.Errorf("object %q does not match", obj)
		}
	}
	if (Suppression{ID: "helm/release-pending", Object: "Pod/other"}).Matches(hp) {
		t.Error("another object matched")
	}
}

func TestOverrideSeverities(t *testing.T) {
	c := &Config{Severity: []SeverityOverride{{ID: "workload/rollout-stalled", Severity: finding.Info}}}
	a := f("workload/rollout-stalled", "x", "", finding.Error)
	b := f("pod/crashloop", "x", "", finding.Warning)
	incs := []finding.Incident{{RootCause: a}, {RootCause: b}}
	fs := []finding.Finding{a, b}
	c.OverrideSeverities(incs, fs)
	if fs[0].ID != "pod/crashloop" || fs[1].Severity != finding.Info || incs[0].RootCause.ID != "pod/crashloop" || incs[1].RootCause.Severity != finding.Info {
		t.Errorf("findings %+v, incidents %+v", fs, incs)
	}
}
