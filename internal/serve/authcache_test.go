package serve

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A client sending a new token with every request fills the cache only up to its bound, and
// a decision is forgotten when its time is up (a role revoked is seen within allowTTL).
func TestDecisionCacheIsBoundedAndExpires(t *testing.T) {
	now := exampleNow
	c := newDecisionCache(100, func() time.Time { return now })
	allowed := decision{status: http.StatusOK, user: "system:serviceaccount:monitoring:prometheus-k8s"}
	c.put(cacheKey("scrape-token", PathMetrics), allowed, allowTTL)
	for i := range 10_000 {
		c.put(cacheKey(fmt.Sprintf("random-%d", i), PathMetrics), decision{status: http.StatusUnauthorized}, denyTTL)
		if c.len() > 100 {
			t.Fatalf("%d entries after %d puts, bound 100", c.len(), i+1)
		}
	}
	c = newDecisionCache(100, func() time.Time { return now })
	c.put(cacheKey("scrape-token", PathMetrics), allowed, allowTTL)
	if d, ok := c.get(cacheKey("scrape-token", PathMetrics)); !ok || d != allowed {
		t.Fatalf("a fresh decision was not kept: %v %v", d, ok)
	}
	if _, ok := c.get(cacheKey("scrape-token", PathFindings)); ok {
		t.Errorf("a decision for /metrics answered for /api/v1/findings")
	}
	now = now.Add(allowTTL)
	if _, ok := c.get(cacheKey("scrape-token", PathMetrics)); ok {
		t.Errorf("a decision was kept past its time")
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"Bearer abc.def.ghi": "abc.def.ghi",
		"bearer abc":         "abc",
		"Basic dXNlcjpwdw==": "",
		"Bearer ":            "",
		"Bearer":             "",
		"":                   "",
	} {
		r, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", header)
		if got, _ := bearerToken(r); got != want {
			t.Errorf("%q: %q, want %q", header, got, want)
		}
	}
}
