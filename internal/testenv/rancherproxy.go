package testenv

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// RancherStandIn is a stand-in for Rancher in tests: Rancher itself cannot run here. It
// does the part of Rancher that unstick's --rancher relies on, and nothing else:
//
//   - https://<it>/k8s/clusters/<id>/… is passed to that cluster's real test API server
//     (through whatever handler the test mounts, e.g. the log proxy), after checking the
//     bearer token as Rancher does: 401 for a token it does not know, 403 for a cluster
//     the token's user is not a member of, 404 for a cluster that does not exist. The
//     caller's Authorization header is not passed on (Rancher talks to the downstream
//     cluster with its own credentials, impersonating the user).
//   - https://<it>/v1/management.cattle.io.clusters answers Steve's collection of the
//     management.cattle.io clusters of the cluster "local", holding only those the token
//     may see, as Steve filters a list by the caller's access. DisableSteve turns it off
//     (an older Rancher, or a proxy in front of it, without Steve).
//     Clusters added with ListCluster are listed by the stand-in itself, page by page, for
//     a fleet whose management cluster is not replayed (a member of many downstream
//     clusters who may not see local, as Steve shows it to such a user).
//
// It counts what reaches it (Stats): requests and bytes per cluster, requests in flight at
// once (the most seen) and open watches.
//
// It serves TLS with its own certificate (CAData) as Rancher does.
type RancherStandIn struct {
	srv *httptest.Server

	mu       sync.Mutex
	clusters map[string]http.Handler
	tokens   map[string]map[string]bool
	noSteve  bool
	listFail int            // the status both cluster lists answer; 0: they answer
	requests map[string]int // by cluster ID, for tests that count
	listed   []listedCluster
	counts   counts
}

// NewRancherStandIn starts the stand-in; Close stops it.
func NewRancherStandIn() *RancherStandIn {
	r := &RancherStandIn{clusters: map[string]http.Handler{}, tokens: map[string]map[string]bool{}, requests: map[string]int{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	return r
}

// URL is the stand-in's base URL (Rancher's server-url).
func (r *RancherStandIn) URL() string { return r.srv.URL }

// CAData is the PEM of the certificate the stand-in serves, for a kubeconfig.
func (r *RancherStandIn) CAData() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

// Close stops the stand-in.
func (r *RancherStandIn) Close() { r.srv.Close() }

// AddCluster serves cluster id (its API at the handler's root) under /k8s/clusters/<id>.
func (r *RancherStandIn) AddCluster(id string, h http.Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clusters[id] = h
}

// AddDownCluster adds cluster id whose API server refuses connections: Rancher answers 502.
func (r *RancherStandIn) AddDownCluster(id string) error {
	h, err := UnreachableCluster(id)
	if err != nil {
		return err
	}
	r.AddCluster(id, h)
	return nil
}

// UnreachableCluster is cluster id as Rancher answers for it when its API server refuses
// connections: 502.
func UnreachableCluster(id string) (http.Handler, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there any more: connections are refused
	target, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		status(w, http.StatusBadGateway, "ServiceUnavailable", fmt.Sprintf("cluster %s: %v", id, err))
	}
	return rp, nil
}

// Allow lets token see clusters ids (and only those).
func (r *RancherStandIn) Allow(token string, ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tokens[token] == nil {
		r.tokens[token] = map[string]bool{}
	}
	for _, id := range ids {
		r.tokens[token][id] = true
	}
}

// DisableSteve makes /v1/… answer 404.
func (r *RancherStandIn) DisableSteve() { r.mu.Lock(); r.noSteve = true; r.mu.Unlock() }

// FailClusterList makes both cluster lists (Steve's and the management clusters on local)
// answer code, as the nginx ingress in front of Rancher does while no Rancher pod is ready (503); 0 restores
// them. The proxied cluster APIs keep answering.
func (r *RancherStandIn) FailClusterList(code int) { r.mu.Lock(); r.listFail = code; r.mu.Unlock() }

// Requests is how many requests reached cluster id.
func (r *RancherStandIn) Requests(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[id]
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "reason": reason, "code": code})
	_, _ = w.Write(b)
}

