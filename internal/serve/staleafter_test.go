package serve

import (
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
)

// The stale-after gauge is the age at which scan reports each heartbeat: two check-in
// intervals of an agent that checks in hourly, the threshold for the default 15m, and the
// threshold alone for an agent that never checked in.
func TestHeartbeatStaleAfterFollowsTheCheckinInterval(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{o: Options{Thresholds: check.NewThresholds(cat)}}
	threshold := s.o.Thresholds.Duration("fleet.heartbeatStaleAfter")
	heartbeat := func(cluster, every string) finding.Finding {
		f := finding.Finding{ID: "fleet/agent-heartbeat-stale", Cluster: "local", Affects: cluster, Vars: map[string]string{}}
		if every != "" {
			f.Vars[check.CheckinIntervalVar] = every
		}
		return f
	}
	got := s.heartbeatStaleAfter([]finding.Finding{heartbeat("edge-7", "1h"), heartbeat("prod-eu-1", "15m"), heartbeat("new-1", "")})
	want := map[string]time.Duration{"edge-7": 2 * time.Hour, "prod-eu-1": max(threshold, 30*time.Minute), "new-1": threshold}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s: stale after %s, want %s", c, got[c], w)
		}
	}
}
