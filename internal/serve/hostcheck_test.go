package serve

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A page on another site that rebinds its name to 127.0.0.1 reaches a local serve through
// the browser, but with its own name in Host: refused. The loopback names serve prints pass.
func TestLoopbackServeRefusesOtherHostNames(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("findings\n")) })
	hs := &http.Server{Handler: LoopbackHostsOnly(ok, ln.Addr()), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	for host, want := range map[string]int{
		fmt.Sprintf("127.0.0.1:%d", port):                      http.StatusOK,
		fmt.Sprintf("localhost:%d", port):                      http.StatusOK,
		fmt.Sprintf("LocalHost:%d", port):                      http.StatusOK,
		fmt.Sprintf("[::1]:%d", port):                          http.StatusOK,
		fmt.Sprintf("attacker.example.com:%d", port):           http.StatusMisdirectedRequest,
		fmt.Sprintf("localhost.attacker.example.com:%d", port): http.StatusMisdirectedRequest,
		fmt.Sprintf("127.0.0.2:%d", port):                      http.StatusMisdirectedRequest,
		fmt.Sprintf("localhost:%d", port+1):                    http.StatusMisdirectedRequest,
		"localhost":                                            http.StatusMisdirectedRequest,
		"attacker.example.com":                                 http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/api/v1/findings", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d %q, want %d", host, resp.StatusCode, body, want)
		}
	}
}

// Bound to all interfaces (in a pod, behind a Service), every Host is served: the check is
// for loopback listeners only, where a browser is the one client that can be tricked.
func TestHostCheckOnlyOnLoopback(t *testing.T) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for addr, want := range map[*net.TCPAddr]int{
		{IP: net.IPv4zero, Port: 9090}:              http.StatusOK,
		{IP: net.IPv6unspecified, Port: 9090}:       http.StatusOK,
		{IP: net.ParseIP("10.42.0.17"), Port: 9090}: http.StatusOK,
		{IP: net.IPv6loopback, Port: 9090}:          http.StatusMisdirectedRequest,
		{IP: net.ParseIP("127.0.0.1"), Port: 9090}:  http.StatusMisdirectedRequest,
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = "unstick.cattle-system.svc:9090"
		LoopbackHostsOnly(ok, addr).ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("listening on %s, Host %s: %d, want %d", addr, req.Host, rec.Code, want)
		}
	}
}
