package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

var podLogPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$`)

// logProxy stands in front of the real test API server. The test apiserver has no kubelet,
// so pods/log cannot be served for real: this proxy answers pods/log from the bundle's own
// log files (honouring container, previous and tailLines) and passes every other request to
// the real server with the administrator's credentials. It is the one fake in these tests,
// and it only replaces what the real thing cannot produce.
func logProxy(t *testing.T, cfg *rest.Config, bundle, cluster string) string {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = rt
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := podLogPath.FindStringSubmatch(r.URL.Path)
		if m == nil {
			rp.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		name := q.Get("container")
		if q.Get("previous") == "true" {
			name += ".previous"
		}
		b, err := os.ReadFile(filepath.Join(bundle, "clusters", cluster, "logs", m[1], m[2], name+".log"))
		if err != nil {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"previous terminated container not found","reason":"BadRequest","code":400}`, http.StatusBadRequest)
			return
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n < len(lines) {
			lines = lines[len(lines)-n:]
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
