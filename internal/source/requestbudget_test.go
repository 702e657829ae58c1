package source

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// The budget's limit holds across clients of many configs, and an open watch takes no slot:
// serve keeps dozens of watches open per cluster and must still list. A plain HTTP server
// stands in for Rancher here because only the count of requests at once matters; the e2e
// test TestRancherFleetScale checks the same limit through the Rancher stand-in.
func TestRequestBudgetBoundsRequestsAcrossConfigs(t *testing.T) {
	var inFlight, most atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		inFlight.Add(-1)
		_, _ = io.WriteString(w, `{"kind":"List","items":[]}`)
	}))
	defer srv.Close()
	b := NewRequestBudget(3, 0)
	client := func() *http.Client {
		cfg := &rest.Config{Host: srv.URL}
		b.Apply(cfg)
		c, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Two watches, held open: were they counted, three slots would leave one for the lists.
	for range 2 {
		resp, err := client().Get(srv.URL + "/api/v1/pods?watch=true")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
	}
	var wg sync.WaitGroup
	for range 8 { // eight clusters' clients
		c := client()
		for range 4 {
			wg.Go(func() {
				resp, err := c.Get(srv.URL + "/api/v1/pods")
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			})
		}
	}
	wg.Wait()
	if got := most.Load(); got != 3 {
		t.Errorf("at most %d lists at once; the budget allows 3 and 32 were asked for", got)
	}
}
