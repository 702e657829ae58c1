package source

import (
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Defaults of the request budget of a run through Rancher (--max-inflight, --rancher-qps).
// Every downstream cluster is read through Rancher's one proxy, so what a run asks of Rancher
// is the sum over the fleet: 8 lists at once per cluster and 50 requests per second per
// cluster, client-go's per-config limits, would be 16,000 requests at once and 100,000 per
// second at 2,000 clusters. The budget bounds the sum instead. See docs/performance.md,
// "Through Rancher", for how the defaults were chosen.
const (
	DefaultMaxInFlight = 32
	DefaultRancherQPS  = 1000
)

// RequestBudget is one fleet-wide allowance of requests to one server that fronts many
// clusters (Rancher's /k8s/clusters/<id> proxy): at most MaxInFlight requests at once and a
// token bucket of QPS requests per second (burst 2 × QPS), shared by the REST configs of every
// cluster read through it. Watches wait for a token but hold no slot: a watch stays open for
// as long as serve runs, and counting it would leave no slot for lists.
type RequestBudget struct {
	slots   chan struct{}
	limiter flowcontrol.RateLimiter
}

// NewRequestBudget allows maxInFlight requests at once (at least 1) and qps per second; qps
// ≤ 0 sets no rate.
func NewRequestBudget(maxInFlight int, qps float32) *RequestBudget {
	b := &RequestBudget{slots: make(chan struct{}, max(maxInFlight, 1))}
	if qps > 0 {
		b.limiter = flowcontrol.NewTokenBucketRateLimiter(qps, max(int(2*qps), 1))
	}
	return b
}

// MaxInFlight is how many requests the budget lets run at once.
func (b *RequestBudget) MaxInFlight() int { return cap(b.slots) }

// Apply makes every request of clients built from cfg count against the budget. client-go's
// own per-config rate limiter is turned off (QPS < 0): the budget's limiter replaces it, and
// waits for it are the budget's, not reported by client-go as client-side throttling.
func (b *RequestBudget) Apply(cfg *rest.Config) {
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &budgetTransport{next: rt, b: b} })
}

// budgetTransport takes a token and a slot for each request and gives the slot back when
// the answer's body is read to its end or closed (a LIST page is in flight until then).
type budgetTransport struct {
	next http.RoundTripper
	b    *RequestBudget
}

func (t *budgetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.b.limiter != nil {
		if err := t.b.limiter.Wait(req.Context()); err != nil {
			return nil, err
		}
	}
	if isWatch(req) {
		return t.next.RoundTrip(req)
	}
	select {
	case t.b.slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil {
		<-t.b.slots
		return resp, err
	}
	resp.Body = &slotBody{ReadCloser: resp.Body, release: func() { <-t.b.slots }}
	return resp, nil
}

// WrappedRoundTripper lets client-go's transport helpers see through the wrapper.
func (t *budgetTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// slotBody gives its slot back once: at the end of the body, on a read error or on Close.
type slotBody struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (s *slotBody) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if err != nil {
		s.once.Do(s.release)
	}
	return n, err
}

func (s *slotBody) Close() error {
	err := s.ReadCloser.Close()
	s.once.Do(s.release)
	return err
}
