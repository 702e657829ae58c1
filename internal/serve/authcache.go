package serve

import (
	"sync"
	"time"
)

// decisionCache remembers review decisions for a short time, never more than max of them:
// a client sending a new random token with every request must not grow serve's memory.
type decisionCache struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	entries map[string]cachedDecision
}

type cachedDecision struct {
	d       decision
	expires time.Time
}

func newDecisionCache(maxEntries int, now func() time.Time) *decisionCache {
	return &decisionCache{max: maxEntries, now: now, entries: map[string]cachedDecision{}}
}

func (c *decisionCache) get(key string) (decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return decision{}, false
	}
	if !c.now().Before(e.expires) {
		delete(c.entries, key)
		return decision{}, false
	}
	return e.d, true
}

func (c *decisionCache) put(key string, d decision, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= c.max {
		c.evictLocked(now)
	}
	c.entries[key] = cachedDecision{d: d, expires: now.Add(ttl)}
}

// evictLocked drops the expired entries and, if the cache is still full, arbitrary ones
// (map order) until a quarter is free: the cache only saves API calls, dropping costs one.
func (c *decisionCache) evictLocked(now time.Time) {
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	for k := range c.entries {
		if len(c.entries) < c.max*3/4 {
			return
		}
		delete(c.entries, k)
	}
}

func (c *decisionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
