package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A fleet-scale bed for the Rancher path: the stand-in lists N cluster IDs itself
// (ListCluster) and routes each to one of a few real API servers, so that a run through it
// reads N downstream clusters while the machine runs only a few. Every ID is read through
// the proxy as its own cluster (its own requests, answers and report entry); IDs routed to
// one server hold the same objects.

type listedCluster struct{ id, display string }

// ListCluster serves cluster id (its API at h's root) under /k8s/clusters/<id> and lists it,
// displayed as display, in Steve's collection of management.cattle.io clusters.
func (r *RancherStandIn) ListCluster(id, display string, h http.Handler) {
	r.AddCluster(id, h)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listed = append(r.listed, listedCluster{id: id, display: display})
}

// HangingCluster is an API server that accepts requests and never answers: each request
// waits until its caller gives up (a cluster whose agent's tunnel is stuck).
func HangingCluster() http.Handler {
	return http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) { <-req.Context().Done() })
}

// steveListed answers Steve's collection from the listed clusters the token may see, in
// pages of ?limit= (default 1000) linked by a continue token, as Steve pages.
func (r *RancherStandIn) steveListed(w http.ResponseWriter, req *http.Request, visible map[string]bool) {
	r.mu.Lock()
	var all []listedCluster
	for _, c := range r.listed {
		if visible[c.id] {
			all = append(all, c)
		}
	}
	r.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	limit, from := 1000, 0
	if n, err := strconv.Atoi(req.URL.Query().Get("limit")); err == nil && n > 0 {
		limit = n
	}
	if n, err := strconv.Atoi(req.URL.Query().Get("continue")); err == nil && n > 0 && n <= len(all) {
		from = n
	}
	to := min(from+limit, len(all))
	data := make([]map[string]any, 0, to-from)
	for _, c := range all[from:to] {
		data = append(data, map[string]any{
			"id": c.id, "type": "management.cattle.io.cluster",
			"apiVersion": "management.cattle.io/v3", "kind": "Cluster",
			"metadata": map[string]any{"name": c.id},
			"spec":     map[string]any{"displayName": c.display},
		})
	}
	coll := map[string]any{"type": "collection", "resourceType": "management.cattle.io.cluster", "count": len(all), "data": data}
	if to < len(all) {
		coll["continue"] = strconv.Itoa(to)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(coll)
}

// StandInStats is what reached the stand-in.
type StandInStats struct {
	Requests    int64 // every request, watches included
	Watches     int64 // watch requests
	MaxInFlight int64 // the most requests other than watches answered at once
	OpenWatches int64 // watches open now
	MaxWatches  int64 // the most watches open at once
	Bytes       int64 // bytes of answers, watches' included
	// Busy is the sum over time of the requests other than watches being answered (request ×
	// seconds) from the first such request to the last answer (Span): Busy / Span is how many
	// were in flight on average, how well a client kept its slots full.
	Busy, Span time.Duration
	// PerCluster are the requests and bytes of each cluster ID.
	PerCluster map[string]ClusterStats
}

// ClusterStats is what one cluster ID's proxy path carried.
type ClusterStats struct{ Requests, Bytes int64 }

// Stats is what reached the stand-in so far.
func (r *RancherStandIn) Stats() StandInStats { return r.counts.stats() }

// ResetStats forgets what was counted (between runs of a benchmark).
func (r *RancherStandIn) ResetStats() { r.counts.reset() }

// InFlight is how many requests other than watches are being answered now.
func (r *RancherStandIn) InFlight() int64 {
	r.counts.mu.Lock()
	defer r.counts.mu.Unlock()
	return r.counts.inFlight
}

type counts struct {
	mu       sync.Mutex
	inFlight int64
	// first is when the first request other than a watch arrived since the counts were
	// reset, last when inFlight last changed.
	first, last time.Time
	s           StandInStats
	// record, when set, keeps the path and query of every request other than a watch.
	record bool
	paths  []string
}

// RecordRequests starts keeping the path and query of every request other than a watch,
// forgetting those kept before (the request list a floor program replays).
func (r *RancherStandIn) RecordRequests() {
	r.counts.mu.Lock()
	defer r.counts.mu.Unlock()
	r.counts.record, r.counts.paths = true, nil
}

// Recorded stops recording and returns what was recorded, in the order it arrived.
func (r *RancherStandIn) Recorded() []string {
	r.counts.mu.Lock()
	defer r.counts.mu.Unlock()
	r.counts.record = false
	return r.counts.paths
}

// begin counts a request arriving; the function it returns counts it answered, for cluster
// id with n bytes.
func (c *counts) begin(req *http.Request) func(id string, n int64) {
	w := req.URL.Query().Get("watch")
	watch := w == "true" || w == "1"
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s.Requests++
	if watch {
		c.s.Watches++
		c.s.OpenWatches++
		c.s.MaxWatches = max(c.s.MaxWatches, c.s.OpenWatches)
	} else {
		c.tick()
		c.inFlight++
		c.s.MaxInFlight = max(c.s.MaxInFlight, c.inFlight)
		if c.record {
			c.paths = append(c.paths, req.URL.RequestURI())
		}
	}
	return func(id string, n int64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if watch {
			c.s.OpenWatches--
		} else {
			c.tick()
			c.inFlight--
		}
		c.s.Bytes += n
		if id == "" {
			return
		}
		if c.s.PerCluster == nil {
			c.s.PerCluster = map[string]ClusterStats{}
		}
		pc := c.s.PerCluster[id]
		pc.Requests++
		pc.Bytes += n
		c.s.PerCluster[id] = pc
	}
}

// tick adds the time since the last change of inFlight to Busy; c.mu is held.
func (c *counts) tick() {
	now := time.Now()
	if c.first.IsZero() {
		c.first, c.last = now, now
	}
	c.s.Busy += time.Duration(c.inFlight) * now.Sub(c.last)
	c.last = now
	c.s.Span = now.Sub(c.first)
}

func (c *counts) stats() StandInStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.s
	s.PerCluster = make(map[string]ClusterStats, len(c.s.PerCluster))
	for id, pc := range c.s.PerCluster {
		s.PerCluster[id] = pc
	}
	return s
}

