package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// In a pod, serve answers only tokens the cluster vouches for (TokenReview) whose user may
// get the endpoint as a non-resource URL under /unstick (SubjectAccessReview), as
// kube-rbac-proxy does: a Prometheus bound to a role with nonResourceURLs [/unstick/metrics]
// scrapes, an on-call engineer bound to all three reads the findings and the dashboard, any
// other pod's token is refused, although the built-in system:discovery role lets it get
// /api/*. Real ServiceAccount tokens (TokenRequest) against a real API server.
func TestServeAuthAgainstAPIServer(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	readerRole(t, admin, "unstick-metrics", "/unstick/metrics")
	readerRole(t, admin, "unstick-reader", "/unstick/", "/unstick/api/v1/findings", "/unstick/metrics")
	bind(t, admin, "unstick-auth-delegator", "system:auth-delegator", "cattle-system", "unstick")
	bind(t, admin, "prometheus-unstick-metrics", "unstick-metrics", "monitoring", "prometheus-k8s")
	bind(t, admin, "oncall-unstick-reader", "unstick-reader", "ops", "oncall")
	token := map[string]string{}
	for who, ns := range map[string]string{"unstick": "cattle-system", "prometheus-k8s": "monitoring", "oncall": "ops", "default": "tenant-a"} {
		cfg, err := env.ServiceAccountConfig(ctx, ns, who)
		if err != nil {
			t.Fatal(err)
		}
		token[who] = cfg.BearerToken
	}
	serveCfg, reviews := countReviews(saConfig(env, token["unstick"]))
	srv := startGuarded(t, env, kubernetes.NewForConfigOrDie(serveCfg), true)
	waitOpen(t, srv.URL+"/readyz")

	t.Run("health endpoints stay open", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/readyz"} {
			if code, _ := get(t, srv.URL+p, ""); code != http.StatusOK {
				t.Errorf("%s without a token: %d", p, code)
			}
		}
	})
	t.Run("every other endpoint needs an allowed token", func(t *testing.T) {
		for _, c := range []struct {
			path, who string
			want      int
		}{
			{PathMetrics, "", http.StatusUnauthorized},
			{PathFindings, "", http.StatusUnauthorized},
			{PathDashboard, "", http.StatusUnauthorized},
			{PathFindings, "not-a-token", http.StatusUnauthorized},
			{PathMetrics, "default", http.StatusForbidden},
			{PathFindings, "default", http.StatusForbidden},
			{PathDashboard, "default", http.StatusForbidden},
			{PathMetrics, "prometheus-k8s", http.StatusOK},
			{PathFindings, "prometheus-k8s", http.StatusForbidden},
			{PathDashboard, "prometheus-k8s", http.StatusForbidden},
			{PathMetrics, "oncall", http.StatusOK},
			{PathFindings, "oncall", http.StatusOK},
			{PathDashboard, "oncall", http.StatusOK},
		} {
			tok := token[c.who]
			if c.who == "not-a-token" {
				tok = "eyJhbGciOiJSUzI1NiJ9.e30.forged"
			}
			code, body := get(t, srv.URL+c.path, tok)
			if code != c.want {
				t.Errorf("%s as %q: %d %q, want %d", c.path, c.who, code, firstLine(body), c.want)
			}
			if code == http.StatusOK && c.path == PathFindings && !strings.Contains(body, `"findings"`) {
				t.Errorf("%s as %s: not the findings: %q", c.path, c.who, firstLine(body))
			}
		}
	})
	t.Run("decisions are cached", func(t *testing.T) {
		before := reviews.Load()
		for range 20 {
			get(t, srv.URL+PathMetrics, token["prometheus-k8s"])
			get(t, srv.URL+PathMetrics, token["default"])
		}
		if n := reviews.Load() - before; n != 0 {
			t.Errorf("%d reviews for 40 requests already decided", n)
		}
	})
	t.Run("serve without system:auth-delegator answers 503, never the data", func(t *testing.T) {
		unbound := startGuarded(t, env, kubernetes.NewForConfigOrDie(saConfig(env, token["default"])), false)
		if code, body := get(t, unbound.URL+PathMetrics, token["prometheus-k8s"]); code != http.StatusServiceUnavailable {
			t.Errorf("/metrics through a serve that may not review tokens: %d %q", code, firstLine(body))
		}
	})
}

func readerRole(t *testing.T, kube kubernetes.Interface, name string, paths ...string) {
	t.Helper()
	_, err := kube.RbacV1().ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: paths, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func bind(t *testing.T, kube kubernetes.Interface, name, role, ns, sa string) {
	t.Helper()
	_, err := kube.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func saConfig(env *testenv.Env, token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(env.Config)
	cfg.BearerToken = token
	return cfg
}

// countReviews counts the requests a config sends: here, only token and access reviews.
func countReviews(cfg *rest.Config) (*rest.Config, *atomic.Int64) {
	n := &atomic.Int64{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "reviews") {
				n.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg, n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// startGuarded serves env's cluster (read as the administrator) with its endpoints guarded
// by reviews through kube; run: watch it too (else the handlers answer without a report).
func startGuarded(t *testing.T, env *testenv.Env, kube kubernetes.Interface, run bool) *httptest.Server {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Targets: []source.Target{{Name: "local", Server: env.Config.Host, Config: env.Config}},
		Registry: prometheus.NewRegistry(), Catalog: cat, Thresholds: check.NewThresholds(cat), Version: "test",
		Auth: NewAuth(kube, nil)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	if !run {
		return hs
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return hs
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("%s: 401 without WWW-Authenticate", url)
	}
	return resp.StatusCode, string(b)
}

func waitOpen(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if code, _ := get(t, url, ""); code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not 200 after 60s", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
