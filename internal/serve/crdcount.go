package serve

import (
	"context"
	"sync"
	"time"

	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// crdCountTTL is how long a CRD's object count is reused between evaluations: a LIST of
// one item per CRD with stored versions to migrate, as the scan makes, but not on every
// change an informer reports.
const crdCountTTL = 30 * time.Second

// crdCountTimeout bounds one count: an evaluation does not wait longer on it.
const crdCountTimeout = 10 * time.Second

type crdCount struct {
	n  int
	at time.Time
}

// crdCounts keeps the object counts of one cluster's CRDs between evaluations.
type crdCounts struct {
	mu sync.Mutex
	by map[string]crdCount // CRD name → last count
}

// feedCRDCounts counts the objects of each cached CRD with stored versions to migrate (or
// reuses a count younger than crdCountTTL) and records them in b, as the scan does. A count
// that fails is left out: the finding says it was not read.
func (w *clusterWatch) feedCRDCounts(b *snapshot.Builder, crds []*snapshot.CRD) {
	w.counts.mu.Lock()
	defer w.counts.mu.Unlock()
	if w.counts.by == nil {
		w.counts.by = map[string]crdCount{}
	}
	now := time.Now()
	keep := map[string]bool{}
	for _, crd := range crds {
		m, ok := source.MigratingOf(crd)
		if !ok {
			continue
		}
		keep[m.Name] = true
		c, have := w.counts.by[m.Name]
		if !have || now.Sub(c.at) >= crdCountTTL {
			ctx, cancel := context.WithTimeout(context.Background(), crdCountTimeout)
			n, ok := source.CountObjects(ctx, w.meta, m)
			cancel()
			if !ok {
				delete(w.counts.by, m.Name)
				continue
			}
			c = crdCount{n: n, at: now}
			w.counts.by[m.Name] = c
		}
		b.SetCRDObjects(w.t.Name, m.Name, c.n)
	}
	for name := range w.counts.by {
		if !keep[name] {
			delete(w.counts.by, name) // migrated, trimmed or deleted since
		}
	}
}