func (r *RancherStandIn) serve(w http.ResponseWriter, req *http.Request) {
	done := r.counts.begin(req)
	cw := &countingWriter{ResponseWriter: w}
	// Deferred: the reverse proxy panics (http.ErrAbortHandler) when the client goes away
	// in the middle of an answer, and the request must still leave the count.
	defer func() { done(proxiedCluster(req.URL.Path), cw.n) }()
	r.route(cw, req)
}

// proxiedCluster is the cluster ID of a /k8s/clusters/<id>/… path, or "".
func proxiedCluster(path string) string {
	rest, ok := strings.CutPrefix(path, "/k8s/clusters/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}

// route answers req.
func (r *RancherStandIn) route(w http.ResponseWriter, req *http.Request) {
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	r.mu.Lock()
	visible, known := r.tokens[token]
	noSteve, listFail := r.noSteve, r.listFail
	r.mu.Unlock()
	if !ok || !known {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"type":"error","status":"401","message":"must authenticate"}`))
		return
	}
	if listFail != 0 && (req.URL.Path == "/v1/management.cattle.io.clusters" || strings.HasPrefix(req.URL.Path, "/k8s/clusters/local/apis/management.cattle.io/v3/clusters")) {
		// What the nginx ingress in front of Rancher answers when no Rancher pod is ready.
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(listFail)
		title := fmt.Sprintf("%d %s", listFail, http.StatusText(listFail))
		_, _ = fmt.Fprintf(w, "<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n<center><h1>%s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", title, title)
		return
	}
	if req.URL.Path == "/v1/management.cattle.io.clusters" && !noSteve {
		r.steveClusters(w, req, visible)
		return
	}
	rest, ok := strings.CutPrefix(req.URL.Path, "/k8s/clusters/")
	if !ok {
		status(w, http.StatusNotFound, "NotFound", "404 page not found")
		return
	}
	id, path, _ := strings.Cut(rest, "/")
	r.mu.Lock()
	h := r.clusters[id]
	r.requests[id]++
	r.mu.Unlock()
	switch {
	case h == nil:
		status(w, http.StatusNotFound, "NotFound", fmt.Sprintf("clusters.management.cattle.io %q not found", id))
		return
	case !visible[id]:
		status(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("clusters.management.cattle.io %q is forbidden: the user may not get it", id))
		return
	}
	out := req.Clone(req.Context())
	out.Header.Del("Authorization")
	out.URL.Path = "/" + path
	out.URL.RawPath = ""
	out.RequestURI = ""
	h.ServeHTTP(w, out)
}

// steveClusters lists the management.cattle.io clusters of "local" the token may see.
func (r *RancherStandIn) steveClusters(w http.ResponseWriter, req *http.Request, visible map[string]bool) {
	r.mu.Lock()
	local := r.clusters["local"]
	listed := len(r.listed) > 0
	r.mu.Unlock()
	if local == nil && listed {
		r.steveListed(w, req, visible)
		return
	}
	if local == nil {
		status(w, http.StatusInternalServerError, "InternalError", "no local cluster")
		return
	}
	rec := httptest.NewRecorder()
	local.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/apis/management.cattle.io/v3/clusters", nil))
	if rec.Code != http.StatusOK {
		status(w, rec.Code, "InternalError", "listing clusters on local: "+rec.Body.String())
		return
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		status(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	data := []map[string]any{}
	for _, it := range list.Items {
		md, _ := it["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if !visible[name] {
			continue
		}
		it["id"], it["type"] = name, "management.cattle.io.cluster"
		data = append(data, it)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "collection", "resourceType": "management.cattle.io.cluster", "count": len(data), "data": data})
}
