package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// Rancher serves the Kubernetes API of every cluster it manages under
// https://<rancher>/k8s/clusters/<cluster-id>, authenticating the caller with its Rancher
// token and authorising each request as that user in that cluster. The management cluster
// itself is the cluster "local". One Rancher token so reaches the whole fleet the user may
// see: RancherTargets turns it into one Target per cluster.

// RancherClusterPath is the path prefix of Rancher's per-cluster Kubernetes API proxy.
const RancherClusterPath = "/k8s/clusters/"

// RancherLocalCluster is the ID (and name) Rancher gives the management cluster itself.
const RancherLocalCluster = "local"

// SplitRancherServer splits a kubeconfig server URL into Rancher's base URL and the cluster
// ID of a proxied path (https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt →
// https://rancher.example.com, c-m-4x7kq2zt). id is empty when the URL has no such path;
// base is then the URL itself without a trailing slash.
func SplitRancherServer(server string) (base, id string) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return strings.TrimRight(server, "/"), ""
	}
	prefix, rest, ok := strings.Cut(u.Path, RancherClusterPath)
	if !ok {
		u.Path = strings.TrimRight(u.Path, "/")
		u.RawQuery, u.Fragment = "", ""
		return u.String(), ""
	}
	id, _, _ = strings.Cut(rest, "/")
	u.Path, u.RawPath, u.RawQuery, u.Fragment = strings.TrimRight(prefix, "/"), "", "", ""
	return u.String(), id
}

// RancherCluster is one cluster a Rancher token may see.
type RancherCluster struct {
	ID          string // the management.cattle.io Cluster's name: local, c-m-4x7kq2zt
	DisplayName string // spec.displayName, what Rancher's UI and its kubeconfigs call it
}

// Name is the cluster's name in reports: its display name, as Rancher's kubeconfigs and the
// management.cattle.io/cluster-display-name label of its Fleet Cluster call it.
func (c RancherCluster) Name() string {
	if c.DisplayName != "" {
		return c.DisplayName
	}
	return c.ID
}

// ErrNotRancher says a server answered neither of Rancher's cluster lists.
var ErrNotRancher = errors.New("not a Rancher server")

// DiscoverRancherClusters lists the clusters cfg's credentials may see, cfg.Host being
// Rancher's base URL. It asks Rancher's Steve API first (/v1/management.cattle.io.clusters):
// Steve filters the list by what the user may get, so a cluster member who is no
// administrator sees exactly their clusters. Where Steve does not answer, it lists
// management.cattle.io/v3 clusters on the management cluster through the proxy
// (/k8s/clusters/local), which takes the right to list them all (an administrator).
func DiscoverRancherClusters(ctx context.Context, cfg *rest.Config) ([]RancherCluster, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(cfg.Host, "/")
	steve, steveErr := listSteveClusters(ctx, client, base)
	if steveErr == nil {
		return sortClusters(steve), nil
	}
	var se *statusError
	if errors.As(steveErr, &se) && se.code == http.StatusUnauthorized {
		hint := "the token is wrong, expired or revoked"
		if strings.HasPrefix(base, "http://") {
			hint = "client-go sends a kubeconfig's credentials over https only, and this server is http"
		}
		return nil, fmt.Errorf("Rancher at %s refused the credentials (401 Unauthorized): %s", base, hint)
	}
	kube, kubeErr := listKubeClusters(ctx, client, base)
	if kubeErr == nil {
		return sortClusters(kube), nil
	}
	var ke *statusError
	steveMissing := errors.As(steveErr, &se) && se.code == http.StatusNotFound
	kubeMissing := errors.As(kubeErr, &ke) && ke.code == http.StatusNotFound
	if steveMissing && kubeMissing {
		return nil, fmt.Errorf("%s: %w: it serves neither /v1/management.cattle.io.clusters nor %slocal (pass a context or --rancher-url whose server is Rancher's URL, e.g. https://rancher.example.com)", base, ErrNotRancher, RancherClusterPath)
	}
	return nil, fmt.Errorf("listing the clusters Rancher at %s shows this user: %v; and through %slocal: %v", base, steveErr, RancherClusterPath, kubeErr)
}

func sortClusters(cs []RancherCluster) []RancherCluster {
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
	return cs
}

type statusError struct {
	url        string
	code       int
	body       string
	retryAfter time.Duration // what the server asked the client to wait, when it did
}

