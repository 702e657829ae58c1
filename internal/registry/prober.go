// Package registry asks container registries about image references with the registry
// protocol (go-containerregistry): whether the manifest exists (HEAD, no layers), its
// digest, and the platforms it is built for (the index, or a single image's config blob).
// It is the only package of unstick that talks to registries; the checks read what it found
// (imageref.Facts), gathered before they run.
package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/unstick-dev/unstick/internal/imageref"
)

// Options tune a Prober. The zero value is usable.
type Options struct {
	// Keychains supply credentials, tried in order before the docker config keychain
	// ($DOCKER_CONFIG/config.json, ~/.docker/config.json and its credential helpers).
	Keychains []authn.Keychain
	// NoDockerConfig leaves the docker config keychain out (tests).
	NoDockerConfig bool
	// Insecure lists registry hosts (host[:port]) spoken to over plain HTTP. Every other
	// registry is spoken to over HTTPS only, except loopback ones (localhost, 127.0.0.0/8,
	// ::1), which fall back to HTTP on their own as Docker's do. go-containerregistry would
	// also fall back for RFC 1918 addresses (name.Registry.Scheme); the prober refuses that:
	// credentials never cross a network in clear unless the registry was named.
	Insecure []string
	// Concurrency bounds the references probed at once (default DefaultConcurrency).
	Concurrency int
	// Timeout bounds each HTTP request, token exchanges included (default 10s).
	Timeout time.Duration
	// Retries is how many times a request is tried on 408/429/5xx or a network error
	// (default 3), waiting Backoff, then Backoff×2, ... between tries (default 500ms).
	Retries int
	Backoff time.Duration
	// Transport is the HTTP transport (default: go-containerregistry's DefaultTransport).
	Transport http.RoundTripper
	// UserAgent is sent with every request.
	UserAgent string
}

// DefaultConcurrency is how many references are probed at once unless Options say otherwise.
// A reference costs three requests in a row (HEAD, manifest, config blob), so probing is
// mostly waiting on the network: at 20 ms a request, 1,000 references take at least 7.5 s 8
// at once, 1.9 s 32 at once and 1.25 s 48 at once (BenchmarkInventory1000Refs). 48 stays
// below the 50 idle connections per host that go-containerregistry's default transport
// keeps, so connections (and TLS handshakes) are reused rather than churned; callers lower
// it with --registry-concurrency.
const DefaultConcurrency = 48

// Prober probes references and remembers what it learnt for the rest of the run.
type Prober struct {
	opts     Options
	insecure map[string]bool
	keychain authn.Keychain
	// puller is shared by every probe of the run, so a registry is pinged and a token
	// fetched once per repository, not once per reference.
	puller *remote.Puller

	mu        sync.Mutex
	byName    map[string]*entry // canonical reference → result (de-duplication and cache)
	platforms map[string][]imageref.Platform

	// Stats count what went over the wire, for tests and benchmarks.
	statsMu sync.Mutex
	stats   Stats
}

// Stats counts probes.
type Stats struct {
	Probes    int // distinct references probed over the network
	CacheHits int // references answered from this run's cache
}

type entry struct {
	done  chan struct{}
	facts imageref.Facts
}

// New builds a Prober.
func New(o Options) *Prober {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Retries <= 0 {
		o.Retries = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.Transport == nil {
		o.Transport = remote.DefaultTransport
	}
	if o.UserAgent == "" {
		o.UserAgent = "unstick"
	}
	p := &Prober{opts: o, insecure: map[string]bool{}, byName: map[string]*entry{}, platforms: map[string][]imageref.Platform{}}
	for _, h := range o.Insecure {
		p.insecure[strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(h, "http://"), "https://"), "/")] = true
	}
	chains := append([]authn.Keychain{}, o.Keychains...)
	if !o.NoDockerConfig {
		chains = append(chains, authn.DefaultKeychain)
	}
	p.keychain = authn.NewMultiKeychain(chains...)
	puller, err := remote.NewPuller(p.remoteOptions()...)
	if err != nil {
		panic("registry: building the puller: " + err.Error()) // only conflicting auth options fail
	}
	p.puller = puller
	return p
}

// Stats returns what the prober did so far.
func (p *Prober) Stats() Stats {
	p.statsMu.Lock()
	defer p.statsMu.Unlock()
	return p.stats
}

