package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/unstick-dev/unstick/internal/source"
)

// LoadOptions tunes Load.
type LoadOptions struct {
	// Cluster picks clusters/<Cluster>/ of a multi-cluster bundle. Empty: the bundle root, or
	// the only cluster of a bundle that has one.
	Cluster string
	// Workers bounds the parallel writes; 0 means 16.
	Workers int
	// Log receives the summary and the warnings; nil discards them.
	Log io.Writer
	// KeepCRDs keeps the installed Fleet and SUC CRDs as they are even when the bundle lists
	// its cluster's CRDs (by default the bundle's list is what the server ends up serving).
	KeepCRDs bool
}

// LoadResult counts what a load did. Warnings name each object that was not replayed as it
// was; a load with warnings still succeeded.
type LoadResult struct {
	Objects       int // objects read from the bundle for the chosen cluster
	Created       int
	StatusWritten int
	Existing      int            // already on the server (default namespaces, system roles, a second load)
	CRDsReplaced  []string       // installed CRDs given the bundle's definition
	CRDsRemoved   []string       // installed Fleet/SUC CRDs the bundle's cluster does not have
	Skipped       map[string]int // reason → count of objects not created
	Warnings      []string
	Duration      time.Duration
}

// LoadBundle replays the objects of an offline bundle (directory or .tar.gz) into the API
// server behind cfg, statuses included, and prints a summary to stderr. cluster picks
// clusters/<cluster>/ of a multi-cluster bundle.
func LoadBundle(ctx context.Context, cfg *rest.Config, bundlePath, cluster string) error {
	_, err := Load(ctx, cfg, bundlePath, LoadOptions{Cluster: cluster, Log: os.Stderr})
	return err
}

// Load replays a bundle's objects: namespaces first, then CRDs the server lacks, then the
// classes pods refer to, then every other object — owners before what they own, so owner
// references point at the new UIDs — then events, and last what would change or block the
// writes before it (quotas, limit ranges, admission webhooks and policies, pod-security
// labels). Server-set metadata is dropped; each status is written through the status
// subresource where the kind has one. Kinds the server does not serve are skipped and counted.
func Load(ctx context.Context, cfg *rest.Config, bundlePath string, opts LoadOptions) (*LoadResult, error) {
	start := time.Now()
	objs, err := readBundle(bundlePath, opts.Cluster)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = rest.NoWarnings{} // pod-security warnings for the pods it replays
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 500, 1000
	}
	l, err := newLoader(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	l.res.Objects = len(objs)
	if err := l.run(ctx, objs); err != nil {
		return nil, err
	}
	l.res.Duration = time.Since(start)
	l.report()
	return &l.res, nil
}

