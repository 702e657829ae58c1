package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Sink receives what a source reads. The snapshot Builder is one; the bundle writer of
// `unstick collect` is another, so a live scan and a scan of its collected bundle see the
// same objects.
type Sink interface {
	DeclareCluster(snapshot.ClusterInfo)
	AddJSON(cluster, src string, h *snapshot.Header, raw []byte) error
	AddLog(cluster, namespace, pod, container string, previous bool, file string, lines []string)
	MarkCRDsCollected(cluster string)
	Error(finding.ScanError)
}

// Target is one cluster to read: a kubeconfig context, or a cluster behind Rancher's proxy.
type Target struct {
	Name   string // the cluster's name in reports: the context name, or Rancher's display name
	Server string
	Config *rest.Config
	// Context is the kubeconfig context printed commands are aimed at; empty: Name.
	// ContextServer, when set, is the --server those commands pass with it (a cluster
	// reached through Rancher's proxy with the credentials of a context for Rancher).
	Context       string
	ContextServer string
	// Kubeconfig, when set, is the kubeconfig file (an absolute path) those commands pass
	// with --kubeconfig: the one the user named on the command line, holding Context.
	Kubeconfig string
	// ViaRancher says the cluster is read through Rancher's proxy (RancherTargets), not
	// through a kubeconfig context of its own.
	ViaRancher bool
	// Budget, when set, is the fleet-wide request budget this cluster's requests count
	// against (every cluster read through one Rancher shares one); nil: the cluster has
	// client-go's limits of its own (50 requests per second, burst 100).
	Budget *RequestBudget
}

// ClientConfig is a copy of the target's REST config with its request limits: the shared
// budget's when it has one, else its own.
func (t Target) ClientConfig() *rest.Config {
	cfg := rest.CopyConfig(t.Config)
	if t.Budget != nil {
		t.Budget.Apply(cfg)
	} else {
		cfg.QPS, cfg.Burst = 50, 100
	}
	return cfg
}

// Label names the target in messages: "context prod-eu-1", or "cluster prod-eu-1 (through
// Rancher's proxy)".
func (t Target) Label() string {
	switch {
	case t.ViaRancher:
		return "cluster " + t.Name + " (through Rancher's proxy)"
	case t.Context != "" && t.Context != t.Name:
		return "context " + t.Context + " (cluster " + t.Name + ")"
	}
	return "context " + t.Name
}

// Info is what a reader declares about the target before reading it.
func (t Target) Info() snapshot.ClusterInfo {
	ctx := t.Context
	if ctx == "" {
		ctx = t.Name
	}
	return snapshot.ClusterInfo{Name: t.Name, Server: t.Server, Context: ctx, ContextServer: t.ContextServer, Kubeconfig: t.Kubeconfig}
}

// Live reads clusters through their API servers.
type Live struct {
	Targets []Target
	// Timeout bounds the whole read of one cluster.
	Timeout time.Duration
	// Concurrency bounds how many clusters are read at once, and how many lists run at
	// once within one cluster.
	Concurrency int
	// PageSize is the LIST page size (limit/continue).
	PageSize int64
	// LogLines is how many lines of each interesting container's log are read.
	LogLines int64
	// MaxLogPods bounds how many pods' logs are read per cluster.
	MaxLogPods int
	// Progress, if set, is told how many clusters are done.
	Progress func(done, total int)
	// CachedLists asks for each list's first page from the API server's watch cache
	// (resourceVersion=0) instead of a consistent read: a judgement that may be a moment
	// old costs the server, and Rancher's proxy before it, no read of etcd.
	CachedLists bool
}

func (l *Live) defaults() {
	if l.Timeout == 0 {
		l.Timeout = 60 * time.Second
	}
	if l.Concurrency == 0 {
		l.Concurrency = 8
	}
	if l.PageSize == 0 {
		l.PageSize = 500
	}
	if l.LogLines == 0 {
		l.LogLines = DefaultLogLines
	}
	if l.MaxLogPods == 0 {
		l.MaxLogPods = DefaultMaxLogPods
	}
}