// Probe answers for every reference, probing each distinct one once (bounded concurrency).
// The map is keyed by the reference as given. progress, if set, is told how many are done.
func (p *Prober) Probe(ctx context.Context, refs []string, progress func(done, total int)) map[string]imageref.Facts {
	uniq := map[string]bool{}
	var list []string
	for _, r := range refs {
		if !uniq[r] {
			uniq[r] = true
			list = append(list, r)
		}
	}
	sort.Strings(list)
	out := make(map[string]imageref.Facts, len(list))
	var mu sync.Mutex
	sem := make(chan struct{}, p.opts.Concurrency)
	var wg sync.WaitGroup
	done := 0
	for _, r := range list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			f := p.One(ctx, r)
			<-sem
			mu.Lock()
			out[r] = f
			done++
			if progress != nil {
				progress(done, len(list))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// One probes a single reference (or answers from the run's cache).
func (p *Prober) One(ctx context.Context, ref string) imageref.Facts {
	parsed, err := imageref.Parse(ref)
	if err != nil {
		return imageref.Facts{Ref: ref, Status: imageref.Invalid, Error: err.Error()}
	}
	key := parsed.String()
	p.mu.Lock()
	e, cached := p.byName[key]
	if !cached {
		e = &entry{done: make(chan struct{})}
		p.byName[key] = e
	}
	p.mu.Unlock()
	if cached {
		p.count(func(s *Stats) { s.CacheHits++ })
		select {
		case <-e.done:
		case <-ctx.Done():
			return imageref.Facts{Ref: ref, Canonical: key, Status: imageref.Unreachable, Error: ctx.Err().Error()}
		}
	} else {
		p.count(func(s *Stats) { s.Probes++ })
		e.facts = p.probe(ctx, parsed)
		close(e.done)
	}
	f := e.facts
	f.Ref = ref
	f.Platforms = append([]imageref.Platform(nil), f.Platforms...)
	return f
}

func (p *Prober) count(fn func(*Stats)) {
	p.statsMu.Lock()
	fn(&p.stats)
	p.statsMu.Unlock()
}

func (p *Prober) remoteOptions() []remote.Option {
	return []remote.Option{
		remote.WithAuthFromKeychain(p.keychain),
		remote.WithTransport(&httpsOnly{next: &timeoutTransport{next: p.opts.Transport, timeout: p.opts.Timeout}, insecure: p.insecure}),
		remote.WithRetryBackoff(remote.Backoff{Duration: p.opts.Backoff, Factor: 2, Jitter: 0.1, Steps: p.opts.Retries}),
		remote.WithRetryStatusCodes(http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout),
		remote.WithUserAgent(p.opts.UserAgent),
		// The shared puller limits its blob fetches (the config blobs) to 4 at once by
		// default, which would cap the probes far below Concurrency.
		remote.WithJobs(p.opts.Concurrency),
	}
}

// probe asks the registry: HEAD the manifest (existence and digest: Docker Hub does not count
// HEAD requests against its pull rate limit), then GET the manifest by digest for the
// platforms (an index lists them; a single image's config blob names its own). No layer is
// ever downloaded.
func (p *Prober) probe(ctx context.Context, r imageref.Ref) imageref.Facts {
	f := imageref.Facts{Ref: r.Original, Canonical: r.String()}
	var opts []name.Option
	if p.insecure[r.Registry] {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(r.String(), opts...)
	if err != nil {
		f.Status, f.Error = imageref.Invalid, err.Error()
		return f
	}
	desc, err := p.puller.Head(ctx, ref)
	if err != nil {
		f.Status, f.Error = classify(err)
		return f
	}
	f.Status = imageref.OK
	f.Digest, f.MediaType = desc.Digest.String(), string(desc.MediaType)
	f.Index = desc.MediaType.IsIndex()
	p.mu.Lock()
	plats, known := p.platforms[f.Digest]
	p.mu.Unlock()
	if known {
		f.Platforms = plats
		return f
	}
	plats, err = p.readPlatforms(ctx, ref.Context().Digest(f.Digest), desc.MediaType.IsIndex())
	if err != nil {
		// Existence is established; only the platforms are unknown.
		f.Error = "reading platforms: " + err.Error()
		return f
	}
	f.Platforms = plats
	p.mu.Lock()
	p.platforms[f.Digest] = plats
	p.mu.Unlock()
	return f
}

func (p *Prober) readPlatforms(ctx context.Context, ref name.Digest, index bool) ([]imageref.Platform, error) {
	desc, err := p.puller.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out []imageref.Platform
	if desc.MediaType.IsIndex() || index {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, d := range m.Manifests {
			if d.Platform == nil || d.Platform.OS == "unknown" || d.Platform.Architecture == "unknown" {
				continue // attestation manifests (buildkit) carry unknown/unknown
			}
			out = append(out, platform(*d.Platform))
		}
	} else {
		img, err := desc.Image()
		if err != nil {
			return nil, err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		out = append(out, imageref.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func platform(p v1.Platform) imageref.Platform {
	return imageref.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}
}

// classify turns a registry error into a status. A HEAD response has no body, so the
// status code decides: 404 missing, 401/403 unauthorized, anything else unreachable.
func classify(err error) (imageref.Status, string) {
	var te *transport.Error
	if errors.As(err, &te) {
		switch te.StatusCode {
		case http.StatusNotFound:
			return imageref.Missing, "manifest unknown (HTTP 404)"
		case http.StatusUnauthorized, http.StatusForbidden:
			return imageref.Unauthorized, fmt.Sprintf("HTTP %d %s: no access with the credentials available", te.StatusCode, http.StatusText(te.StatusCode))
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode:
				return imageref.Missing, d.String()
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return imageref.Unauthorized, d.String()
			}
		}
		return imageref.Unreachable, te.Error()
	}
	return imageref.Unreachable, err.Error()
}

// httpsOnly refuses plain-HTTP requests to hosts not named insecure (loopback excepted).
type httpsOnly struct {
	next     http.RoundTripper
	insecure map[string]bool
}

func (h *httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !h.insecure[req.URL.Host] && !isLoopback(req.URL.Hostname()) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing plain HTTP to %s (not named with --insecure-registry)", req.URL.Host)
	}
	return h.next.RoundTrip(req)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// timeoutTransport bounds each request (and the reading of its body) by a timeout.
type timeoutTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if ctx.Err() == context.DeadlineExceeded && req.Context().Err() == nil {
			return nil, fmt.Errorf("%s %s: no answer within %s: %w", req.Method, req.URL.Redacted(), t.timeout, err)
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
