package registry

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/unstick-dev/unstick/internal/imageref"
)

// testRegistry is go-containerregistry's in-process registry behind httptest, with a
// middleware in front for auth, latency and failure injection, and request counters.
type testRegistry struct {
	srv      *httptest.Server
	host     string
	requests atomic.Int64 // manifest requests (HEAD/GET /v2/<name>/manifests/)
	blobs    atomic.Int64 // blob GETs (config blobs; a layer GET would show here too)
	inflight atomic.Int64
	maxIn    atomic.Int64

	mu     sync.Mutex
	delay  time.Duration
	user   string
	pass   string
	failN  int // answer the next failN manifest requests with failCode
	failCd int
}

func newTestRegistry(t testing.TB) *testRegistry {
	t.Helper()
	tr := &testRegistry{}
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		delay, user, pass := tr.delay, tr.user, tr.pass
		fail := 0
		if strings.Contains(r.URL.Path, "/manifests/") && tr.failN > 0 {
			tr.failN--
			fail = tr.failCd
		}
		tr.mu.Unlock()
		if strings.Contains(r.URL.Path, "/manifests/") && r.Method != http.MethodPut {
			tr.requests.Add(1)
			n := tr.inflight.Add(1)
			defer tr.inflight.Add(-1)
			for {
				m := tr.maxIn.Load()
				if n <= m || tr.maxIn.CompareAndSwap(m, n) {
					break
				}
			}
		}
		if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
			tr.blobs.Add(1)
		}
		if delay > 0 && r.Method != http.MethodPut && r.Method != http.MethodPost && r.Method != http.MethodPatch {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="unstick-test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if fail != 0 {
			http.Error(w, "injected failure", fail)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	tr.host = strings.TrimPrefix(tr.srv.URL, "http://")
	return tr
}

func (tr *testRegistry) set(fn func(*testRegistry)) {
	tr.mu.Lock()
	fn(tr)
	tr.mu.Unlock()
}

// image builds a small random image for one platform.
func image(t testing.TB, os, arch string) v1.Image {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = os, arch
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func (tr *testRegistry) push(t testing.TB, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(tr.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, _ := img.Digest()
	return d.String()
}

func (tr *testRegistry) pushIndex(t *testing.T, repoTag string, plats ...v1.Platform) string {
	t.Helper()
	idx := v1.ImageIndex(empty.Index)
	for _, p := range plats {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: image(t, p.OS, p.Architecture), Descriptor: v1.Descriptor{Platform: &p}})
	}
	ref, err := name.ParseReference(tr.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatalf("push index %s: %v", ref, err)
	}
	d, _ := idx.Digest()
	return d.String()
}