func (c *counts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.s = StandInStats{OpenWatches: c.s.OpenWatches, MaxWatches: c.s.OpenWatches, MaxInFlight: c.inFlight}
	c.first, c.last = time.Time{}, time.Time{}
}

// countingWriter counts the bytes of an answer and passes flushes on (a watch streams).
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// RancherBed is a stand-in listing N downstream cluster IDs, routed round-robin to a few
// real API servers each holding one replayed cluster of a bundle.
type RancherBed struct {
	StandIn *RancherStandIn
	// Token is the bearer token that may see every listed cluster.
	Token string
	// IDs are the listed cluster IDs, in order; IDs[i] is routed to Servers[i%len(Servers)].
	IDs []string
	// Names are the IDs' display names (their names in reports), in the same order.
	Names   []string
	Servers []*Env
	// Shapes names the bundle cluster each server holds.
	Shapes []string
}

// BedToken is the token of a RancherBed's user (a member of every listed cluster).
const BedToken = "token-bed01:fleet-scale-bed"

// StartRancherBed replays each of clusters (names of bundle's clusters) into its own API
// server under root, behind the log proxy, and lists n cluster IDs (c-m-00000001, …),
// displayed as <shape>-<i>, routed round-robin to them. Stop ends it.
func StartRancherBed(ctx context.Context, root, bundle string, clusters []string, n int) (*RancherBed, error) {
	b := &RancherBed{StandIn: NewRancherStandIn(), Token: BedToken, Shapes: clusters}
	handlers, err := b.startServers(ctx, root, bundle)
	if err != nil {
		b.Stop()
		return nil, err
	}
	for i := range n {
		id := fmt.Sprintf("c-m-%08d", i+1)
		k := i % len(clusters)
		name := fmt.Sprintf("%s-%04d", clusters[k], i+1)
		b.StandIn.ListCluster(id, name, handlers[k])
		b.IDs, b.Names = append(b.IDs, id), append(b.Names, name)
	}
	b.StandIn.Allow(b.Token, b.IDs...)
	return b, nil
}

// startServers starts and fills the servers in parallel.
func (b *RancherBed) startServers(ctx context.Context, root, bundle string) ([]http.Handler, error) {
	b.Servers = make([]*Env, len(b.Shapes))
	handlers := make([]http.Handler, len(b.Shapes))
	errs := make([]error, len(b.Shapes))
	var wg sync.WaitGroup
	for i, name := range b.Shapes {
		wg.Go(func() {
			handlers[i], errs[i] = b.startServer(ctx, i, filepath.Join(root, fmt.Sprintf("%s-%d", name, i)), bundle, name)
		})
	}
	wg.Wait()
	return handlers, errors.Join(errs...)
}

func (b *RancherBed) startServer(ctx context.Context, i int, dir, bundle, name string) (http.Handler, error) {
	env, err := StartProcess(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	b.Servers[i] = env
	if _, err := Load(ctx, env.Config, bundle, LoadOptions{Cluster: name}); err != nil {
		return nil, fmt.Errorf("replaying %s: %w", name, err)
	}
	logs := dir + "-logs"
	if _, err := CopyLogs(bundle, name, logs); err != nil {
		return nil, err
	}
	return LogProxy(env.Config, logs)
}

// Kubeconfig writes a kubeconfig at path whose one context, "rancher", is the stand-in with
// the bed's token (as Rancher's generated kubeconfigs name it).
func (b *RancherBed) Kubeconfig(path string) error { return b.KubeconfigWithToken(path, b.Token) }

// KubeconfigWithToken is Kubeconfig with another token (one Allow let see fewer clusters).
func (b *RancherBed) KubeconfigWithToken(path, token string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["rancher"] = &clientcmdapi.Cluster{Server: b.StandIn.URL(), CertificateAuthorityData: b.StandIn.CAData()}
	kc.AuthInfos["rancher"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["rancher"] = &clientcmdapi.Context{Cluster: "rancher", AuthInfo: "rancher"}
	kc.CurrentContext = "rancher"
	return clientcmd.WriteToFile(*kc, path)
}

// Stop stops the stand-in and the servers.
func (b *RancherBed) Stop() error {
	b.StandIn.Close()
	var errs []error
	for _, e := range b.Servers {
		if e != nil {
			errs = append(errs, e.Stop())
		}
	}
	return errors.Join(errs...)
}
