// Command rancherfloor is the floor `scan --rancher` is measured against: an independent
// client that issues the same GET requests to Rancher as a recorded scan did, under the same
// limit of requests at once, decoding each JSON answer into `any` and keeping nothing. It
// knows nothing of unstick: it reads the request list (one path?query a line, as the
// Rancher stand-in recorded them), drops the pages a list's continue token asked for, and
// follows each list's continue tokens itself. Its requests do not wait for one another as a
// scan's do (discovery before lists), so it is the lower bound of a scan's wall time.
//
//	RANCHER_TOKEN=… rancherfloor -server https://rancher.example.com -ca ca.pem -requests paths.txt -max-inflight 32
//
// It prints one JSON line: wall seconds, requests, bytes.
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rancherfloor:", err)
		os.Exit(1)
	}
}

type floor struct {
	client   *http.Client
	server   string
	token    string
	requests atomic.Int64
	bytes    atomic.Int64
}

func run() error {
	server := flag.String("server", "", "Rancher's URL")
	caFile := flag.String("ca", "", "PEM of the CA Rancher's certificate is signed by")
	reqFile := flag.String("requests", "", "the recorded requests, one path?query a line")
	limit := flag.Int("max-inflight", 32, "requests at once")
	flag.Parse()
	paths, err := firstPages(*reqFile)
	if err != nil {
		return err
	}
	client, err := httpClient(*caFile)
	if err != nil {
		return err
	}
	f := &floor{client: client, server: strings.TrimRight(*server, "/"), token: os.Getenv("RANCHER_TOKEN")}
	start := time.Now()
	work := make(chan string)
	errs := make(chan error, *limit)
	var wg sync.WaitGroup
	for range *limit {
		wg.Go(func() {
			for p := range work {
				if err := f.read(p); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for _, p := range paths {
		work <- p
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"wall_s": time.Since(start).Seconds(), "requests": f.requests.Load(), "bytes": f.bytes.Load(),
	})
}

// firstPages are the recorded requests without those asking for a list's next page.
func firstPages(file string) ([]string, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		p := sc.Text()
		if u, err := url.Parse(p); err == nil && u.Query().Get("continue") == "" && p != "" {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

func httpClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New(caFile + ": no certificate")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 100}
	return &http.Client{Transport: tr, Timeout: time.Minute}, nil
}

// read issues one request and the continuations of its list.
func (f *floor) read(p string) error {
	for p != "" {
		next, err := f.get(p)
		if err != nil {
			return err
		}
		p = next
	}
	return nil
}

// get issues one GET, decodes a JSON answer into any and returns the request of its next
// page, if it has one.
func (f *floor) get(p string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, f.server+p, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Accept", "application/json, */*")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	f.requests.Add(1)
	cr := &countReader{r: resp.Body}
	defer func() { f.bytes.Add(cr.n) }()
	// A container log is text, whatever its Content-Type says.
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || strings.HasSuffix(req.URL.Path, "/log") {
		_, err := io.Copy(io.Discard, cr)
		return "", err
	}
	var doc any
	if err := json.NewDecoder(cr).Decode(&doc); err != nil {
		return "", fmt.Errorf("GET %s: %w", p, err)
	}
	return nextPage(p, doc), nil
}

// nextPage is p asking for the page after doc, when doc is a Kubernetes list with a
// continue token.
func nextPage(p string, doc any) string {
	m, _ := doc.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	cont, _ := md["continue"].(string)
	if cont == "" {
		return ""
	}
	u, err := url.Parse(p)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Del("resourceVersion")
	q.Del("resourceVersionMatch")
	q.Set("continue", cont)
	u.RawQuery = q.Encode()
	return u.RequestURI()
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += int64(n)
	return n, err
}