// Load reads every target into a snapshot judged at the time the read started.
func (l *Live) Load(ctx context.Context) (*snapshot.Snapshot, error) {
	b := snapshot.NewBuilder()
	b.SetReadLive(time.Now().UTC())
	if err := l.Read(ctx, b); err != nil {
		return nil, err
	}
	return b.Build(), nil
}

// Read streams every target's objects and logs into sink. Problems with one cluster or one
// resource are reported to the sink; the error is returned only when no cluster could be read.
func (l *Live) Read(ctx context.Context, sink Sink) error {
	l.defaults()
	if len(l.Targets) == 0 {
		return errors.New("no cluster to read: no kubeconfig context selected")
	}
	sem := make(chan struct{}, l.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	done := 0
	for _, t := range l.Targets {
		sink.DeclareCluster(t.Info())
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, l.Timeout)
			defer cancel()
			err := l.readCluster(cctx, t, sink)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err.Error())
				sink.Error(finding.ScanError{Cluster: t.Name, Message: err.Error()})
			}
			done++
			if l.Progress != nil {
				l.Progress(done, len(l.Targets))
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(failed) == len(l.Targets) {
		sort.Strings(failed)
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// resource is one kind the checks need, and where to read it.
type resource struct {
	gvr      schema.GroupVersionResource
	kind     string
	scope    scope
	selector string
	// fieldSelector narrows the list further (machine-plan Secrets by type).
	fieldSelector string
	// skipIfServed: an older version read only when the newer one is not served (CAPI
	// v1beta1 where v1beta2 is not served yet).
	skipIfServed schema.GroupVersionResource
	metaOnly     bool // names only (Fleet Contents are large)
	optional     bool // a CRD that may not be installed: silently skipped when not served
}

type scope int

const (
	clusterScoped scope = iota
	allNamespaces
	watchedNamespaces
)

func gvr(g, v, r string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
}

// resources is what unstick reads: nothing else. Keep deploy/rbac/scan.yaml in step.
var resources = []resource{
	{gvr: gvr("", "v1", "nodes"), kind: "Node", scope: clusterScoped},
	{gvr: gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions"), kind: "CustomResourceDefinition", scope: clusterScoped},
	{gvr: gvr("", "v1", "secrets"), kind: "Secret", scope: allNamespaces, selector: "owner=helm"},
	{gvr: gvr("", "v1", "pods"), kind: "Pod", scope: watchedNamespaces},
	{gvr: gvr("", "v1", "events"), kind: "Event", scope: watchedNamespaces},
	{gvr: gvr("", "v1", "configmaps"), kind: "ConfigMap", scope: watchedNamespaces},
	{gvr: gvr("", "v1", "resourcequotas"), kind: "ResourceQuota", scope: watchedNamespaces},
	{gvr: gvr("apps", "v1", "deployments"), kind: "Deployment", scope: watchedNamespaces},
	{gvr: gvr("apps", "v1", "replicasets"), kind: "ReplicaSet", scope: watchedNamespaces},
	{gvr: gvr("apps", "v1", "daemonsets"), kind: "DaemonSet", scope: watchedNamespaces},
	{gvr: gvr("apps", "v1", "statefulsets"), kind: "StatefulSet", scope: watchedNamespaces},
	{gvr: gvr("batch", "v1", "jobs"), kind: "Job", scope: watchedNamespaces},
	{gvr: gvr("fleet.cattle.io", "v1alpha1", "clusters"), kind: "Cluster", scope: allNamespaces, optional: true},
	{gvr: gvr("fleet.cattle.io", "v1alpha1", "bundles"), kind: "Bundle", scope: allNamespaces, optional: true},
	{gvr: gvr("fleet.cattle.io", "v1alpha1", "bundledeployments"), kind: "BundleDeployment", scope: allNamespaces, optional: true},
	{gvr: gvr("fleet.cattle.io", "v1alpha1", "clusterregistrations"), kind: "ClusterRegistration", scope: allNamespaces, optional: true},
	{gvr: gvr("fleet.cattle.io", "v1alpha1", "contents"), kind: "Content", scope: clusterScoped, metaOnly: true, optional: true},
	{gvr: gvr("fleet.cattle.io", "v1alpha1", "gitrepos"), kind: "GitRepo", scope: allNamespaces, optional: true},
	{gvr: gvr("fleet.cattle.io", "v1alpha1", "helmops"), kind: "HelmOp", scope: allNamespaces, optional: true},
	{gvr: gvr("upgrade.cattle.io", "v1", "plans"), kind: "Plan", scope: allNamespaces, optional: true},
	{gvr: gvr("", "v1", "serviceaccounts"), kind: "ServiceAccount", scope: watchedNamespaces},
	{gvr: gvr("rke.cattle.io", "v1", "etcdsnapshots"), kind: "ETCDSnapshot", scope: allNamespaces, optional: true},
	{gvr: gvr("k3s.cattle.io", "v1", "etcdsnapshotfiles"), kind: "ETCDSnapshotFile", scope: allNamespaces, optional: true},
	// What Rancher's own upgrades of the clusters it provisions or imports are made of (on
	// the management cluster; a cluster without Rancher serves none of these groups).
	{gvr: gvr("provisioning.cattle.io", "v1", "clusters"), kind: "Cluster", scope: allNamespaces, optional: true},
	{gvr: gvr("rke.cattle.io", "v1", "rkecontrolplanes"), kind: "RKEControlPlane", scope: allNamespaces, optional: true},
	{gvr: gvr("rke.cattle.io", "v1", "rkebootstraps"), kind: "RKEBootstrap", scope: allNamespaces, optional: true},
	{gvr: gvr("cluster.x-k8s.io", "v1beta2", "clusters"), kind: "Cluster", scope: allNamespaces, optional: true},
	{gvr: gvr("cluster.x-k8s.io", "v1beta1", "clusters"), kind: "Cluster", scope: allNamespaces, optional: true, skipIfServed: gvr("cluster.x-k8s.io", "v1beta2", "clusters")},
	{gvr: gvr("cluster.x-k8s.io", "v1beta2", "machines"), kind: "Machine", scope: allNamespaces, optional: true},
	{gvr: gvr("cluster.x-k8s.io", "v1beta1", "machines"), kind: "Machine", scope: allNamespaces, optional: true, skipIfServed: gvr("cluster.x-k8s.io", "v1beta2", "machines")},
	{gvr: gvr("cluster.x-k8s.io", "v1beta2", "machinesets"), kind: "MachineSet", scope: allNamespaces, optional: true},
	{gvr: gvr("cluster.x-k8s.io", "v1beta1", "machinesets"), kind: "MachineSet", scope: allNamespaces, optional: true, skipIfServed: gvr("cluster.x-k8s.io", "v1beta2", "machinesets")},
	{gvr: gvr("cluster.x-k8s.io", "v1beta2", "machinedeployments"), kind: "MachineDeployment", scope: allNamespaces, optional: true},
	{gvr: gvr("cluster.x-k8s.io", "v1beta1", "machinedeployments"), kind: "MachineDeployment", scope: allNamespaces, optional: true, skipIfServed: gvr("cluster.x-k8s.io", "v1beta2", "machinedeployments")},
	{gvr: gvr("cluster.x-k8s.io", "v1beta2", "machinehealthchecks"), kind: "MachineHealthCheck", scope: allNamespaces, optional: true},
	{gvr: gvr("cluster.x-k8s.io", "v1beta1", "machinehealthchecks"), kind: "MachineHealthCheck", scope: allNamespaces, optional: true, skipIfServed: gvr("cluster.x-k8s.io", "v1beta2", "machinehealthchecks")},
	{gvr: gvr("management.cattle.io", "v3", "clusters"), kind: "Cluster", scope: clusterScoped, optional: true},
	{gvr: gvr("management.cattle.io", "v3", "settings"), kind: "Setting", scope: clusterScoped, optional: true},
	// The machine-plan Secrets (status keys only: the loader drops the plan bodies) and the
	// planner's provisioning-log ConfigMaps in the c-m-* namespaces (WatchedNamespace).
	{gvr: gvr("", "v1", "secrets"), kind: "Secret", scope: watchedNamespaces, fieldSelector: "type=" + rancher.SecretTypeMachinePlan},
	{gvr: gvr("policy", "v1", "poddisruptionbudgets"), kind: "PodDisruptionBudget", scope: allNamespaces},
	// Admission webhook configurations: the one holding a webhook an apply was refused by or
	// could not call (workload/admission-denied and workload/webhook-unavailable name it and its
	// Service).
	{gvr: gvr("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"), kind: "ValidatingWebhookConfiguration", scope: clusterScoped},
	{gvr: gvr("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"), kind: "MutatingWebhookConfiguration", scope: clusterScoped},
}

// WatchedNamespace says which namespaces hold what upgrades depend on: Rancher's and Fleet's
// (cattle-*, fleet-*, Fleet's cluster-* namespaces), system-upgrade-controller's, kube-system.
func WatchedNamespace(ns string) bool {
	return strings.HasPrefix(ns, "cattle-") || strings.HasPrefix(ns, "fleet-") || strings.HasPrefix(ns, "cluster-fleet-") ||
		ns == "system-upgrade" || ns == "kube-system" || strings.HasPrefix(ns, "c-m-")
}

type clusterReader struct {
	l      *Live
	t      Target
	sink   Sink
	dyn    dynamic.Interface
	meta   metadata.Interface
	kube   *Kube
	served map[schema.GroupVersionResource]bool
	ns     []string
	// terminating are the namespaces being deleted (read whatever their name: terminating.go)
	// and kinds what discovery lists, in its order.
	terminating []*corev1.Namespace
	kinds       []servedKind

	mu       sync.Mutex
	pods     []*corev1.Pod
	cordoned []string // nodes whose pods are read in every namespace (drainNodePods)
	// migrating are the CRDs listed with stored versions to migrate (their objects counted).
	migrating []MigratingCRD

	watchedOnce sync.Once
	watched     map[string]bool // r.ns as a set, for listWatched
}

// NamespaceListLimit is how many watched namespaces a cluster may have before the kinds read
// from them are listed once across all namespaces (keeping the watched namespaces' objects)
// instead of namespace by namespace. A management cluster has a cluster-fleet-* namespace
// per downstream cluster: listing nine kinds in each of 5,000 of them is 45,000 requests,
// longer than a scan's timeout at the client's 50 requests per second.
const NamespaceListLimit = 16

// ListsAcrossNamespaces says whether a cluster with this many watched namespaces has the
// watched-namespace kinds listed across all namespaces (see NamespaceListLimit).
func ListsAcrossNamespaces(watched int) bool { return watched > NamespaceListLimit }

// listWatched reads a watched-namespace kind with one paginated list across all namespaces,
// keeping the objects of the watched ones. Without the right to list across namespaces (a
// scan bound by RoleBindings only), it lists the watched namespaces one by one.
func (r *clusterReader) listWatched(ctx context.Context, res resource) {
	r.watchedOnce.Do(func() {
		r.watched = make(map[string]bool, len(r.ns))
		for _, ns := range r.ns {
			r.watched[ns] = true
		}
	})
	_, err := r.dyn.Resource(res.gvr).Namespace("").List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: res.selector, FieldSelector: res.fieldSelector})
	if apierrors.IsForbidden(err) {
		for _, ns := range r.ns {
			r.list(ctx, res, ns)
		}
		return
	}
	r.list(ctx, res, "")
}

func (l *Live) readCluster(ctx context.Context, t Target, sink Sink) error {
	cfg := t.ClientConfig()
	if cfg.Timeout == 0 || cfg.Timeout > l.Timeout {
		cfg.Timeout = l.Timeout
	}
	kube, err := NewKube(cfg)
	if err != nil {
		return fmt.Errorf("%s (%s): %w", t.Label(), t.Server, err)
	}
	r := &clusterReader{l: l, t: t, sink: sink, kube: kube}
	if r.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if r.meta, err = metadata.NewForConfig(cfg); err != nil {
		return err
	}
	if err := r.discover(ctx, kube.Discovery); err != nil {
		return fmt.Errorf("%s: cannot reach the API server %s: %w%s", t.Label(), t.Server, err, rancherHint(t, err))
	}
	// What the API server runs: what it serves (the upgrade gate's current version). Not
	// knowing it is no error: the Nodes' kubeletVersions say it too.
	if v, err := kube.Discovery.ServerVersion(); err == nil && v.GitVersion != "" {
		// Declared again with the version: everything else as Info says (a cluster read
		// through Rancher keeps the context and --server its commands are aimed with).
		info := t.Info()
		info.ServerVersion = v.GitVersion
		sink.DeclareCluster(info)
	}
	if err := r.namespaces(ctx); err != nil {
		return fmt.Errorf("%s: listing namespaces: %w", t.Label(), err)
	}
	sem := make(chan struct{}, l.Concurrency)
	var wg sync.WaitGroup
	for _, res := range resources {
		if res.skipIfServed.Resource != "" && r.served[res.skipIfServed] {
			continue
		}
		if !r.served[res.gvr] {
			if !res.optional {
				sink.Error(finding.ScanError{Cluster: t.Name, Message: fmt.Sprintf("%s are not served by this API server; checks that need them were skipped", res.gvr.Resource)})
			}
			continue
		}
		namespaces := []string{""}
		if res.scope == watchedNamespaces {
			namespaces = r.ns
			if ListsAcrossNamespaces(len(r.ns)) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					r.listWatched(ctx, res)
				}()
				continue
			}
		}
		for _, ns := range namespaces {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				r.list(ctx, res, ns)
			}()
		}
	}
	wg.Wait()
	r.readHolders(ctx)
	if r.served[gvr("", "v1", "pods")] {
		r.drainNodePods(ctx)
	}
	if r.served[gvr("apiextensions.k8s.io", "v1", "customresourcedefinitions")] {
		sink.MarkCRDsCollected(t.Name)
		r.countMigrating(ctx)
	}
	r.logs(ctx)
	return ctx.Err()
}

