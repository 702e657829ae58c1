package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/registry"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// otherCA is a certificate authority that signed nothing the test server presents.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-the-cluster-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TLS to the API server is verified by default: against a real kube-apiserver, a kubeconfig
// whose CA did not sign the server's certificate makes scan and collect fail with the x509
// error, naming the cluster, and read nothing; --insecure-skip-tls-verify, only when given,
// skips the check (the control: the same kubeconfig then reads the cluster); the right CA
// works without it.
func TestTLSVerifiedByDefault(t *testing.T) {
	env := testenv.Start(t, testenv.WithContextName("tls"))
	bad := rest.CopyConfig(env.Config)
	bad.CAData = otherCA(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(kubeconfig, bad, "tls"); err != nil {
		t.Fatal(err)
	}
	type report struct {
		Clusters []json.RawMessage `json:"clusters"`
		Errors   []struct {
			Cluster, Message string
		} `json:"errors"`
	}
	scan := func(args ...string) (report, string, int) {
		t.Helper()
		out, errOut, code := run(t, append([]string{"scan", "-o", "json", "-q", "--offline-registry", "--timeout", "20s"}, args...)...)
		var r report
		if code != ExitFailed {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v: no JSON report (%v): exit %d\n%s\n%s", args, err, code, out, errOut)
			}
		}
		return r, errOut, code
	}
	// The failure, on stderr (the only cluster could not be read: exit 1) or under the
	// report's errors.
	x509Err := func(r report, stderr string) string {
		for _, e := range r.Errors {
			if strings.Contains(e.Message, "x509") {
				return e.Cluster + ": " + e.Message
			}
		}
		if strings.Contains(stderr, "x509") {
			return stderr
		}
		return ""
	}

	r, errOut, code := scan("--kubeconfig", kubeconfig)
	msg := x509Err(r, errOut)
	if !strings.Contains(msg, "tls") || !strings.Contains(msg, "x509: certificate signed by unknown authority") {
		t.Errorf("with a CA that does not match the server: want the x509 error naming cluster tls, got exit %d, errors %+v\n%s", code, r.Errors, errOut)
	}
	if code == ExitOK || len(r.Clusters) > 0 && len(r.Errors) == 0 {
		t.Errorf("a cluster whose certificate did not verify was read or passed silently: exit %d", code)
	}
	_, errOut, code = run(t, "collect", "--kubeconfig", kubeconfig, "-q", "--timeout", "20s", "--to", filepath.Join(t.TempDir(), "b.tar.gz"))
	if code == ExitOK || !strings.Contains(errOut, "x509: certificate signed by unknown authority") {
		t.Errorf("collect with a CA that does not match the server: exit %d\n%s", code, errOut)
	}

	// Skipping verification is honoured only when asked for, and then the cluster is read.
	r, errOut, code = scan("--kubeconfig", kubeconfig, "--insecure-skip-tls-verify")
	if msg := x509Err(r, errOut); msg != "" || len(r.Errors) != 0 || code == ExitFailed {
		t.Errorf("--insecure-skip-tls-verify: exit %d, errors %+v\n%s", code, r.Errors, errOut)
	}
	// The cluster's own CA verifies.
	r, errOut, code = scan("--kubeconfig", env.Kubeconfig)
	if len(r.Errors) != 0 || code == ExitFailed {
		t.Errorf("with the cluster's CA: exit %d, errors %+v\n%s", code, r.Errors, errOut)
	}
}

// countingRegistry is go-containerregistry's in-process registry over plain HTTP, counting the
// connections it accepts and the HTTP requests that reach it.
type countingRegistry struct {
	srv      *httptest.Server
	conns    atomic.Int64
	requests atomic.Int64
}

func newCountingRegistry(t *testing.T) *countingRegistry {
	t.Helper()
	c := &countingRegistry{}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.conns.Add(1)
		}
	}
	c.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	return c
}

// Plain-HTTP registries are used only when named: every registry address below leads to the
// same plain-HTTP registry (the dialer sends every connection there, as a DNS entry would), and
// only the named one and the loopback one are spoken to over HTTP. An unnamed registry is
// contacted over HTTPS only: connections are made, no HTTP request ever reaches the registry,
// and the image is not found. An unnamed private (RFC 1918) address, which go-containerregistry
// alone would fall back to HTTP for, is refused too.
func TestRegistryPlainHTTPOnlyWhenNamed(t *testing.T) {
	reg := newCountingRegistry(t)
	addr := strings.TrimPrefix(reg.srv.URL, "http://")
	_, port, _ := net.SplitHostPort(addr)
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(addr + "/team/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	dial := &net.Dialer{Timeout: 5 * time.Second}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dial.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout: 5 * time.Second,
	}
	probe := func(host string, insecure ...string) (imageref.Facts, int64, int64) {
		t.Helper()
		c0, r0 := reg.conns.Load(), reg.requests.Load()
		p := registry.New(registry.Options{NoDockerConfig: true, Transport: transport, Insecure: insecure,
			Retries: 1, Backoff: 10 * time.Millisecond, Timeout: 5 * time.Second})
		ref := host + "/team/app:v1"
		f := p.Probe(context.Background(), []string{ref}, nil)[ref]
		transport.CloseIdleConnections()
		return f, reg.conns.Load() - c0, reg.requests.Load() - r0
	}

	public := "registry.unnamed.test:" + port
	f, conns, reqs := probe(public)
	if f.Status == imageref.OK || reqs != 0 {
		t.Errorf("unnamed registry %s: status %s, %d HTTP request(s) reached it in clear (%s)", public, f.Status, reqs, f.Error)
	}
	if conns == 0 {
		t.Errorf("unnamed registry %s: no connection at all, so nothing shows it was tried over HTTPS (%s)", public, f.Error)
	}

	f, _, reqs = probe(public, public)
	if f.Status != imageref.OK || reqs == 0 {
		t.Errorf("registry %s named with --insecure-registry: status %s, %d requests (%s)", public, f.Status, reqs, f.Error)
	}

	private := "10.254.254.254:" + port
	f, _, reqs = probe(private)
	if f.Status == imageref.OK || reqs != 0 {
		t.Errorf("unnamed private registry %s: status %s, %d HTTP request(s) reached it in clear (%s)", private, f.Status, reqs, f.Error)
	}
	if !strings.Contains(f.Error, "--insecure-registry") {
		t.Errorf("unnamed private registry %s: the error does not say how to allow plain HTTP: %s", private, f.Error)
	}
	f, _, reqs = probe(private, private)
	if f.Status != imageref.OK || reqs == 0 {
		t.Errorf("private registry %s named: status %s, %d requests (%s)", private, f.Status, reqs, f.Error)
	}

	// Loopback registries fall back to HTTP on their own, as Docker's do (a local mirror).
	loop := "127.0.0.1:" + port
	if f, _, reqs := probe(loop); f.Status != imageref.OK || reqs == 0 {
		t.Errorf("loopback registry %s: status %s, %d requests (%s)", loop, f.Status, reqs, f.Error)
	}
}
