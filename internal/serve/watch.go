package serve

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// wellKnownNamespaces are watched when the namespaces themselves cannot be listed.
var wellKnownNamespaces = []string{"cattle-fleet-system", "cattle-fleet-local-system", "cattle-system", "system-upgrade", "kube-system"}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// clusterWatch keeps informer caches of one cluster: exactly the kinds of the live scan's
// resource table (source.Resources), the namespaced ones only in the watched namespaces, each
// object trimmed of managedFields before it is stored.
type clusterWatch struct {
	t         source.Target
	resync    time.Duration
	pollEvery time.Duration
	onChange  func()

	dyn    dynamic.Interface
	meta   metadata.Interface
	served map[schema.GroupVersionResource]bool
	// static are the problems found at start (kinds not served, namespaces forbidden); they
	// are reported with every evaluation, as a scan would report them.
	static []finding.ScanError

	mu        sync.Mutex
	informers []watched
	nsStarted map[string]bool
	nsInf     kindCache // nil when namespaces are forbidden
	stop      <-chan struct{}
	// polls are every kind followed: listed every pollEvery until watched (watchedKind).
	polls []*polledKind

	counts   crdCounts // objects of the CRDs with stored versions to migrate
	nodePods nodePods  // pods on cordoned nodes outside the watched namespaces
	logs     *podLogs  // the container logs the checks read, kept between evaluations
}

type watched struct {
	res source.Resource
	ns  string
	inf kindCache
	// forbidden holds the message of a list the server refused (RBAC); it is reported while
	// the informer has not synced. Such an informer would never sync, and serve must not wait on it forever — a scan
	// reports the missing permission and goes on, and so does serve.
	forbidden *atomic.Pointer[string]
}

// kindCache is a kind's objects as serve keeps them: a watch's, or a polled list's.
type kindCache interface {
	HasSynced() bool
	GetStore() cache.Store
}

// done reports whether the informer has listed, or was refused and says so.
func (x watched) done() bool { return x.inf.HasSynced() || x.forbidden.Load() != nil }

// newClusterWatch prepares the watch of one cluster; logs says how its container logs are
// read, pollEvery how often the kinds not watched are listed.
func newClusterWatch(t source.Target, resync, pollEvery time.Duration, logs logReading, onChange func()) (*clusterWatch, error) {
	cfg := t.ClientConfig()
	// A watch is long-lived: the scan's overall timeout must not cut it.
	cfg.Timeout = 0
	w := &clusterWatch{t: t, resync: resync, pollEvery: pollEvery, onChange: onChange, nsStarted: map[string]bool{}}
	var err error
	if w.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Label(), err)
	}
	if w.meta, err = metadata.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", t.Label(), err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Label(), err)
	}
	w.logs = newPodLogs(kube.CoreV1(), logs)
	return w, nil
}