func (r *clusterReader) discover(ctx context.Context, dc discovery.DiscoveryInterface) error {
	type result struct {
		lists []*metav1.APIResourceList
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		var res result
		_ = retryRead(ctx, func() error {
			_, res.lists, res.err = dc.ServerGroupsAndResources()
			return res.err
		})
		ch <- res
	}()
	var res result
	select {
	case <-ctx.Done():
		return fmt.Errorf("no answer within %s", r.l.Timeout)
	case res = <-ch:
	}
	if res.err != nil && len(res.lists) == 0 {
		return res.err
	}
	if res.err != nil {
		// Some aggregated API is down: what it serves is not needed.
		r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: "discovery was partial: " + res.err.Error()})
	}
	r.served = map[schema.GroupVersionResource]bool{}
	for _, l := range res.lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, ar := range l.APIResources {
			r.served[gv.WithResource(ar.Name)] = true
			r.kinds = append(r.kinds, servedKind{gv.WithResource(ar.Name), ar.Kind})
		}
	}
	return nil
}

// firstPage is the options of a list read in one piece.
func (l *Live) firstPage() metav1.ListOptions {
	if l.CachedLists {
		return metav1.ListOptions{ResourceVersion: "0"}
	}
	return metav1.ListOptions{}
}

// namespaces reads the watched namespaces and those being deleted (the Namespace objects
// themselves are kept).
func (r *clusterReader) namespaces(ctx context.Context) error {
	var list *corev1.NamespaceList
	err := retryRead(ctx, func() (err error) {
		list, err = r.kube.Core.Namespaces().List(ctx, r.l.firstPage())
		return err
	})
	if err != nil {
		if apierrors.IsForbidden(err) {
			// Without namespace list rights, fall back to the well-known ones.
			r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: "cannot list namespaces (forbidden); reading only the well-known ones"})
			r.ns = []string{"cattle-fleet-system", "cattle-fleet-local-system", "cattle-system", "system-upgrade", "kube-system"}
			return nil
		}
		return err
	}
	repoNS := r.gitRepoNamespaces(ctx)
	for i := range list.Items {
		ns := &list.Items[i]
		if !WatchedNamespace(ns.Name) && ns.DeletionTimestamp == nil && !repoNS[ns.Name] {
			continue
		}
		r.ns = append(r.ns, ns.Name)
		if ns.DeletionTimestamp != nil {
			r.terminating = append(r.terminating, ns)
		}
		ns.ManagedFields = nil
		ns.APIVersion, ns.Kind = "v1", "Namespace"
		r.emit(ns, "Namespace", ns.Namespace, ns.Name)
	}
	sort.Strings(r.ns)
	return nil
}

