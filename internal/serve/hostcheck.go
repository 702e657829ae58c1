package serve

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// LoopbackHostsOnly refuses requests that do not name serve by a loopback name when serve
// listens on a loopback address. A web page can rebind its own host name to 127.0.0.1 (DNS
// rebinding) and so make the browser read a local serve as if it were that page's site; the
// browser still sends the page's host name in Host, which is what this check refuses. Only
// localhost, 127.0.0.1 and [::1], with the port serve listens on, pass. On any other address
// h is returned unchanged.
func LoopbackHostsOnly(h http.Handler, addr net.Addr) http.Handler {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return h
	}
	port := fmt.Sprint(tcp.Port)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host, port) {
			http.Error(w, fmt.Sprintf("misdirected request: serve listens on a loopback address and answers only to http://127.0.0.1:%s/, http://localhost:%s/ or http://[::1]:%s/", port, port, port),
				http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names a loopback name and port.
func loopbackHost(host, port string) bool {
	name, p, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the scheme's default, which serve listens on only if it is 80.
		name, p = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "80"
	}
	if p != port {
		return false
	}
	switch strings.ToLower(name) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}