func newProber(o Options) *Prober {
	o.NoDockerConfig = true
	if o.Backoff == 0 {
		o.Backoff = 5 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	return New(o)
}

func TestProbeSingleArchImage(t *testing.T) {
	tr := newTestRegistry(t)
	digest := tr.push(t, "rancher/kubectl:v1.30.3", image(t, "linux", "amd64"))
	blobsAfterPush := tr.blobs.Load()
	f := newProber(Options{}).One(context.Background(), tr.host+"/rancher/kubectl:v1.30.3")
	if f.Status != imageref.OK || f.Digest != digest || f.Index {
		t.Fatalf("got %+v, want ok %s single image", f, digest)
	}
	if got := f.PlatformList(); got != "linux/amd64" {
		t.Errorf("platforms %q, want linux/amd64", got)
	}
	if ok, known := f.Supports("linux", "arm64"); ok || !known {
		t.Errorf("Supports(arm64) = %v,%v; want false,true", ok, known)
	}
	// HEAD + GET manifest by digest, and exactly one blob: the config. Never a layer.
	if n := tr.blobs.Load() - blobsAfterPush; n != 1 {
		t.Errorf("%d blob GETs, want 1 (the config blob only, no layers)", n)
	}
}

func TestProbeMultiArchIndex(t *testing.T) {
	tr := newTestRegistry(t)
	digest := tr.pushIndex(t, "rancher/kubectl:v1.31.0", v1.Platform{OS: "linux", Architecture: "amd64"}, v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"})
	blobs := tr.blobs.Load()
	f := newProber(Options{}).One(context.Background(), tr.host+"/rancher/kubectl:v1.31.0")
	if f.Status != imageref.OK || !f.Index || f.Digest != digest {
		t.Fatalf("got %+v, want an ok index %s", f, digest)
	}
	if got := f.PlatformList(); got != "linux/amd64, linux/arm64/v8" {
		t.Errorf("platforms %q", got)
	}
	if ok, _ := f.Supports("linux", "arm64"); !ok {
		t.Error("index with linux/arm64/v8 must support an arm64 node")
	}
	if n := tr.blobs.Load() - blobs; n != 0 {
		t.Errorf("%d blob GETs for an index, want 0", n)
	}
}

func TestProbeDeletedAndMissingTags(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "rancher/kubectl:v1.29.9", image(t, "linux", "amd64"))
	ref, _ := name.ParseReference(tr.host + "/rancher/kubectl:v1.29.9")
	if err := remote.Delete(ref); err != nil {
		t.Fatalf("delete: %v", err)
	}
	p := newProber(Options{})
	for _, r := range []string{tr.host + "/rancher/kubectl:v1.29.9", tr.host + "/rancher/kubectl:v9.9.9", tr.host + "/never/pushed:v1"} {
		f := p.One(context.Background(), r)
		if f.Status != imageref.Missing {
			t.Errorf("%s: status %s (%s), want missing", r, f.Status, f.Error)
		}
	}
}

func TestProbeBasicAuth(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "private/agent:v1", image(t, "linux", "amd64"))
	tr.set(func(r *testRegistry) { r.user, r.pass = "robot", "s3cret" })
	ref := tr.host + "/private/agent:v1"

	if f := newProber(Options{}).One(context.Background(), ref); f.Status != imageref.Unauthorized {
		t.Errorf("anonymous: %s (%s), want unauthorized", f.Status, f.Error)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	secret := []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, tr.host, auth))
	kc, err := NewPullSecretKeychain(secret)
	if err != nil {
		t.Fatal(err)
	}
	if f := newProber(Options{Keychains: []authn.Keychain{kc}}).One(context.Background(), ref); f.Status != imageref.OK || f.PlatformList() != "linux/amd64" {
		t.Errorf("with the pull secret: %+v, want ok linux/amd64", f)
	}
	wrong, _ := NewPullSecretKeychain([]byte(fmt.Sprintf(`{"auths":{%q:{"username":"robot","password":"nope"}}}`, tr.host)))
	if f := newProber(Options{Keychains: []authn.Keychain{wrong}}).One(context.Background(), ref); f.Status != imageref.Unauthorized {
		t.Errorf("wrong password: %s, want unauthorized", f.Status)
	}

	// The docker config keychain: $DOCKER_CONFIG/config.json.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), secret, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	if f := New(Options{Backoff: time.Millisecond}).One(context.Background(), ref); f.Status != imageref.OK {
		t.Errorf("docker config keychain: %s (%s), want ok", f.Status, f.Error)
	}
}

func TestProbeSlowRegistryTimesOut(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "slow/image:v1", image(t, "linux", "amd64"))
	tr.set(func(r *testRegistry) { r.delay = 3 * time.Second })
	p := newProber(Options{Timeout: 100 * time.Millisecond, Retries: 2})
	start := time.Now()
	f := p.One(context.Background(), tr.host+"/slow/image:v1")
	took := time.Since(start)
	if f.Status != imageref.Unreachable {
		t.Fatalf("status %s (%s), want unreachable", f.Status, f.Error)
	}
	if !strings.Contains(f.Error, "no answer within 100ms") {
		t.Errorf("error %q should say the request timed out", f.Error)
	}
	if took > 2*time.Second {
		t.Errorf("took %s: the per-request timeout did not bound the probe", took)
	}
}