// start discovers what the server serves and starts the informers; they run until ctx ends.
func (w *clusterWatch) start(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(w.t.ClientConfig())
	if err != nil {
		return fmt.Errorf("%s: %w", w.t.Label(), err)
	}
	// A transient failure at start must not leave a cluster unwatched until serve restarts.
	var lists []*metav1.APIResourceList
	_ = source.RetryRead(ctx, func() error {
		_, lists, err = dc.ServerGroupsAndResources()
		return err
	})
	if err != nil && len(lists) == 0 {
		return fmt.Errorf("%s: cannot reach the API server %s: %w%s", w.t.Label(), w.t.Server, err, source.RancherHint(w.t, err))
	}
	if err != nil {
		w.static = append(w.static, finding.ScanError{Cluster: w.t.Name, Message: "discovery was partial: " + err.Error()})
	}
	w.served = map[schema.GroupVersionResource]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, ar := range l.APIResources {
			w.served[gv.WithResource(ar.Name)] = true
		}
	}
	w.stop = ctx.Done()

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, res := range source.Resources() {
		if !res.Wanted(w.served) {
			if !res.Optional {
				w.static = append(w.static, finding.ScanError{Cluster: w.t.Name, Message: fmt.Sprintf("%s are not served by this API server; checks that need them were skipped", res.GVR.Resource)})
			}
			continue
		}
		if res.ClusterScoped || res.AllNamespaces {
			w.follow(res, metav1.NamespaceAll, nil)
		}
	}
	// Namespaced kinds are watched per watched namespace, as they appear.
	err = source.RetryRead(ctx, func() error {
		_, err := w.dyn.Resource(namespacesGVR).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	switch {
	case apierrors.IsForbidden(err):
		w.static = append(w.static, finding.ScanError{Cluster: w.t.Name, Message: "cannot list namespaces (forbidden); watching only the well-known ones"})
		for _, ns := range wellKnownNamespaces {
			w.startNamespaceLocked(ns)
		}
	case err != nil:
		return fmt.Errorf("%s: listing namespaces: %w", w.t.Label(), err)
	default:
		// One informer per kind across all namespaces, keeping only the watched namespaces'
		// objects: a management cluster has a cluster-fleet-* namespace per downstream
		// cluster, and an informer per kind per namespace would be tens of thousands of
		// watches.
		for _, res := range source.Resources() {
			if !res.ClusterScoped && !res.AllNamespaces && res.Wanted(w.served) {
				w.follow(res, metav1.NamespaceAll, source.WatchedNamespace)
			}
		}
		// The namespaces are polled: which exist changes rarely, and every namespaced kind is
		// read across all of them.
		w.nsInf = w.pollResource(source.Resource{GVR: namespacesGVR, Kind: "Namespace", ClusterScoped: true}, metav1.NamespaceAll, source.WatchedNamespace)
	}
	if len(w.polls) > 0 {
		go w.pollLoop(ctx, w.polls)
	}
	return nil
}

// follow keeps the objects of res in ns: polled, and watched from the first poll that finds
// objects of it when watchedKind says so.
func (w *clusterWatch) follow(res source.Resource, ns string, keep func(string) bool) {
	p := w.pollResource(res, ns, keep)
	p.watchable = watchedKind(res.GVR)
	w.informers = append(w.informers, watched{res: res, ns: ns, inf: p, forbidden: p.forbidden})
}

// startNamespaceLocked starts the informers of the namespaced kinds in ns, once.
func (w *clusterWatch) startNamespaceLocked(ns string) {
	if w.nsStarted[ns] {
		return
	}
	w.nsStarted[ns] = true
	for _, res := range source.Resources() {
		if res.ClusterScoped || res.AllNamespaces || !res.Wanted(w.served) {
			continue
		}
		w.follow(res, ns, nil)
	}
}

// startWatch watches one kind in ns (all namespaces when empty) from seed, the poll that
// found objects of it: the seed is the store's first content and the reflector's first list,
// and the watch goes on from its resource version. keep, when set, says which namespaces'
// objects are kept: the others are cached as bare names and never wake an evaluation;
// forbidden receives the message of a refused list.
func (w *clusterWatch) startWatch(ctx context.Context, res source.Resource, ns string, keep func(string) bool, seed *cachedList, forbidden *atomic.Pointer[string]) *reflectedKind {
	k := &reflectedKind{store: cache.NewStore(cache.MetaNamespaceKeyFunc), apiVersion: res.GVR.GroupVersion().String(), kind: res.Kind, keep: keep, onChange: w.onChange}
	items := make([]any, len(seed.Items))
	for i, it := range seed.Items {
		items[i] = it
	}
	_ = k.store.Replace(items, seed.ResourceVersion)
	k.synced.Store(true)
	refused := func(err error) error {
		if apierrors.IsForbidden(err) && forbidden.Load() == nil {
			forbidden.Store(forbiddenMessage(res, ns))
			w.onChange()
		}
		return err
	}
	var example runtime.Object = &unstructured.Unstructured{}
	if res.MetaOnly {
		example = &metav1.PartialObjectMetadata{}
	}
	r := cache.NewReflectorWithOptions(w.listWatch(res, ns, keep, seed, refused), example, k, cache.ReflectorOptions{Name: w.t.Name + "/" + res.GVR.String(), ResyncPeriod: w.resync})
	go r.RunWithContext(ctx) // on an error it logs and retries with backoff
	return k
}

// listWatch is a plain LIST (paginated when the server pages, from etcd: its resource
// version is where the watch goes on from) and WATCH of res in ns; the first list is seed,
// already read; failed sees each error.
// WatchList streaming is turned off: against a server holding tens of thousands of objects
// of one kind its initial stream kept timing out ("awaiting required bookmark event") and
// restarting, and memory grew with each restart.
func (w *clusterWatch) listWatch(res source.Resource, ns string, keep func(string) bool, seed *cachedList, failed func(error) error) *listWatch {
	lw := &listWatch{}
	lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector, o.FieldSelector = res.Selector, res.FieldSelector
		var wi watch.Interface
		var err error
		if res.MetaOnly {
			wi, err = w.meta.Resource(res.GVR).Namespace(ns).Watch(ctx, o)
		} else {
			wi, err = w.dyn.Resource(res.GVR).Namespace(ns).Watch(ctx, o)
		}
		return wi, failed(err)
	}
	lw.ListWithContextFunc = func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
		if l := seed; l != nil {
			seed = nil // the reflector lists from one goroutine
			return l, nil
		}
		l, err := w.listCompacted(ctx, res, ns, keep, "")
		if err != nil {
			return nil, failed(err)
		}
		return l, nil
	}
	return lw
}

