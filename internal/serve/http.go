package serve

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/unstick-dev/unstick/internal/report"
)

// Handler serves /healthz, /readyz, /metrics, /api/v1/findings and the dashboard at /; with
// Options.Auth, all but the health endpoints need a token allowed to get their path.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.Ready() {
			http.Error(w, "caches not synced yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET "+PathMetrics, s.protect(PathMetrics, promhttp.HandlerFor(s.o.Registry, promhttp.HandlerOpts{Registry: s.o.Registry})))
	mux.Handle("GET "+PathFindings, s.protect(PathFindings, http.HandlerFunc(s.findings)))
	mux.Handle("GET /{$}", s.protect(PathDashboard, http.HandlerFunc(s.dashboard)))
	return mux
}

// protect puts Options.Auth, when set, in front of h.
func (s *Server) protect(path string, h http.Handler) http.Handler {
	if s.o.Auth == nil {
		return h
	}
	return s.o.Auth.Protect(path, h)
}

func (s *Server) findings(w http.ResponseWriter, _ *http.Request) {
	rep := s.Report()
	if rep == nil {
		http.Error(w, "no evaluation yet: caches not synced", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := report.Render(w, rep, "json", report.Options{Catalog: s.o.Catalog, ToolVersion: s.o.Version}); err != nil {
		s.o.Log.Error("rendering findings", "err", err)
	}
}
