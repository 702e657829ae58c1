package snapshot

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func addEvent(t *testing.T, b *Builder, cluster, name string, at time.Time) {
	t.Helper()
	raw := fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"namespace":"cattle-fleet-system","name":%q},
"involvedObject":{"kind":"Pod","namespace":"cattle-fleet-system","name":"fleet-agent-0"},"reason":"BackOff",
"message":"Back-off restarting failed container","lastTimestamp":%q,"count":3}`, name, at.Format(time.RFC3339))
	var h Header
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatal(err)
	}
	if err := b.AddJSON(cluster, "events.yaml", &h, []byte(raw)); err != nil {
		t.Fatal(err)
	}
}

// One Event stamped in 2099 must not become the evaluation time: it is reported and left out.
func TestCollectionTimeIgnoresAFarFutureOutlier(t *testing.T) {
	base := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	b := NewBuilder()
	for i := range 20 {
		addEvent(t, b, "prod-eu-1", fmt.Sprintf("e%d", i), base.Add(time.Duration(i)*time.Minute))
	}
	addEvent(t, b, "prod-eu-1", "from-the-future", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	s := b.Build()
	if want := base.Add(19 * time.Minute); !s.CollectedAt.Equal(want) {
		t.Errorf("collected at %s, want %s (the newest timestamp but the outlier)", s.CollectedAt, want)
	}
	if s.ClockSource != ClockNewest {
		t.Errorf("clock source %q, want %q", s.ClockSource, ClockNewest)
	}
	if len(s.IgnoredTimes) != 1 || s.IgnoredTimes[0].Time.Year() != 2099 {
		t.Fatalf("ignored %+v, want the 2099 event", s.IgnoredTimes)
	}
	if w := s.IgnoredTimes[0].Where; w != "prod-eu-1: Event cattle-fleet-system/from-the-future lastTimestamp" {
		t.Errorf("ignored timestamp named as %q", w)
	}
}

// A bundle whose newest stamps are a real burst (many of them) keeps them: only a few
// stragglers may be outliers, and a cluster running ahead is clock skew for the checks.
func TestCollectionTimeKeepsABurstAndSmallBundles(t *testing.T) {
	base := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	b := NewBuilder()
	for i := range 10 {
		addEvent(t, b, "a", fmt.Sprintf("old%d", i), base.Add(time.Duration(i)*time.Minute))
	}
	later := base.Add(72 * time.Hour)
	for i := range 5 {
		addEvent(t, b, "a", fmt.Sprintf("new%d", i), later.Add(time.Duration(i)*time.Minute))
	}
	s := b.Build()
	if want := later.Add(4 * time.Minute); !s.CollectedAt.Equal(want) || len(s.IgnoredTimes) != 0 {
		t.Errorf("collected at %s ignoring %v, want %s ignoring nothing", s.CollectedAt, s.IgnoredTimes, want)
	}

	b = NewBuilder()
	addEvent(t, b, "a", "one", base)
	addEvent(t, b, "a", "two", base.Add(30*24*time.Hour))
	s = b.Build()
	if !s.CollectedAt.Equal(base.Add(30*24*time.Hour)) || len(s.IgnoredTimes) != 0 {
		t.Errorf("two timestamps: collected at %s ignoring %v; with no rest to compare, nothing is an outlier", s.CollectedAt, s.IgnoredTimes)
	}
}
