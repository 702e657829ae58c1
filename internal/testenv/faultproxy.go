package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// FaultProxy is a plain-HTTP reverse proxy in front of a real test API server. It exists to
// inject failures the real server cannot produce on demand — the one purpose the project
// allows a fake for: throttling (429 with Retry-After), 500 and 503 answers (with an
// apiserver-like Status body), connections reset before the server saw the request or after
// it applied it (the answer lost), answers held back, and bodies cut short. Every request it
// does not fail goes to the real server unchanged, with the upstream config's credentials.
//
// Faults are chosen by Rules (method, path substring, watch or not, a rate) and are only
// injected while the proxy is on (On/Off switch it at runtime); Counts says what was injected.
type FaultProxy struct {
	// URL is the proxy's address (http://127.0.0.1:port).
	URL string

	upstream *url.URL
	rt       http.RoundTripper
	rp       *httputil.ReverseProxy
	srv      *http.Server
	closed   chan struct{}

	mu       sync.Mutex
	on       bool
	rules    []Rule
	rnd      *rand.Rand
	counts   map[Fault]int
	seen     int
	log      []Injection
	streams  map[int]context.CancelFunc
	streamID int
}

// Fault is one kind of failure.
type Fault string

const (
	// Throttle answers 429 TooManyRequests with a Retry-After header (APF, a busy server).
	Throttle Fault = "429"
	// InternalError answers 500 InternalError, the server's Status for an unexpected failure.
	InternalError Fault = "500"
	// Unavailable answers 503 ServiceUnavailable (etcd or the server going away).
	Unavailable Fault = "503"
	// Reset closes the connection with a TCP reset before the request reaches the server.
	Reset Fault = "reset"
	// ResetAfter forwards the request, lets the server answer (a write is applied), then
	// resets the connection instead of passing the answer on.
	ResetAfter Fault = "reset-after"
	// Stall holds the request back for Rule.Stall (0: until the client gives up), then
	// forwards it.
	Stall Fault = "stall"
	// Truncate forwards the request and passes on the headers (with the full Content-Length)
	// and part of the body, then closes the connection. A watch is cut after a moment.
	Truncate Fault = "truncate"
)

// Faults lists every kind, in a stable order.
var Faults = []Fault{Throttle, InternalError, Unavailable, Reset, ResetAfter, Stall, Truncate}

// WatchMatch says whether a rule applies to watches.
type WatchMatch int

const (
	AnyRequest WatchMatch = iota
	WatchOnly
	NoWatch
)

// Rule injects Fault into a share (Rate, 0..1) of the requests it matches. The first rule
// that matches and fires wins; a request no rule fires on is forwarded.
type Rule struct {
	Fault Fault
	Rate  float64
	// Methods are HTTP methods (GET, PATCH, ...); empty matches any.
	Methods []string
	// Path, if set, must be a substring of the request path.
	Path string
	// Watch restricts the rule to watches, or to everything else.
	Watch WatchMatch
	// Match, if set, must also accept the request.
	Match func(*http.Request) bool
	// RetryAfter is the Retry-After of a 429 or 503 (429 defaults to 1s; 503 and 500 send
	// none unless set, as the real server mostly does).
	RetryAfter time.Duration
	// Stall is how long a Stall holds a request (0: until the client gives up).
	Stall time.Duration
	// Max bounds how many times this rule fires (0: no bound).
	Max int

	fired int
}

// Injection is one fault the proxy injected.
type Injection struct {
	Fault  Fault
	Method string
	Path   string
	Query  string
}

func (i Injection) String() string {
	s := string(i.Fault) + " " + i.Method + " " + i.Path
	if i.Query != "" {
		s += "?" + i.Query
	}
	return s
}

