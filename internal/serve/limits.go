package serve

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Limits bound what one client can hold of serve: time to send its headers and body, time
// to read the answer, how long an idle keep-alive connection stays open, the size of the
// headers, and how many connections are served at once (those beyond wait in the kernel's
// accept queue until one closes).
type Limits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	MaxConns          int
}

// DefaultLimits suit a Prometheus scraping every 30s and a few people on the dashboard: the
// findings of thousands of clusters are written well within the write timeout, and an idle
// connection costs memory for a minute at most.
func DefaultLimits() Limits {
	return Limits{
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
		MaxConns:          128,
	}
}

// NewHTTPServer serves h with the limits' timeouts and header size.
func NewHTTPServer(h http.Handler, l Limits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// LimitListener accepts at most the limits' MaxConns connections at once (no limit when 0).
func LimitListener(ln net.Listener, l Limits) net.Listener {
	if l.MaxConns <= 0 {
		return ln
	}
	return netutil.LimitListener(ln, l.MaxConns)
}