// retryAfterOf reads a Retry-After header in seconds, else the retryAfterSeconds of a
// Kubernetes Status body.
func retryAfterOf(header string, body []byte) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(header)); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	var st struct {
		Details struct {
			RetryAfterSeconds int `json:"retryAfterSeconds"`
		} `json:"details"`
	}
	if json.Unmarshal(body, &st) == nil && st.Details.RetryAfterSeconds > 0 {
		return time.Duration(st.Details.RetryAfterSeconds) * time.Second
	}
	return 0
}

func (e *statusError) Error() string {
	msg := fmt.Sprintf("GET %s: %d %s", e.url, e.code, http.StatusText(e.code))
	if e.body != "" {
		msg += ": " + e.body
	}
	return msg
}

// getJSON reads one JSON document. Only the path is quoted in errors: a URL never carries
// the token (it travels in the Authorization header), but a query might carry anything.
// An answer asking the client to come back later (429 Too Many Requests, as an API server
// whose storage is (re)initializing gives, or 503 with Retry-After) is retried a few times,
// waiting what it asks for (at most rancherRetryCap each time).
func getJSON(ctx context.Context, client *http.Client, u string, into any) error {
	for attempt := 1; ; attempt++ {
		err := getJSONOnce(ctx, client, u, into)
		wait, again := retryAfter(err)
		if !again || attempt == rancherAttempts {
			return err
		}
		if !sleepCtx(ctx, wait) {
			return err
		}
	}
}

// sleepCtx waits d, or less if ctx ends first (false then).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

const (
	rancherAttempts  = 5
	rancherRetryCap  = 5 * time.Second
	rancherRetryBase = 500 * time.Millisecond
)

// retryAfter says whether err is an answer to retry, and how long to wait first: the
// server's Retry-After (header or Status details), else a short default, capped.
func retryAfter(err error) (time.Duration, bool) {
	var se *statusError
	if !errors.As(err, &se) || (se.code != http.StatusTooManyRequests && se.code != http.StatusServiceUnavailable) {
		return 0, false
	}
	if se.code == http.StatusServiceUnavailable && se.retryAfter == 0 {
		return 0, false // a proxy whose cluster is down: no point in asking again now
	}
	wait := rancherRetryBase
	if se.retryAfter > 0 {
		wait = se.retryAfter
	}
	return min(wait, rancherRetryCap), true
}

func getJSONOnce(ctx context.Context, client *http.Client, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		shown := u
		if p, err := url.Parse(u); err == nil {
			shown = p.Path
		}
		return &statusError{url: shown, code: resp.StatusCode, body: statusMessage(body), retryAfter: retryAfterOf(resp.Header.Get("Retry-After"), body)}
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("GET %s: not the JSON expected: %w", u, err)
	}
	return nil
}

// statusMessage is the message of a Kubernetes Status or Rancher error document, or a short
// head of any other body.
func statusMessage(body []byte) string {
	var s struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &s) == nil && s.Message != "" {
		return s.Message
	}
	t := strings.TrimSpace(string(body))
	if len(t) > 200 {
		t = t[:200] + "…"
	}
	if strings.HasPrefix(t, "<") { // an HTML error page says nothing useful here
		return ""
	}
	return t
}