// gitRepoNamespaces are the namespaces holding Fleet GitRepos: their gitjob Jobs and pods
// run there, and a GitRepo may live in any namespace, not only fleet-default and
// fleet-local. One metadata list; nil when GitRepos are not served or cannot be listed (the
// list of GitRepos itself then reports it).
func (r *clusterReader) gitRepoNamespaces(ctx context.Context) map[string]bool {
	res := gvr("fleet.cattle.io", "v1alpha1", "gitrepos")
	if !r.served[res] {
		return nil
	}
	out := map[string]bool{}
	opts := metav1.ListOptions{Limit: r.l.PageSize}
	for {
		var l *metav1.PartialObjectMetadataList
		err := retryRead(ctx, func() (err error) {
			l, err = r.meta.Resource(res).Namespace("").List(ctx, opts)
			return err
		})
		if err != nil {
			return out
		}
		for i := range l.Items {
			out[l.Items[i].Namespace] = true
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return out
		}
	}
}

func (r *clusterReader) emit(obj any, kind, ns, name string) {
	raw, err := json.Marshal(obj)
	if err != nil {
		r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: fmt.Sprintf("encoding %s %s/%s: %v", kind, ns, name, err)})
		return
	}
	var h snapshot.Header
	_ = json.Unmarshal(raw, &h)
	if err := r.sink.AddJSON(r.t.Name, "live "+r.t.Name, &h, raw); err != nil {
		r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: err.Error()})
	}
}