// readBundle returns the objects of the chosen cluster of a bundle.
func readBundle(path, cluster string) ([]map[string]any, error) {
	byCluster := map[string][]map[string]any{}
	if err := source.ReadRawObjects(path, func(o source.RawObject) error {
		byCluster[o.Cluster] = append(byCluster[o.Cluster], o.Object)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("testenv: reading bundle %s: %w", path, err)
	}
	var names []string
	for c := range byCluster {
		if c != "" {
			names = append(names, c)
		}
	}
	sort.Strings(names)
	switch {
	case cluster != "":
		if objs, ok := byCluster[cluster]; ok {
			return objs, nil
		}
		return nil, fmt.Errorf("testenv: bundle %s has no objects under clusters/%s/ (clusters: %s)", path, cluster, orNone(names))
	case len(byCluster[""]) > 0:
		return byCluster[""], nil
	case len(names) == 1:
		return byCluster[names[0]], nil
	case len(names) > 1:
		return nil, fmt.Errorf("testenv: bundle %s holds several clusters (%s); name the one to load", path, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("testenv: bundle %s holds no Kubernetes objects", path)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// resourceInfo is what discovery says about one kind.
type resourceInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	status     bool // has a status subresource
	creatable  bool
}

type loader struct {
	cfg      *rest.Config
	dyn      dynamic.Interface
	disc     discovery.DiscoveryInterface
	workers  int
	log      io.Writer
	keepCRDs bool

	mu        sync.Mutex
	mapper    meta.RESTMapper
	resources map[schema.GroupVersionResource]resourceInfo
	uids      map[string]string // bundle UID → server UID
	deletions []*item
	res       LoadResult
}

func newLoader(ctx context.Context, cfg *rest.Config, opts LoadOptions) (*loader, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	l := &loader{cfg: cfg, dyn: dyn, disc: disc, workers: opts.Workers, log: opts.Log, keepCRDs: opts.KeepCRDs,
		uids: map[string]string{}, res: LoadResult{Skipped: map[string]int{}}}
	if l.workers <= 0 {
		l.workers = 16
	}
	if l.log == nil {
		l.log = io.Discard
	}
	if err := l.discover(); err != nil {
		return nil, err
	}
	return l, nil
}

// discover (re)reads the server's resources; partial discovery (a broken aggregated API)
// still maps everything else.
func (l *loader) discover() error {
	groups, err := restmapper.GetAPIGroupResources(l.disc)
	if err != nil && len(groups) == 0 {
		return fmt.Errorf("testenv: discovering the server's resources: %w", err)
	}
	resources := map[schema.GroupVersionResource]resourceInfo{}
	for _, g := range groups {
		for version, list := range g.VersionedResources {
			subs := map[string]bool{}
			for _, r := range list {
				if i := strings.IndexByte(r.Name, '/'); i > 0 && r.Name[i+1:] == "status" {
					subs[r.Name[:i]] = true
				}
			}
			for _, r := range list {
				if strings.Contains(r.Name, "/") {
					continue
				}
				gvr := schema.GroupVersionResource{Group: g.Group.Name, Version: version, Resource: r.Name}
				resources[gvr] = resourceInfo{gvr: gvr, namespaced: r.Namespaced, status: subs[r.Name],
					creatable: hasVerb(r.Verbs, "create")}
			}
		}
	}
	l.mu.Lock()
	l.mapper = restmapper.NewDiscoveryRESTMapper(groups)
	l.resources = resources
	l.mu.Unlock()
	return nil
}

func hasVerb(verbs metav1.Verbs, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// item is one bundle object on its way to the server.
type item struct {
	obj     *unstructured.Unstructured // sanitised, status removed when written separately
	status  any                        // the bundle's status, written after create
	info    resourceInfo
	oldUID  string
	owners  []string // bundle UIDs of owners
	deleted *int64   // non-nil: the object was terminating, with this grace period
	gen     int64    // the bundle's metadata.generation
	written bool     // created or replaced by this load
	desc    string
}

func (l *loader) warnf(format string, args ...any) {
	l.mu.Lock()
	l.res.Warnings = append(l.res.Warnings, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *loader) skip(reason string) {
	l.mu.Lock()
	l.res.Skipped[reason]++
	l.mu.Unlock()
}

func (l *loader) count(f func(r *LoadResult)) {
	l.mu.Lock()
	f(&l.res)
	l.mu.Unlock()
}

func (l *loader) resolve(obj *unstructured.Unstructured) (resourceInfo, error) {
	gvk := obj.GroupVersionKind()
	l.mu.Lock()
	mapper, resources := l.mapper, l.resources
	l.mu.Unlock()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return resourceInfo{}, err
	}
	info, ok := resources[m.Resource]
	if !ok {
		return resourceInfo{}, fmt.Errorf("no resource %s", m.Resource)
	}
	return info, nil
}

// Phases, in order. Within a phase, objects are written in parallel.
const (
	phaseNamespace = iota
	phaseCRD
	phaseClasses
	phaseObjects // split further by owner depth
	phaseEvents
	phaseLast
)

func phaseOf(gk schema.GroupKind) int {
	switch gk {
	case schema.GroupKind{Kind: "Namespace"}:
		return phaseNamespace
	case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
		return phaseCRD
	case schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
		schema.GroupKind{Group: "node.k8s.io", Kind: "RuntimeClass"},
		schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"},
		schema.GroupKind{Group: "networking.k8s.io", Kind: "IngressClass"}:
		return phaseClasses // admission looks these up when pods and claims are created
	case schema.GroupKind{Kind: "Event"}, schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}:
		return phaseEvents
	case schema.GroupKind{Kind: "ResourceQuota"}, // enforced before the quota controller syncs: would refuse pods
		schema.GroupKind{Kind: "LimitRange"}, // would rewrite the resources of pods created after it
		schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
		schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
		schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"},
		schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"},
		schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"},
		schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:
		return phaseLast
	}
	return phaseObjects
}

func (l *loader) run(ctx context.Context, raw []map[string]any) error {
	phases := map[int][]map[string]any{}
	for _, o := range raw {
		u := &unstructured.Unstructured{Object: o}
		phases[phaseOf(u.GroupVersionKind().GroupKind())] = append(phases[phaseOf(u.GroupVersionKind().GroupKind())], o)
	}

	// Namespaces: the bundle's, and any that its objects use without declaring them.
	// Pod-security enforcement labels wait until the pods are in.
	declared := map[string]bool{}
	var nsItems []*item
	var psaLabels []*unstructured.Unstructured
	for _, o := range phases[phaseNamespace] {
		it := l.prepare(o)
		if it == nil {
			continue
		}
		declared[it.obj.GetName()] = true
		if labels, dropped := withoutPodSecurityLabels(it.obj.GetLabels()); dropped {
			psaLabels = append(psaLabels, it.obj.DeepCopy())
			it.obj.SetLabels(labels)
		}
		nsItems = append(nsItems, it)
	}
	for _, ph := range []int{phaseObjects, phaseEvents, phaseLast, phaseClasses} {
		for _, o := range phases[ph] {
			ns, _, _ := unstructured.NestedString(o, "metadata", "namespace")
			if ns != "" && !declared[ns] {
				declared[ns] = true
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("v1")
				u.SetKind("Namespace")
				u.SetName(ns)
				if it := l.prepare(u.Object); it != nil {
					it.desc += " (implied by its objects)"
					nsItems = append(nsItems, it)
				}
			}
		}
	}
	if err := l.writeAll(ctx, nsItems); err != nil {
		return err
	}

	// A bundle that lists CRDs lists all of its cluster's: those are what the server serves
	// (scans tell a missing or unserved CRD from the list), so installed ones are replaced by
	// the bundle's definition and installed Fleet and SUC CRDs it lacks are removed.
	var crdItems []*item
	for _, o := range phases[phaseCRD] {
		if it := l.prepare(o); it != nil {
			crdItems = append(crdItems, it)
		}
	}
	if len(crdItems) > 0 {
		if err := l.writeAll(ctx, crdItems); err != nil {
			return err
		}
		if !l.keepCRDs {
			if err := l.pruneCRDs(ctx, crdItems); err != nil {
				return err
			}
		}
		if err := l.waitEstablished(ctx, crdItems); err != nil {
			return err
		}
		if err := l.discover(); err != nil {
			return err
		}
	}

	for _, ph := range []int{phaseClasses, phaseObjects, phaseEvents, phaseLast} {
		var items []*item
		for _, o := range phases[ph] {
			if it := l.prepare(o); it != nil {
				items = append(items, it)
			}
		}
		if ph != phaseObjects {
			if err := l.writeAll(ctx, items); err != nil {
				return err
			}
			continue
		}
		for _, level := range ownerLevels(items) {
			if err := l.writeAll(ctx, level); err != nil {
				return err
			}
		}
	}

	if err := l.replayDeletions(ctx); err != nil {
		return err
	}
	for _, ns := range psaLabels {
		if err := l.restoreLabels(ctx, ns); err != nil {
			l.warnf("namespace %s: restoring pod-security labels: %v", ns.GetName(), err)
		}
	}
	return nil
}

// ownerLevels splits objects so each object's owners (when in the bundle) are written in an
// earlier level.
func ownerLevels(items []*item) [][]*item {
	byUID := map[string]*item{}
	for _, it := range items {
		if it.oldUID != "" {
			byUID[it.oldUID] = it
		}
	}
	depth := map[*item]int{}
	var depthOf func(it *item, seen map[*item]bool) int
	depthOf = func(it *item, seen map[*item]bool) int {
		if d, ok := depth[it]; ok {
			return d
		}
		if seen[it] {
			return 0 // an ownership cycle; write it with the roots
		}
		seen[it] = true
		d := 0
		for _, o := range it.owners {
			if owner, ok := byUID[o]; ok {
				if od := depthOf(owner, seen) + 1; od > d {
					d = od
				}
			}
		}
		depth[it] = d
		return d
	}
	var levels [][]*item
	for _, it := range items {
		d := depthOf(it, map[*item]bool{})
		for len(levels) <= d {
			levels = append(levels, nil)
		}
		levels[d] = append(levels[d], it)
	}
	return levels
}

// writeAll writes items with a bounded pool of workers. Only a dead server or a cancelled
// context stops the load; an object the server refuses is a warning.
func (l *loader) writeAll(ctx context.Context, items []*item) error {
	ch := make(chan *item)
	var wg sync.WaitGroup
	var fatalMu sync.Mutex
	var fatal error
	for i := 0; i < l.workers && i < len(items); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := l.write(ctx, it); err != nil {
					fatalMu.Lock()
					if fatal == nil {
						fatal = err
					}
					fatalMu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		fatalMu.Lock()
		stop := fatal != nil
		fatalMu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		ch <- it
	}
	close(ch)
	wg.Wait()
	if fatal != nil {
		return fatal
	}
	return ctx.Err()
}

// serverGone says whether err means the server cannot take any more writes.
func serverGone(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return false
	}
	return true // transport errors: connection refused, TLS, timeouts
}

func (l *loader) waitEstablished(ctx context.Context, items []*item) error {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, it := range items {
		if !it.written {
			continue
		}
		name := it.obj.GetName()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			u, err := l.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // not visible yet
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] == "Established" && cm["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			l.warnf("CRD %s: not established after 30s; its objects may be skipped", name)
		}
	}
	return nil
}

func (l *loader) restoreLabels(ctx context.Context, ns *unstructured.Unstructured) error {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	return retryConflict(func() error {
		cur, err := l.dyn.Resource(gvr).Get(ctx, ns.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		labels := cur.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range ns.GetLabels() {
			labels[k] = v
		}
		cur.SetLabels(labels)
		_, err = l.dyn.Resource(gvr).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

func retryConflict(f func() error) error {
	var err error
	for i := 0; i < 5; i++ {
		if err = f(); !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func withoutPodSecurityLabels(labels map[string]string) (map[string]string, bool) {
	out := map[string]string{}
	dropped := false
	for k, v := range labels {
		if strings.HasPrefix(k, "pod-security.kubernetes.io/enforce") {
			dropped = true
			continue
		}
		out[k] = v
	}
	return out, dropped
}

func (l *loader) report() {
	r := &l.res
	fmt.Fprintf(l.log, "testenv: loaded %d objects in %s: %d created, %d statuses written, %d already present",
		r.Objects, r.Duration.Round(time.Millisecond), r.Created, r.StatusWritten, r.Existing)
	if len(r.CRDsReplaced) > 0 {
		fmt.Fprintf(l.log, ", %d installed CRDs replaced by the bundle's", len(r.CRDsReplaced))
	}
	if len(r.CRDsRemoved) > 0 {
		fmt.Fprintf(l.log, ", CRDs the bundle lacks removed: %s", strings.Join(r.CRDsRemoved, " "))
	}
	if n := skippedTotal(r.Skipped); n > 0 {
		fmt.Fprintf(l.log, ", %d skipped", n)
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(l.log, ", %d warnings", len(r.Warnings))
	}
	fmt.Fprintln(l.log)
	reasons := make([]string, 0, len(r.Skipped))
	for k := range r.Skipped {
		reasons = append(reasons, k)
	}
	sort.Strings(reasons)
	for _, k := range reasons {
		fmt.Fprintf(l.log, "testenv:   skipped %d: %s\n", r.Skipped[k], k)
	}
	sort.Strings(r.Warnings)
	for _, w := range r.Warnings {
		fmt.Fprintf(l.log, "testenv:   warning: %s\n", w)
	}
}

func skippedTotal(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