// listCompacted lists res in ns page by page, compacting each page before the next is read,
// so the full list never sits in memory as decoded maps. rv is the first page's
// resourceVersion: "0" reads it from the watch cache, "" from etcd.
func (w *clusterWatch) listCompacted(ctx context.Context, res source.Resource, ns string, keep func(string) bool, rv string) (*cachedList, error) {
	apiVersion := res.GVR.GroupVersion().String()
	o := listOptions(res.Selector, res.FieldSelector, rv)
	out := &cachedList{}
	for {
		items, meta, err := w.listPage(ctx, res, ns, o)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			c, err := compact(it, apiVersion, res.Kind, keep)
			if err != nil {
				return nil, err
			}
			out.Items = append(out.Items, c.(*cachedObject))
		}
		out.ResourceVersion = meta.ResourceVersion
		if meta.Continue == "" {
			return out, nil
		}
		// The continue token names the snapshot the next page comes from.
		o.Continue, o.ResourceVersion = meta.Continue, ""
	}
}

// listPage reads one page of res: metadata only for MetaOnly kinds, else whole objects.
func (w *clusterWatch) listPage(ctx context.Context, res source.Resource, ns string, o metav1.ListOptions) ([]any, metav1.ListMeta, error) {
	var items []any
	if res.MetaOnly {
		l, err := w.meta.Resource(res.GVR).Namespace(ns).List(ctx, o)
		if err != nil {
			return nil, metav1.ListMeta{}, err
		}
		for i := range l.Items {
			items = append(items, &l.Items[i])
		}
		return items, l.ListMeta, nil
	}
	l, err := w.dyn.Resource(res.GVR).Namespace(ns).List(ctx, o)
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	for i := range l.Items {
		items = append(items, &l.Items[i])
	}
	return items, metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue()}, nil
}

// listWatch is a ListWatch that says it does not do WatchList semantics.
type listWatch struct{ cache.ListWatch }

func (*listWatch) IsWatchListSemanticsUnSupported() bool { return true }

// synced reports whether every informer has completed its first list.
func (w *clusterWatch) synced() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.nsInf != nil && !w.nsInf.HasSynced() {
		return false
	}
	for _, x := range w.informers {
		if !x.done() {
			return false
		}
	}
	return true
}