// list reads one resource, page by page, dropping managedFields as it goes.
func (r *clusterReader) list(ctx context.Context, res resource, ns string) {
	opts := metav1.ListOptions{Limit: r.l.PageSize, LabelSelector: res.selector, FieldSelector: res.fieldSelector}
	if r.l.CachedLists {
		opts.ResourceVersion = "0"
	}
	adder, typedSink := r.sink.(preparedSink)
	typed := typedSink && !res.metaOnly && snapshot.HasPageDecoder(res.gvr.GroupVersion().String(), res.kind)
	for {
		var cont string
		var err error
		handled := false
		if typed {
			cont, handled, err = r.typedPage(ctx, res, ns, opts, adder)
		}
		if !handled && err == nil && !res.metaOnly && rawSplit(res) {
			cont, handled, err = r.rawPage(ctx, res, ns, opts)
		}
		if handled || err != nil {
			// read as typed objects, or failed
		} else if res.metaOnly {
			var l *metav1.PartialObjectMetadataList
			err = retryRead(ctx, func() (err error) {
				l, err = r.meta.Resource(res.gvr).Namespace(ns).List(ctx, opts)
				return err
			})
			if err == nil {
				for i := range l.Items {
					it := &l.Items[i]
					it.ManagedFields = nil
					it.APIVersion, it.Kind = res.gvr.GroupVersion().String(), res.kind
					r.emit(it, res.kind, it.Namespace, it.Name)
				}
				cont = l.Continue
			}
		} else {
			var l *unstructured.UnstructuredList
			err = retryRead(ctx, func() (err error) {
				l, err = r.dyn.Resource(res.gvr).Namespace(ns).List(ctx, opts)
				return err
			})
			if err == nil {
				for i := range l.Items {
					if ns == "" && res.scope == watchedNamespaces && !r.watched[l.Items[i].GetNamespace()] {
						continue // listed across namespaces (listWatched): keep the watched ones
					}
					r.item(&l.Items[i], res)
				}
				cont = l.GetContinue()
			}
		}
		if err != nil {
			where := "all namespaces"
			if ns != "" {
				where = "namespace " + ns
			}
			if res.scope == clusterScoped {
				where = "cluster scope"
			}
			msg := fmt.Sprintf("cannot list %s in %s: %v", res.gvr.Resource, where, err)
			if apierrors.IsForbidden(err) {
				msg = fmt.Sprintf("forbidden: cannot list %s in %s (grant it with deploy/rbac/scan.yaml); checks that need them judged without them", res.gvr.Resource, where)
			}
			r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: msg})
			return
		}
		if cont == "" {
			return
		}
		// The continue token names the snapshot the next page comes from.
		opts.Continue, opts.ResourceVersion = cont, ""
	}
}

