package source

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestSplitRancherServer(t *testing.T) {
	cases := []struct{ server, base, id string }{
		{"https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt", "https://rancher.example.com", "c-m-4x7kq2zt"},
		{"https://rancher.example.com/k8s/clusters/local/", "https://rancher.example.com", "local"},
		{"https://example.com/rancher/k8s/clusters/c-abcde", "https://example.com/rancher", "c-abcde"},
		{"https://rancher.example.com/", "https://rancher.example.com", ""},
		{"https://10.20.0.11:6443", "https://10.20.0.11:6443", ""},
	}
	for _, c := range cases {
		if base, id := SplitRancherServer(c.server); base != c.base || id != c.id {
			t.Errorf("SplitRancherServer(%q) = %q, %q; want %q, %q", c.server, base, id, c.base, c.id)
		}
	}
}

// Targets are named by display name, with the ID when two clusters share one, and each reads
// its cluster's proxy path with a copy of the credentials.
func TestRancherTargetsNamesAndServers(t *testing.T) {
	cfg := &rest.Config{Host: "https://rancher.example.com", BearerToken: "t"}
	ts := RancherTargets(cfg, "https://rancher.example.com/", []RancherCluster{
		{ID: "local", DisplayName: "local"}, {ID: "c-m-1", DisplayName: "prod"}, {ID: "c-m-2", DisplayName: "prod"}, {ID: "c-m-3"},
	}, func(c RancherCluster) (string, string) { return "rancher", "s-" + c.ID })
	var got []string
	for _, tg := range ts {
		got = append(got, tg.Name+" "+tg.Server+" "+tg.Config.Host+" "+tg.Context+" "+tg.ContextServer)
		if tg.Config == cfg || tg.Config.BearerToken != "t" || !tg.ViaRancher {
			t.Errorf("%s: want a copy of the credentials, read through Rancher", tg.Name)
		}
	}
	want := []string{
		"local https://rancher.example.com/k8s/clusters/local https://rancher.example.com/k8s/clusters/local rancher s-local",
		"prod (c-m-1) https://rancher.example.com/k8s/clusters/c-m-1 https://rancher.example.com/k8s/clusters/c-m-1 rancher s-c-m-1",
		"prod (c-m-2) https://rancher.example.com/k8s/clusters/c-m-2 https://rancher.example.com/k8s/clusters/c-m-2 rancher s-c-m-2",
		"c-m-3 https://rancher.example.com/k8s/clusters/c-m-3 https://rancher.example.com/k8s/clusters/c-m-3 rancher s-c-m-3",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("targets:\n%q\nwant\n%q", got, want)
	}
}

// Steve's list is read page by page (continue token, or a pagination link on Rancher's own
// host); a link to another host is not followed, so the token goes nowhere else.
func TestDiscoverRancherClustersPages(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch q := r.URL.Query(); {
		case q.Get("page") == "3":
			fmt.Fprint(w, `{"type":"collection","pagination":{"next":"https://elsewhere.example.com/v1/x"},"data":[{"id":"local","metadata":{"name":"local"},"spec":{"displayName":"local"}}]}`)
		case r.URL.Path == "/v1/management.cattle.io.clusters" && q.Get("continue") == "":
			fmt.Fprint(w, `{"type":"collection","continue":"p2","data":[{"id":"c-m-1","metadata":{"name":"c-m-1"},"spec":{"displayName":"one"}}]}`)
		case r.URL.Path == "/v1/management.cattle.io.clusters" && q.Get("continue") == "p2":
			fmt.Fprintf(w, `{"type":"collection","pagination":{"next":"%s/v1/management.cattle.io.clusters?page=3"},"data":[{"id":"c-m-2","metadata":{"name":"c-m-2"},"spec":{"displayName":"two"}}]}`, srv.URL)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, BearerToken: "tok", TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
	cs, err := DiscoverRancherClusters(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := []RancherCluster{{ID: "c-m-1", DisplayName: "one"}, {ID: "c-m-2", DisplayName: "two"}, {ID: "local", DisplayName: "local"}}
	if !reflect.DeepEqual(cs, want) {
		t.Errorf("clusters %+v, want %+v", cs, want)
	}
	cfg.BearerToken = "bogus-x9q"
	if _, err := DiscoverRancherClusters(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "bogus-x9q") {
		t.Errorf("a wrong token: %v; want the 401 named and the token not", err)
	}
}

// A server asking the client to come back later — the 429 "storage is (re)initializing" a
// kube-apiserver answers while its watch cache starts (seen behind Rancher's proxy on a
// just-started management cluster; a real server gives it only in that instant, so this test
// serves it) — is asked again after the wait it names; an nginx 503 without Retry-After (no
// Rancher pod ready) is not retried.
func TestDiscoverRancherClustersWaitsWhenAskedTo(t *testing.T) {
	var calls int
	status := http.StatusTooManyRequests
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls <= 2 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			if status == http.StatusTooManyRequests {
				fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"storage is (re)initializing","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`)
			}
			return
		}
		fmt.Fprint(w, `{"type":"collection","data":[{"id":"c-m-1","metadata":{"name":"c-m-1"},"spec":{"displayName":"one"}}]}`)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, BearerToken: "tok", TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
	cs, err := DiscoverRancherClusters(t.Context(), cfg)
	if err != nil || len(cs) != 1 || calls != 3 {
		t.Fatalf("after two 429s: clusters %+v, err %v, %d requests; want the list on the third", cs, err, calls)
	}
	calls, status = 0, http.StatusServiceUnavailable
	if _, err := DiscoverRancherClusters(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("503 without Retry-After: %v; want the 503 named", err)
	}
	if calls != 2 { // Steve's list and the management clusters on local, once each
		t.Errorf("503 without Retry-After: %d requests, want 2 (no retry)", calls)
	}
}