// feed adds the cached objects to a snapshot builder, as the live scan's lists would.
func (w *clusterWatch) feed(b *snapshot.Builder) {
	b.DeclareCluster(w.t.Info())
	for _, e := range w.static {
		b.Error(e)
	}
	w.mu.Lock()
	informers := append([]watched(nil), w.informers...)
	nsInf := w.nsInf
	w.mu.Unlock()
	add := func(items []any, keep func(*cachedObject) bool) {
		cached := make([]*cachedObject, 0, len(items))
		for _, obj := range items {
			if c, ok := obj.(*cachedObject); ok && c.kept() && (keep == nil || keep(c)) {
				cached = append(cached, c)
			}
		}
		w.addCached(b, cached)
	}
	if nsInf != nil {
		add(nsInf.GetStore().List(), func(c *cachedObject) bool { return source.WatchedNamespace(c.name) })
	}
	crds, nodesRead := false, false
	var crdList []*snapshot.CRD
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for _, x := range informers {
		if msg := x.forbidden.Load(); msg != nil && !x.inf.HasSynced() {
			b.Error(finding.ScanError{Cluster: w.t.Name, Message: *msg})
			continue
		}
		items := x.inf.GetStore().List()
		add(items, nil)
		if !x.inf.HasSynced() {
			continue
		}
		switch x.res.Kind {
		case "Node":
			nodesRead = true
			nodes = append(nodes, typedOf[*corev1.Node](items)...)
		case "CustomResourceDefinition":
			crds = true
			crdList = append(crdList, typedOf[*snapshot.CRD](items)...)
		case "Pod":
			pods = append(pods, typedOf[*corev1.Pod](items)...)
		}
	}
	if crds {
		b.MarkCRDsCollected(w.t.Name)
		w.feedCRDCounts(b, crdList)
	}
	if nodesRead {
		w.feedNodePods(b, nodes)
	}
	// The logs of the agents and of failing containers, as the live scan reads them: a
	// crash-looping agent's log names what it dies on (a missing CRD, a refused certificate).
	w.logs.feed(b, w.t.Name, pods, w.stop)
}

// addCached adds cached objects to a snapshot builder in a stable order (namespace, name), which
// keeps the snapshot, and so the report, stable between evaluations; one that did not decode is
// reported as an error of the cluster. It sorts cached in place.
func (w *clusterWatch) addCached(b *snapshot.Builder, cached []*cachedObject) {
	sort.Slice(cached, func(i, j int) bool {
		if cached[i].namespace != cached[j].namespace {
			return cached[i].namespace < cached[j].namespace
		}
		return cached[i].name < cached[j].name
	})
	src := "live " + w.t.Name
	for _, c := range cached {
		if c.err != nil {
			b.Error(finding.ScanError{Cluster: w.t.Name, Message: c.err.Error()})
			continue
		}
		b.Add(w.t.Name, src, c.obj)
	}
}

// typedOf returns the cached objects of an informer's store that decoded to T.
func typedOf[T any](items []any) []T {
	var out []T
	for _, obj := range items {
		if c, ok := obj.(*cachedObject); ok && c.obj != nil {
			if t, ok := c.obj.Typed().(T); ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// reflectedKind is the store a watched kind's reflector fills: its objects compacted (as the
// informers' transform did), a change of a kept one waking an evaluation. A reflector and a
// store are all serve needs of an informer: the shared informer's delta queue, controller and
// listener added eight goroutines and a 16 KiB buffer per kind, most of serve's memory at a
// thousand clusters.
type reflectedKind struct {
	store            cache.Store
	apiVersion, kind string
	keep             func(string) bool
	onChange         func()
	synced           atomic.Bool
}

func (k *reflectedKind) HasSynced() bool       { return k.synced.Load() }
func (k *reflectedKind) GetStore() cache.Store { return k.store }
func (k *reflectedKind) Add(obj any) error     { return k.put(obj) }
func (k *reflectedKind) Update(obj any) error  { return k.put(obj) }

func (k *reflectedKind) put(obj any) error {
	c, err := compact(obj, k.apiVersion, k.kind, k.keep)
	if err != nil {
		return err
	}
	if err := k.store.Update(c); err != nil {
		return err
	}
	if x, ok := c.(*cachedObject); !ok || x.kept() {
		k.onChange()
	}
	return nil
}

func (k *reflectedKind) Delete(obj any) error {
	c, err := compact(obj, k.apiVersion, k.kind, k.keep)
	if err != nil {
		return err
	}
	old, exists, _ := k.store.Get(c)
	if err := k.store.Delete(c); err != nil {
		return err
	}
	if x, ok := old.(*cachedObject); exists && (!ok || x.kept()) {
		k.onChange()
	}
	return nil
}

// Replace takes a (re)list: the items are compacted already (listCompacted).
func (k *reflectedKind) Replace(items []any, rv string) error {
	if err := k.store.Replace(items, rv); err != nil {
		return err
	}
	k.synced.Store(true)
	k.onChange()
	return nil
}

// Resync wakes an evaluation every resync period, as the informers' resync did.
func (k *reflectedKind) Resync() error {
	k.onChange()
	return nil
}