// rawSplit says whether a kind's pages may be split on the raw JSON (rawPage): every kind
// but Fleet's Cluster, whose managedFields entries that own spec.paused are kept
// (trimManagedFields), which the split does not select.
func rawSplit(res resource) bool {
	return res.gvr.Group != "fleet.cattle.io" || res.kind != "Cluster"
}

// preparedSink takes objects already decoded (the snapshot builder does; the bundle writer
// of collect wants JSON to write and does not).
type preparedSink interface {
	Add(cluster, src string, o *snapshot.Object)
}

// typedPage reads one LIST page as raw JSON and decodes it straight into the snapshot's
// typed objects: one decode per page, where the dynamic client's answer was decoded into
// maps, encoded again and decoded twice more (its header, then typed), which was most of a
// live scan's CPU at fleet scale. handled is false when the page holds something the typed
// decoder does not take (an item of another kind); the caller then reads it the general way.
func (r *clusterReader) typedPage(ctx context.Context, res resource, ns string, opts metav1.ListOptions, sink preparedSink) (cont string, handled bool, err error) {
	data, err := r.getPage(ctx, res, ns, opts)
	if err != nil {
		return "", false, err
	}
	objs, cont, ok := snapshot.PreparePage(res.gvr.GroupVersion().String(), res.kind, data)
	if !ok {
		return "", false, nil
	}
	src := "live " + r.t.Name
	for _, o := range objs {
		if ns == "" && res.scope == watchedNamespaces && !r.watched[o.Namespace] {
			continue // listed across namespaces (listWatched): keep the watched ones
		}
		switch obj := o.Typed().(type) {
		case *corev1.Pod:
			r.mu.Lock()
			r.pods = append(r.pods, obj)
			r.mu.Unlock()
		case *corev1.Node:
			r.noteTypedNode(obj)
		}
		sink.Add(r.t.Name, src, o)
	}
	return cont, true, nil
}

