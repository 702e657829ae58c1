package testenv

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/source"
)

var podLogPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/log$`)

// LogProxy is a handler in front of a test API server. The test server has no kubelet, so
// pods/log cannot be served for real: the proxy answers pods/log from log files under
// logsDir/<namespace>/<pod>/<container>[.previous].log (honouring container, previous and
// tailLines) and passes every other request to the real server with cfg's credentials. It is
// the one stand-in of the test environment, and replaces only what the real thing cannot do.
func LogProxy(cfg *rest.Config, logsDir string) (http.Handler, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = rt
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		if strings.ContainsAny(name, `/\`) || strings.Contains(name, "..") {
			http.Error(w, "bad container name", http.StatusBadRequest)
			return
		}
		b, err := os.ReadFile(filepath.Join(logsDir, m[1], m[2], name+".log"))
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"container %q in pod %q has no log here","reason":"BadRequest","code":400}`, q.Get("container"), m[2])
			return
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 && n < len(lines) {
			lines = lines[len(lines)-n:]
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	}), nil
}

// ServeLogProxy listens on a free loopback port and serves LogProxy until close is called.
func ServeLogProxy(cfg *rest.Config, logsDir string) (proxyURL string, close func() error, err error) {
	h, err := LogProxy(cfg, logsDir)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "testenv: log proxy:", err)
		}
	}()
	return "http://" + ln.Addr().String(), srv.Close, nil
}

// CopyLogs copies the container logs of one cluster of a bundle into logsDir, where LogProxy
// serves them; it returns how many files it copied.
func CopyLogs(bundle, cluster, logsDir string) (int, error) {
	if cluster == "" {
		// As Load does: the bundle root, or the only cluster of a bundle that has one.
		seen := map[string]bool{}
		if err := source.ReadRawLogs(bundle, func(l source.RawLog) error { seen[l.Cluster] = true; return nil }); err != nil {
			return 0, err
		}
		if len(seen) == 1 {
			for c := range seen {
				cluster = c
			}
		}
	}
	n := 0
	err := source.ReadRawLogs(bundle, func(l source.RawLog) error {
		if l.Cluster != cluster {
			return nil
		}
		name := l.Container
		if l.Previous {
			name += ".previous"
		}
		dst := filepath.Join(logsDir, l.Namespace, l.Pod, name+".log")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		n++
		return os.WriteFile(dst, l.Data, 0o644)
	})
	return n, err
}