func TestProbeRetriesOn429And5xx(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "busy/image:v1", image(t, "linux", "arm64"))
	tr.set(func(r *testRegistry) { r.failN, r.failCd = 2, http.StatusTooManyRequests })
	before := tr.requests.Load()
	f := newProber(Options{Retries: 3}).One(context.Background(), tr.host+"/busy/image:v1")
	if f.Status != imageref.OK {
		t.Fatalf("after two 429s: %s (%s), want ok", f.Status, f.Error)
	}
	if n := tr.requests.Load() - before; n < 3 {
		t.Errorf("%d manifest requests, want the two 429s retried", n)
	}

	tr.set(func(r *testRegistry) { r.failN, r.failCd = 1000, http.StatusServiceUnavailable })
	before = tr.requests.Load()
	f = newProber(Options{Retries: 3}).One(context.Background(), tr.host+"/busy/image:v1")
	if f.Status != imageref.Unreachable {
		t.Fatalf("always 503: %s, want unreachable", f.Status)
	}
	if n := tr.requests.Load() - before; n != 3 {
		t.Errorf("%d manifest requests for a 503 registry, want 3 tries", n)
	}
}

func TestProbeDeduplicatesAndCaches(t *testing.T) {
	tr := newTestRegistry(t)
	tr.push(t, "library/busybox:1.36", image(t, "linux", "amd64"))
	p := newProber(Options{})
	before := tr.requests.Load()
	refs := []string{tr.host + "/library/busybox:1.36", tr.host + "/library/busybox:1.36", tr.host + "/library/busybox:1.36"}
	got := p.Probe(context.Background(), refs, nil)
	if len(got) != 1 || got[refs[0]].Status != imageref.OK {
		t.Fatalf("got %+v", got)
	}
	first := tr.requests.Load() - before
	got = p.Probe(context.Background(), refs[:1], nil)
	if got[refs[0]].Status != imageref.OK {
		t.Fatal("cached answer lost")
	}
	if n := tr.requests.Load() - before; n != first {
		t.Errorf("second probe of the same reference went to the registry (%d → %d requests)", first, n)
	}
	if s := p.Stats(); s.Probes != 1 || s.CacheHits != 1 {
		t.Errorf("stats %+v, want 1 probe and 1 cache hit", s)
	}
}

func TestProbeBoundedConcurrency(t *testing.T) {
	tr := newTestRegistry(t)
	var refs []string
	for i := range 24 {
		r := fmt.Sprintf("fleet/agent:v0.%d", i)
		tr.push(t, r, image(t, "linux", "amd64"))
		refs = append(refs, tr.host+"/"+r)
	}
	tr.set(func(r *testRegistry) { r.delay = 20 * time.Millisecond })
	tr.maxIn.Store(0)
	got := newProber(Options{Concurrency: 3}).Probe(context.Background(), refs, nil)
	for _, r := range refs {
		if got[r].Status != imageref.OK {
			t.Fatalf("%s: %+v", r, got[r])
		}
	}
	if m := tr.maxIn.Load(); m > 3 {
		t.Errorf("%d manifest requests in flight at once, want at most 3", m)
	}
}

func TestProbeInvalidReference(t *testing.T) {
	f := newProber(Options{}).One(context.Background(), "Rancher/Kubectl:v1")
	if f.Status != imageref.Invalid {
		t.Fatalf("status %s, want invalid", f.Status)
	}
}

// BenchmarkProbe100Refs measures 100 distinct references against a registry that answers
// every request after a fixed latency (go test -bench Probe100 ./internal/registry).
func BenchmarkProbe100Refs(b *testing.B) {
	for _, lat := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("latency=%s", lat), func(b *testing.B) {
			t := b
			tr := newTestRegistry(t)
			var refs []string
			for i := range 100 {
				r := fmt.Sprintf("bench/image%d:v%d", i%10, i)
				tr.push(t, r, image(t, "linux", "amd64")) // distinct digests: no platform cache hits
				refs = append(refs, tr.host+"/"+r)
			}
			tr.set(func(r *testRegistry) { r.delay = lat })
			b.ResetTimer()
			for range b.N {
				p := newProber(Options{Concurrency: 8})
				got := p.Probe(context.Background(), refs, nil)
				if len(got) != 100 {
					b.Fatal("lost results")
				}
			}
			b.StopTimer()
			tr.srv.Close()
		})
	}
}
