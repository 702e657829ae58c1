package serve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// listenLimited serves /healthz with l on a loopback port until the test ends.
func listenLimited(t *testing.T, l Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	hs := NewHTTPServer(mux, l)
	go func() { _ = hs.Serve(LimitListener(ln, l)) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String()
}

// keepAlive opens a connection and completes one request on it, leaving it idle.
func keepAlive(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := bufio.NewReader(c)
	if err := getHealthz(c, r, 5*time.Second); err != nil {
		t.Fatalf("first request: %v", err)
	}
	return c, r
}

func getHealthz(c net.Conn, r *bufio.Reader, within time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(within))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// closedWithin waits for the server to close c: a read that ends in EOF (or a reset).
func closedWithin(c net.Conn, r *bufio.Reader, d time.Duration) error {
	_ = c.SetReadDeadline(time.Now().Add(d))
	if _, err := r.ReadByte(); errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return nil
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	l := DefaultLimits()
	l.IdleTimeout, l.MaxConns = 300*time.Millisecond, 8
	addr := listenLimited(t, l)
	type conn struct {
		c net.Conn
		r *bufio.Reader
	}
	var conns []conn
	for range 8 {
		c, r := keepAlive(t, addr)
		conns = append(conns, conn{c, r})
	}
	start := time.Now()
	for _, cr := range conns {
		if err := closedWithin(cr.c, cr.r, 5*time.Second); err != nil {
			t.Fatalf("an idle keep-alive connection was still open after 5s (idle timeout %s): %v", l.IdleTimeout, err)
		}
	}
	if took := time.Since(start); took < l.IdleTimeout/2 {
		t.Errorf("closed after %s, before the idle timeout of %s", took, l.IdleTimeout)
	}
}

// A client that opens a connection and never finishes its headers (slowloris) loses it.
func TestSlowHeadersAreCutOff(t *testing.T) {
	l := DefaultLimits()
	l.ReadHeaderTimeout = 300 * time.Millisecond
	addr := listenLimited(t, l)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(r) // a 408 answer or nothing, then the close
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a request with unfinished headers was still open after 5s (header timeout %s)", l.ReadHeaderTimeout)
	}
}

// Connections beyond MaxConns are not served until one of those served closes: thousands of
// idle clients cannot hold thousands of connections' memory.
func TestConnectionsBeyondTheLimitWait(t *testing.T) {
	l := DefaultLimits()
	l.MaxConns, l.IdleTimeout = 4, time.Minute
	addr := listenLimited(t, l)
	var held []net.Conn
	for range l.MaxConns {
		c, _ := keepAlive(t, addr)
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr) // the kernel's accept queue takes it
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	r := bufio.NewReader(extra)
	if err := getHealthz(extra, r, 300*time.Millisecond); err == nil {
		t.Fatalf("a fifth connection was served while %d were held (limit %d)", len(held), l.MaxConns)
	}
	_ = held[0].Close()
	_ = extra.SetDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("the waiting connection was not served once a slot was free: %v", err)
	}
	resp.Body.Close()
}

// Headers beyond MaxHeaderBytes are refused with 431, not buffered.
func TestHugeHeadersAreRefused(t *testing.T) {
	l := DefaultLimits()
	l.MaxHeaderBytes = 4 << 10
	addr := listenLimited(t, l)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// net/http allows 4 KiB of slack over MaxHeaderBytes.
	req := "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: " + strings.Repeat("a", 16<<10) + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("16 KiB of headers: %d, want 431", resp.StatusCode)
	}
}