// StartFaultProxy serves a FaultProxy to upstream (an Env's Config, or a LogProxy's address)
// on a free loopback port until the test ends. It starts off, with no rules, and seeded so a
// run's choices can be repeated.
func StartFaultProxy(t testing.TB, upstream *rest.Config, seed int64) *FaultProxy {
	t.Helper()
	p, err := NewFaultProxy(upstream, seed)
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// NewFaultProxy is StartFaultProxy without a test: Close stops it.
func NewFaultProxy(upstream *rest.Config, seed int64) (*FaultProxy, error) {
	host := upstream.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	target, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{upstream: target, rt: rt, closed: make(chan struct{}), rnd: rand.New(rand.NewSource(seed)),
		counts: map[Fault]int{}, streams: map[int]context.CancelFunc{}}
	p.rp = httputil.NewSingleHostReverseProxy(target)
	p.rp.Transport = rt
	p.rp.FlushInterval = -1
	p.rp.ErrorLog = log.New(io.Discard, "", 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.URL = "http://" + ln.Addr().String()
	p.srv = &http.Server{Handler: p, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy, releasing held requests and cutting open streams.
func (p *FaultProxy) Close() {
	p.mu.Lock()
	select {
	case <-p.closed:
		p.mu.Unlock()
		return
	default:
	}
	close(p.closed)
	p.mu.Unlock()
	p.CutStreams()
	_ = p.srv.Close()
}

// Config is a client config for the proxy: no credentials of its own (the proxy forwards
// with the upstream's), the test environment's generous rate limits.
func (p *FaultProxy) Config() *rest.Config {
	return &rest.Config{Host: p.URL, QPS: 500, Burst: 1000}
}

// WriteKubeconfig writes a kubeconfig whose one context, name, points at the proxy.
func (p *FaultProxy) WriteKubeconfig(path, name string) error {
	return WriteKubeconfig(path, p.Config(), name)
}

// SetRules replaces the rules (their fired counts start again).
func (p *FaultProxy) SetRules(rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append([]Rule(nil), rules...)
}

// On starts injecting; Off stops (requests already held or cut stay so).
func (p *FaultProxy) On()  { p.set(true) }
func (p *FaultProxy) Off() { p.set(false) }

func (p *FaultProxy) set(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = on
}

// Counts is how many faults of each kind were injected so far.
func (p *FaultProxy) Counts() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[Fault]int{}
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// ResetCounts forgets what was seen and injected so far.
func (p *FaultProxy) ResetCounts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts, p.log, p.seen = map[Fault]int{}, nil, 0
}

// Injected is how many faults were injected so far, of any kind.
func (p *FaultProxy) Injected() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log)
}

// Seen is how many requests reached the proxy.
func (p *FaultProxy) Seen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// Log lists the injected faults in order.
func (p *FaultProxy) Log() []Injection {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Injection(nil), p.log...)
}

// Summary is Counts as "kind=n" words, for test logs.
func (p *FaultProxy) Summary() string {
	c := p.Counts()
	var parts []string
	for _, f := range Faults {
		if c[f] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f, c[f]))
		}
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d requests, injected: %s", p.Seen(), strings.Join(parts, " "))
}

// CutStreams ends every response being streamed through the proxy now (watches above all),
// as a dropped connection would; it returns how many it cut.
func (p *FaultProxy) CutStreams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.streams)
	for id, cancel := range p.streams {
		cancel()
		delete(p.streams, id)
	}
	return n
}

type bodyKey struct{}

// IsDryRun says whether a request proxied by a FaultProxy is a server-side dry-run: dryRun
// in the query (create, update, patch) or in the DeleteOptions body (delete).
func IsDryRun(r *http.Request) bool {
	if r.URL.Query().Get("dryRun") != "" {
		return true
	}
	b, _ := r.Context().Value(bodyKey{}).([]byte)
	return bytes.Contains(b, []byte(`"dryRun":[`))
}

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1" || strings.Contains(r.URL.Path, "/watch/")
}

func (r *Rule) matches(req *http.Request) bool {
	if len(r.Methods) > 0 {
		ok := false
		for _, m := range r.Methods {
			ok = ok || strings.EqualFold(m, req.Method)
		}
		if !ok {
			return false
		}
	}
	if r.Path != "" && !strings.Contains(req.URL.Path, r.Path) {
		return false
	}
	switch r.Watch {
	case WatchOnly:
		if !isWatch(req) {
			return false
		}
	case NoWatch:
		if isWatch(req) {
			return false
		}
	}
	return r.Match == nil || r.Match(req)
}