// getPage reads one LIST page as raw JSON.
func (r *clusterReader) getPage(ctx context.Context, res resource, ns string, opts metav1.ListOptions) ([]byte, error) {
	path := []string{"/apis", res.gvr.Group, res.gvr.Version}
	if res.gvr.Group == "" {
		path = []string{"/api", res.gvr.Version}
	}
	if ns != "" {
		path = append(path, "namespaces", ns)
	}
	path = append(path, res.gvr.Resource)
	var data []byte
	err := retryRead(ctx, func() (err error) {
		data, err = r.kube.Core.RESTClient().Get().AbsPath(path...).
			SetHeader("Accept", "application/json").
			VersionedParams(&opts, metav1.ParameterCodec).Do(ctx).Raw()
		return err
	})
	return data, err
}

// rawPage reads one LIST page of a kind without a typed decoder as raw JSON and hands each
// item to the sink as bytes (splitPage). handled is false when the page is not in the form
// the split takes; the caller then reads it the general way.
func (r *clusterReader) rawPage(ctx context.Context, res resource, ns string, opts metav1.ListOptions) (cont string, handled bool, err error) {
	data, err := r.getPage(ctx, res, ns, opts)
	if err != nil {
		return "", false, err
	}
	items, cont, err := splitPage(data, res.gvr.GroupVersion().String(), res.kind, res.kind == "CustomResourceDefinition")
	if err != nil {
		return "", false, nil
	}
	for i := range items {
		it := &items[i]
		if ns == "" && res.scope == watchedNamespaces && !r.watched[it.h.Metadata.Namespace] {
			continue // listed across namespaces (listWatched): keep the watched ones
		}
		r.noteRaw(it, res)
		if err := r.sink.AddJSON(r.t.Name, "live "+r.t.Name, &it.h, it.raw); err != nil {
			r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: err.Error()})
		}
	}
	return cont, true, nil
}

