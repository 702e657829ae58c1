package serve

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/unstick-dev/unstick/internal/report"
)

// Handler serves /healthz, /readyz, /metrics, /api/v1/findings and the dashboard at /.
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
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.o.Registry, promhttp.HandlerOpts{Registry: s.o.Registry}))
	mux.HandleFunc("GET /api/v1/findings", func(w http.ResponseWriter, _ *http.Request) {
		rep := s.Report()
		if rep == nil {
			http.Error(w, "no evaluation yet: caches not synced", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := report.Render(w, rep, "json", report.Options{Catalog: s.o.Catalog, ToolVersion: s.o.Version}); err != nil {
			s.o.Log.Error("rendering findings", "err", err)
		}
	})
	mux.HandleFunc("GET /{$}", s.dashboard)
	return mux
}
