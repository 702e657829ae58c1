package serve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/unstick-dev/unstick/internal/source"
)

// DefaultPollInterval is how often the kinds serve does not watch are listed again.
const DefaultPollInterval = 5 * time.Minute

// watchedKind says whether serve may keep a watch open on a kind, or lists it every
// PollInterval from the watch cache. Every watch is a request held open through Rancher's
// proxy for as long as serve runs (over HTTP/1.1 one connection each), and a shared informer
// cost about a dozen goroutines and 140 KiB: at 35 kinds a cluster, 1,000 downstream clusters
// wanted 35,000 connections (past the process's 20,000 open files) and never became ready.
// So only the kinds that hold the state an upgrade gets stuck in are watched, where a change
// is the failure to report within seconds: Helm release Secrets, pods, nodes, Jobs and
// workloads, SUC Plans, Fleet's and Rancher's clusters and deployments; and each only once a
// poll has found objects of it in the cluster (a downstream cluster holds no Fleet or
// provisioning objects). The others (CRDs, Events, ConfigMaps, quotas, webhooks, snapshots,
// the namespaces themselves) give context to a finding, rarely change on their own, and are
// polled.
func watchedKind(gvr schema.GroupVersionResource) bool {
	switch gvr.Group + "/" + gvr.Resource {
	case "/secrets", "/pods", "/nodes",
		"batch/jobs", "apps/deployments", "apps/daemonsets", "apps/statefulsets",
		"upgrade.cattle.io/plans",
		"fleet.cattle.io/bundledeployments", "fleet.cattle.io/bundles", "fleet.cattle.io/clusters",
		"fleet.cattle.io/gitrepos", "fleet.cattle.io/helmops",
		"provisioning.cattle.io/clusters", "management.cattle.io/clusters", "rke.cattle.io/rkecontrolplanes",
		"cluster.x-k8s.io/machines":
		return true
	}
	return false
}

// polledKind is one kind listed every PollInterval; it stands where an informer would
// (HasSynced, GetStore), so feed reads both alike.
type polledKind struct {
	res       source.Resource
	ns        string
	keep      func(string) bool
	store     cache.Store
	listed    atomic.Bool
	forbidden *atomic.Pointer[string]
	// watchable kinds are watched from the first poll that finds objects of them (watched).
	watchable bool
	watched   bool
	// versions are the resource versions of the kept objects of the last list: a poll that
	// finds them changed wakes an evaluation.
	versions map[string]string
}

func (p *polledKind) HasSynced() bool       { return p.listed.Load() }
func (p *polledKind) GetStore() cache.Store { return p.store }

// pollResource prepares the polling of res in ns (keep as for startWatch); pollLoop
// lists it.
func (w *clusterWatch) pollResource(res source.Resource, ns string, keep func(string) bool) *polledKind {
	p := &polledKind{res: res, ns: ns, keep: keep, store: cache.NewStore(cache.MetaNamespaceKeyFunc), forbidden: &atomic.Pointer[string]{}}
	w.polls = append(w.polls, p)
	return p
}

// pollLoop lists every polled kind now, again after a random part of PollInterval, and then
// every PollInterval (±10 %) until ctx ends: clusters started together spread their polls
// over the interval rather than polling together (at 1,000 clusters they kept the
// fleet's --max-inflight full for the first minute of each round). A kind whose first list
// failed (the server unreachable, answering 5xx, cutting the body) is listed again within
// seconds, backing off to 30 s, not at the next round: until every kind is listed once serve
// is not ready, and waiting a whole interval would keep it so for minutes after the server
// came back.
func (w *clusterWatch) pollLoop(ctx context.Context, polls []*polledKind) {
	next := time.Now()
	first := true
	retry := time.Second
	for {
		full := !time.Now().Before(next)
		changed := false
		for _, p := range polls {
			if !p.watched && (full || p.unlisted()) {
				changed = w.pollOnce(ctx, p) || changed
			}
		}
		if full {
			next = time.Now().Add(w.nextRound(first))
			first = false
		}
		if changed {
			w.onChange()
		}
		wait := time.Until(next)
		if slices.ContainsFunc(polls, (*polledKind).unlisted) {
			wait = min(wait, retry)
			retry = min(2*retry, 30*time.Second)
		} else {
			retry = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// nextRound is the wait before the next full round of polls: a random part of the interval
// after the first, the interval ±10 % after the others.
func (w *clusterWatch) nextRound(first bool) time.Duration {
	if first {
		return time.Duration(rand.Int64N(int64(w.pollEvery) + 1))
	}
	return w.pollEvery + time.Duration(rand.Int64N(int64(w.pollEvery/5)+1)) - w.pollEvery/10
}

// unlisted says the kind's first list has not succeeded yet, and was not refused.
func (p *polledKind) unlisted() bool {
	return !p.watched && !p.listed.Load() && p.forbidden.Load() == nil
}

// pollOnce lists one polled kind from the watch cache and replaces its store; it reports
// whether a kept object changed. A refused list is reported as an informer's would be; any
// other failure keeps the last list until the next poll.
func (w *clusterWatch) pollOnce(ctx context.Context, p *polledKind) bool {
	var list *cachedList
	err := source.RetryRead(ctx, func() (err error) {
		list, err = w.listCompacted(ctx, p.res, p.ns, p.keep, "0")
		return err
	})
	if err != nil {
		if apierrors.IsForbidden(err) && !p.listed.Load() {
			p.forbidden.Store(forbiddenMessage(p.res, p.ns))
			return true
		}
		return false
	}
	items := make([]any, 0, len(list.Items))
	versions := map[string]string{}
	for _, it := range list.Items {
		items = append(items, it)
		if it.kept() {
			versions[it.namespace+"/"+it.name] = it.resourceVersion
		}
	}
	_ = p.store.Replace(items, list.ResourceVersion)
	changed := !p.listed.Load() || !sameVersions(p.versions, versions)
	p.versions = versions
	p.listed.Store(true)
	if p.watchable && len(versions) > 0 {
		w.watchFrom(ctx, p, list)
	}
	return changed
}

// watchFrom turns a polled kind that holds objects into a watched one, going on from list.
func (w *clusterWatch) watchFrom(ctx context.Context, p *polledKind, list *cachedList) {
	k := w.startWatch(ctx, p.res, p.ns, p.keep, list, p.forbidden)
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.informers {
		if w.informers[i].inf == kindCache(p) {
			w.informers[i].inf = k
		}
	}
	p.watched = true
}

func sameVersions(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// forbiddenMessage is the error reported for a kind whose list the server refused.
func forbiddenMessage(res source.Resource, ns string) *string {
	where := "all namespaces"
	if res.ClusterScoped {
		where = "cluster scope"
	} else if ns != "" {
		where = "namespace " + ns
	}
	msg := fmt.Sprintf("forbidden: cannot list %s in %s (grant it with deploy/rbac/scan.yaml); checks that need them judged without them", res.GVR.Resource, where)
	return &msg
}

// listOptions are a list's options: resourceVersion "0" reads the first page from the
// watch cache (polls), "" from etcd (an informer's first list, which its watch continues).
func listOptions(selector, fieldSelector, rv string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: selector, FieldSelector: fieldSelector, ResourceVersion: rv, Limit: 500}
}