// noteRaw notes what the reader itself needs of an item read as bytes: CRDs whose objects
// are counted, Nodes' scheduling, Pods whose logs are read.
func (r *clusterReader) noteRaw(it *rawItem, res resource) {
	switch res.kind {
	case "CustomResourceDefinition", "Node":
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(it.raw); err != nil {
			return
		}
		if res.kind == "Node" {
			r.noteUnstructuredNode(&u)
		} else {
			r.noteCRD(&u)
		}
	case "Pod":
		var p corev1.Pod
		if err := json.Unmarshal(it.raw, &p); err == nil {
			r.mu.Lock()
			r.pods = append(r.pods, &p)
			r.mu.Unlock()
		}
	}
}

func (r *clusterReader) item(u *unstructured.Unstructured, res resource) {
	trimManagedFields(u, res)
	if res.kind == "CustomResourceDefinition" {
		r.noteCRD(u)
		// The schemas are most of a CRD's size and no check reads them.
		if vs, ok, _ := unstructured.NestedSlice(u.Object, "spec", "versions"); ok {
			for _, v := range vs {
				if m, ok := v.(map[string]any); ok {
					delete(m, "schema")
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, vs, "spec", "versions")
		}
	}
	if res.kind == "Node" {
		r.noteUnstructuredNode(u)
	}
	if res.kind == "Pod" {
		var p corev1.Pod
		if err := runtimeFromUnstructured(u.Object, &p); err == nil {
			r.mu.Lock()
			r.pods = append(r.pods, &p)
			r.mu.Unlock()
		}
	}
	r.emit(u.Object, res.kind, u.GetNamespace(), u.GetName())
}

func runtimeFromUnstructured(obj map[string]any, into any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}

// logs reads the tail of the current and previous log of the pods the checks care about
// (LogRequests): agents, and containers that are not ready or have restarted.
func (r *clusterReader) logs(ctx context.Context) {
	reqs := LogRequests(r.pods, r.l.MaxLogPods)
	sem := make(chan struct{}, r.l.Concurrency)
	var wg sync.WaitGroup
	for _, q := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			lines, err := TailLog(ctx, r.kube.Core, q, r.l.LogLines)
			if err != nil {
				if apierrors.IsForbidden(err) {
					r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: LogForbidden(q)})
				}
				// A kubelet that does not answer, or a previous log that rotated away,
				// leaves the checks with the pod's status and events: not a scan error.
				return
			}
			r.sink.AddLog(r.t.Name, q.Pod.Namespace, q.Pod.Name, q.Container, q.Previous, q.File(r.t.Name), lines)
		}()
	}
	wg.Wait()
}

// logContextLines is how many lines above a log's tail are read to redact it: a 4096-bit
// RSA key is 51 lines of PEM. A longer block cut by the tail is still masked (internal/redact
// masks a PEM body that runs into its END line, and any wrapped base64 block).
const logContextLines = 200

// readAttempts bounds how often one read (discovery, a LIST page, a log tail) is tried.
const readAttempts = 5

// retryRead runs a read again when its failure says a second try may pass: the server asked
// to slow down or was briefly unable (429, 500, 503, 504, a server timeout), or the connection
// dropped or the answer was cut short. Only reads come here: trying one again changes nothing
// on the server. client-go itself already retries a 429 or 5xx that carries Retry-After and a
// GET whose connection was reset; this covers the rest (a 503 without Retry-After, a cut body,
// a LIST page). It waits 200ms, doubling to 3s, or the server's Retry-After when longer, and
// gives up, returning the last error, after readAttempts or when the wait would pass the
// context's deadline.
func retryRead(ctx context.Context, read func() error) error {
	delay := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := read()
		if err == nil || attempt >= readAttempts || ctx.Err() != nil || !retryable(err) {
			return err
		}
		wait := delay
		if s, ok := apierrors.SuggestsClientDelay(err); ok && time.Duration(s)*time.Second > wait {
			wait = time.Duration(s) * time.Second
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return err
		}
		if !sleepCtx(ctx, wait) {
			return err
		}
		if delay *= 2; delay > 3*time.Second {
			delay = 3 * time.Second
		}
	}
}

// retryable says whether a failed read may pass when tried again.
func retryable(err error) bool {
	var gd *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &gd) {
		for _, e := range gd.Groups {
			if retryable(e) {
				return true
			}
		}
		return false
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err) || utilnet.IsHTTP2ConnectionLost(err)
}
