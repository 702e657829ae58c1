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
	t        source.Target
	resync   time.Duration
	onChange func()

	dyn    dynamic.Interface
	meta   metadata.Interface
	served map[schema.GroupVersionResource]bool
	// static are the problems found at start (kinds not served, namespaces forbidden); they
	// are reported with every evaluation, as a scan would report them.
	static []finding.ScanError

	mu        sync.Mutex
	informers []watched
	nsStarted map[string]bool
	nsInf     cache.SharedIndexInformer // nil when namespaces are forbidden
	stop      <-chan struct{}

	counts   crdCounts // objects of the CRDs with stored versions to migrate
	nodePods nodePods  // pods on cordoned nodes outside the watched namespaces
	logs     *podLogs  // the container logs the checks read, kept between evaluations
}

type watched struct {
	res source.Resource
	ns  string
	inf cache.SharedIndexInformer
	// forbidden holds the message of a list the server refused (RBAC); it is reported while
	// the informer has not synced. Such an informer would never sync, and serve must not wait on it forever — a scan
	// reports the missing permission and goes on, and so does serve.
	forbidden *atomic.Pointer[string]
}

// done reports whether the informer has listed, or was refused and says so.
func (x watched) done() bool { return x.inf.HasSynced() || x.forbidden.Load() != nil }

// newClusterWatch prepares the watch of one cluster; logs says how its container logs are read.
func newClusterWatch(t source.Target, resync time.Duration, logs logReading, onChange func()) (*clusterWatch, error) {
	cfg := t.ClientConfig()
	// A watch is long-lived: the scan's overall timeout must not cut it.
	cfg.Timeout = 0
	w := &clusterWatch{t: t, resync: resync, onChange: onChange, nsStarted: map[string]bool{}}
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
			w.startInformer(res, metav1.NamespaceAll, nil)
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
				w.startInformer(res, metav1.NamespaceAll, source.WatchedNamespace)
			}
		}
		inf := w.informer(namespacesGVR, "Namespace", metav1.NamespaceAll, "", "", false, nil)
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if c, ok := obj.(*cachedObject); ok && source.WatchedNamespace(c.name) {
					w.onChange()
				}
			},
			UpdateFunc: func(_, obj any) {
				if c, ok := obj.(*cachedObject); ok && source.WatchedNamespace(c.name) {
					w.onChange()
				}
			},
			DeleteFunc: func(any) { w.onChange() },
		})
		w.nsInf = inf
		go inf.Run(w.stop)
	}
	return nil
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
		w.startInformer(res, ns, nil)
	}
}

// startInformer watches one kind in ns (all namespaces when empty); keep, when set, says
// which namespaces' objects are kept: the others are cached as bare names and never wake
// an evaluation.
func (w *clusterWatch) startInformer(res source.Resource, ns string, keep func(string) bool) {
	inf := w.informer(res.GVR, res.Kind, ns, res.Selector, res.FieldSelector, res.MetaOnly, keep)
	kept := func(obj any) bool {
		c, ok := obj.(*cachedObject)
		return !ok || c.kept()
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if kept(obj) {
				w.onChange()
			}
		},
		UpdateFunc: func(_, obj any) {
			if kept(obj) {
				w.onChange()
			}
		},
		DeleteFunc: func(obj any) {
			if kept(obj) {
				w.onChange()
			}
		},
	})
	x := watched{res: res, ns: ns, inf: inf, forbidden: &atomic.Pointer[string]{}}
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			where := "all namespaces"
			if res.ClusterScoped {
				where = "cluster scope"
			} else if ns != "" {
				where = "namespace " + ns
			}
			msg := fmt.Sprintf("forbidden: cannot list %s in %s (grant it with deploy/rbac/scan.yaml); checks that need them judged without them", res.GVR.Resource, where)
			x.forbidden.Store(&msg)
			w.onChange()
		}
		cache.DefaultWatchErrorHandler(ctx, r, err) // logs, and the reflector retries with backoff
	})
	w.informers = append(w.informers, x)
	go inf.Run(w.stop)
}

// informer builds a shared informer over a plain LIST (paginated when the server pages) and
// WATCH, storing compacted objects. WatchList streaming is turned off: against a server
// holding tens of thousands of objects of one kind its initial stream kept timing out
// ("awaiting required bookmark event") and restarting, and memory grew with each restart.
func (w *clusterWatch) informer(gvr schema.GroupVersionResource, kind, ns, selector, fieldSelector string, metaOnly bool, keep func(string) bool) cache.SharedIndexInformer {
	apiVersion := gvr.GroupVersion().String()
	tweak := func(o *metav1.ListOptions) { o.LabelSelector, o.FieldSelector = selector, fieldSelector }
	lw := &listWatch{}
	var example runtime.Object = &unstructured.Unstructured{}
	if metaOnly {
		example = &metav1.PartialObjectMetadata{}
		lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return w.meta.Resource(gvr).Namespace(ns).Watch(ctx, o)
		}
	} else {
		lw.WatchFuncWithContext = func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return w.dyn.Resource(gvr).Namespace(ns).Watch(ctx, o)
		}
	}
	// The initial list is read page by page from etcd (not in one piece from the watch
	// cache) and each page is compacted before the next is read, so the full list never
	// sits in memory as decoded maps.
	lw.ListWithContextFunc = func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		tweak(&o)
		o.ResourceVersion, o.ResourceVersionMatch, o.Limit = "", "", 500
		out := &cachedList{}
		for {
			var items []any
			var meta metav1.ListMeta
			if metaOnly {
				l, err := w.meta.Resource(gvr).Namespace(ns).List(ctx, o)
				if err != nil {
					return nil, err
				}
				for i := range l.Items {
					items = append(items, &l.Items[i])
				}
				meta = l.ListMeta
			} else {
				l, err := w.dyn.Resource(gvr).Namespace(ns).List(ctx, o)
				if err != nil {
					return nil, err
				}
				for i := range l.Items {
					items = append(items, &l.Items[i])
				}
				meta = metav1.ListMeta{ResourceVersion: l.GetResourceVersion(), Continue: l.GetContinue()}
			}
			for _, it := range items {
				c, err := compact(it, apiVersion, kind, keep)
				if err != nil {
					return nil, err
				}
				out.Items = append(out.Items, c.(*cachedObject))
			}
			out.ResourceVersion = meta.ResourceVersion
			if meta.Continue == "" {
				return out, nil
			}
			o.Continue = meta.Continue
		}
	}
	inf := cache.NewSharedIndexInformer(lw, example, w.resync, cache.Indexers{})
	_ = inf.SetTransform(func(obj any) (any, error) { return compact(obj, apiVersion, kind, keep) })
	return inf
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