type clusterObject struct {
	ID       string `json:"id"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		DisplayName string `json:"displayName"`
	} `json:"spec"`
}

func (o clusterObject) cluster() RancherCluster {
	id := o.Metadata.Name
	if id == "" {
		id = o.ID
	}
	return RancherCluster{ID: id, DisplayName: o.Spec.DisplayName}
}

// listSteveClusters reads Steve's collection of management.cattle.io clusters page by page,
// following its continue token (or a pagination "next" link on Rancher's own host).
func listSteveClusters(ctx context.Context, client *http.Client, base string) ([]RancherCluster, error) {
	var out []RancherCluster
	cont, next := "", ""
	for page := 0; page < 10_000; page++ {
		u := base + "/v1/management.cattle.io.clusters?limit=1000"
		switch {
		case cont != "":
			u += "&continue=" + url.QueryEscape(cont)
		case next != "":
			u = next
		}
		var coll struct {
			Type       string          `json:"type"`
			Data       []clusterObject `json:"data"`
			Continue   string          `json:"continue"`
			Pagination struct {
				Next string `json:"next"`
			} `json:"pagination"`
		}
		if err := getJSON(ctx, client, u, &coll); err != nil {
			return nil, err
		}
		if coll.Type != "collection" {
			return nil, &statusError{url: "/v1/management.cattle.io.clusters", code: http.StatusNotFound, body: "not a Steve collection"}
		}
		for _, o := range coll.Data {
			if c := o.cluster(); c.ID != "" {
				out = append(out, c)
			}
		}
		cont, next = coll.Continue, ""
		if cont == "" && coll.Pagination.Next != "" && coll.Pagination.Next != u && sameHost(coll.Pagination.Next, base) {
			next = coll.Pagination.Next
		}
		if cont == "" && next == "" {
			return out, nil
		}
	}
	return nil, errors.New("/v1/management.cattle.io.clusters: too many pages")
}

// listKubeClusters lists management.cattle.io/v3 clusters on the management cluster through
// Rancher's proxy, page by page.
func listKubeClusters(ctx context.Context, client *http.Client, base string) ([]RancherCluster, error) {
	var out []RancherCluster
	cont := ""
	for page := 0; page < 10_000; page++ {
		u := base + RancherClusterPath + RancherLocalCluster + "/apis/management.cattle.io/v3/clusters?limit=500"
		if cont != "" {
			u += "&continue=" + url.QueryEscape(cont)
		}
		var list struct {
			Kind     string          `json:"kind"`
			Items    []clusterObject `json:"items"`
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		if err := getJSON(ctx, client, u, &list); err != nil {
			return nil, err
		}
		if list.Kind != "ClusterList" {
			return nil, &statusError{url: RancherClusterPath + "local/apis/management.cattle.io/v3/clusters", code: http.StatusNotFound, body: "not a ClusterList"}
		}
		for _, o := range list.Items {
			if c := o.cluster(); c.ID != "" {
				out = append(out, c)
			}
		}
		if cont = list.Metadata.Continue; cont == "" {
			return out, nil
		}
	}
	return nil, errors.New("management.cattle.io/v3 clusters: too many pages")
}

// RancherTargets makes one Target per cluster, each reading the cluster through Rancher's
// proxy at base with cfg's credentials (TLS, token, impersonation and timeouts as given).
// Each target is named by the cluster's display name (with its ID when two clusters share a
// display name). aimAt says which kubeconfig context printed commands about a cluster use,
// and whether they need --server with it (no context of the kubeconfig reaches that cluster).
func RancherTargets(cfg *rest.Config, base string, clusters []RancherCluster, aimAt func(RancherCluster) (context, server string)) []Target {
	seen := map[string]int{}
	for _, c := range clusters {
		seen[c.Name()]++
	}
	out := make([]Target, 0, len(clusters))
	for _, c := range clusters {
		name := c.Name()
		if seen[name] > 1 && name != c.ID {
			name += " (" + c.ID + ")"
		}
		cc := rest.CopyConfig(cfg)
		cc.Host = strings.TrimRight(base, "/") + RancherClusterPath + c.ID
		t := Target{Name: name, Server: cc.Host, Config: cc, ViaRancher: true}
		if aimAt != nil {
			t.Context, t.ContextServer = aimAt(c)
		}
		out = append(out, t)
	}
	return out
}

// RancherHint is rancherHint for the watches of serve, which read a cluster their own way.
func RancherHint(t Target, err error) string { return rancherHint(t, err) }

// rancherHint explains a failure to reach a cluster through Rancher's proxy: Rancher answers
// 502, 503 or 504 when it cannot reach the cluster (its cluster agent is disconnected or its
// API server is down), 403 when the user is no member of it.
func rancherHint(t Target, err error) string {
	if !t.ViaRancher {
		return ""
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return ""
	}
	switch code := se.Status().Code; {
	case code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		return fmt.Sprintf(" (Rancher answered %d: it cannot reach the cluster — its cluster agent may be disconnected or its API server down; Rancher's cluster status says which)", code)
	case code == http.StatusForbidden:
		return " (Rancher answered 403: the user may not read this cluster)"
	}
	return ""
}

// sameHost says whether link points at base's scheme and host: the token goes nowhere else.
func sameHost(link, base string) bool {
	l, err1 := url.Parse(link)
	b, err2 := url.Parse(base)
	return err1 == nil && err2 == nil && l.Scheme == b.Scheme && l.Host == b.Host
}