// pick chooses the fault for a request (nil: forward it untouched) and counts it.
func (p *FaultProxy) pick(req *http.Request) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen++
	if !p.on {
		return nil
	}
	for i := range p.rules {
		r := &p.rules[i]
		if (r.Max > 0 && r.fired >= r.Max) || !r.matches(req) {
			continue
		}
		if r.Rate < 1 && p.rnd.Float64() >= r.Rate {
			continue
		}
		r.fired++
		p.counts[r.Fault]++
		p.log = append(p.log, Injection{Fault: r.Fault, Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery})
		c := *r
		return &c
	}
	return nil
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	// Request bodies are small (objects, patches, DeleteOptions): keep a copy, so rules can
	// look at it (IsDryRun) and the request can still be forwarded.
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		if body, err = io.ReadAll(io.LimitReader(req.Body, 64<<20)); err != nil {
			resetConn(w)
			return
		}
		_ = req.Body.Close()
	}
	setBody := func() {
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
		}
	}
	req = req.WithContext(context.WithValue(req.Context(), bodyKey{}, body))
	setBody()
	rule := p.pick(req)
	setBody()
	if rule == nil {
		p.forward(w, req, 0)
		return
	}
	switch rule.Fault {
	case Throttle:
		ra := rule.RetryAfter
		if ra <= 0 {
			ra = time.Second
		}
		writeStatus(w, http.StatusTooManyRequests, "TooManyRequests", "Too many requests, please try again later.", ra)
	case InternalError:
		writeStatus(w, http.StatusInternalServerError, "InternalError", "Internal error occurred: injected by the test fault proxy", rule.RetryAfter)
	case Unavailable:
		writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "The server is currently unable to handle the request (injected by the test fault proxy)", rule.RetryAfter)
	case Reset:
		_, _ = io.Copy(io.Discard, req.Body)
		resetConn(w)
	case ResetAfter:
		p.resetAfter(w, req)
	case Stall:
		var timer <-chan time.Time
		if rule.Stall > 0 {
			tm := time.NewTimer(rule.Stall)
			defer tm.Stop()
			timer = tm.C
		}
		select {
		case <-req.Context().Done():
			return // the client gave up
		case <-p.closed:
			return
		case <-timer:
		}
		p.forward(w, req, 0)
	case Truncate:
		if isWatch(req) {
			p.forward(w, req, 300*time.Millisecond)
			return
		}
		p.truncate(w, req)
	default:
		p.forward(w, req, 0)
	}
}

// forward passes the request to the server; cutAfter > 0 cuts the response after that long.
// Every forwarded response can be cut by CutStreams.
func (p *FaultProxy) forward(w http.ResponseWriter, req *http.Request, cutAfter time.Duration) {
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	p.mu.Lock()
	p.streamID++
	id := p.streamID
	p.streams[id] = cancel
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.streams, id)
		p.mu.Unlock()
	}()
	if cutAfter > 0 {
		t := time.AfterFunc(cutAfter, cancel)
		defer t.Stop()
	}
	// A response cut mid-stream makes ReverseProxy abort the handler, which drops the
	// connection: what the client of a dropped watch sees.
	p.rp.ServeHTTP(w, req.WithContext(ctx))
}

// roundTrip sends the request to the server as the reverse proxy would and returns the
// whole answer.
func (p *FaultProxy) roundTrip(req *http.Request) (*http.Response, []byte, error) {
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.URL.Path = strings.TrimSuffix(p.upstream.Path, "/") + req.URL.Path
	out.Host = ""
	out.Header.Del("Connection")
	resp, err := p.rt.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	return resp, body, err
}

// resetAfter lets the server handle the request to the end, then resets the connection: the
// client cannot tell whether its write was applied.
func (p *FaultProxy) resetAfter(w http.ResponseWriter, req *http.Request) {
	_, _, _ = p.roundTrip(req)
	resetConn(w)
}

// truncate passes on the server's headers and half its body, then closes the connection.
func (p *FaultProxy) truncate(w http.ResponseWriter, req *http.Request) {
	resp, body, err := p.roundTrip(req)
	if err != nil {
		resetConn(w)
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body[:len(body)/2])
	_ = http.NewResponseController(w).Flush()
	closeConn(w, false)
}

// writeStatus answers as kube-apiserver does: a metav1.Status body and, for retryable
// answers, Retry-After (the header client-go honours) and details.retryAfterSeconds.
func writeStatus(w http.ResponseWriter, code int, reason, message string, retryAfter time.Duration) {
	details := ""
	if retryAfter > 0 {
		secs := int((retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", fmt.Sprint(secs))
		details = fmt.Sprintf(`,"details":{"causes":[{"message":%q}],"retryAfterSeconds":%d}`, message, secs)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q%s,"code":%d}`+"\n", message, reason, details, code)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// resetConn takes the connection over and drops it with a TCP reset (linger 0).
func resetConn(w http.ResponseWriter) { closeConn(w, true) }

func closeConn(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the handler, which drops the stream.
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
