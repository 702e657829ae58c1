// Package execute runs a remediation plan against live clusters: for every step it saves a
// backup of what it will touch (with events and logs as evidence), asks the API server for a
// server-side dry-run, writes with the resourceVersion read when planning as a precondition,
// verifies with a timeout that the state moved, and journals each phase so an interrupted run
// can be resumed without repeating a finished step. It also restores backups.
//
// This is the only part of remediation that talks to clusters; planning
// (internal/remediate) stays pure.
package execute

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/unstick-dev/unstick/internal/source"
)

// FieldManager is the name unstick writes under (managedFields, server-side apply).
const FieldManager = "unstick"

// cluster is the clients of one cluster.
type cluster struct {
	name string
	// host is the API server URL the REST config points at (recorded with a backup).
	host string
	kube *source.Kube
	dyn  dynamic.Interface

	mu     sync.Mutex
	mapper meta.RESTMapper
}

// Clients connects to clusters by name (the kubeconfig contexts the plan was read from).
type Clients struct {
	configs map[string]*rest.Config
	mu      sync.Mutex
	byName  map[string]*cluster
}

// NewClients keeps the REST config of each cluster, connecting on first use.
func NewClients(configs map[string]*rest.Config) *Clients {
	return &Clients{configs: configs, byName: map[string]*cluster{}}
}

// has reports whether a cluster of that name can be reached (its context was given).
func (c *Clients) has(name string) bool { return c.configs[name] != nil }

func (c *Clients) get(name string) (*cluster, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.byName[name]; cl != nil {
		return cl, nil
	}
	cfg := c.configs[name]
	if cfg == nil {
		return nil, fmt.Errorf("cluster %q is not one of the contexts given (the plan names it; pass --context %s)", name, name)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "unstick"
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 20, 40
	}
	kube, err := source.NewKube(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	cl := &cluster{name: name, host: cfg.Host, kube: kube, dyn: dyn}
	c.byName[name] = cl
	return cl, nil
}

// resource maps apiVersion/kind to its resource through discovery, and says whether it is
// namespaced.
func (c *cluster) resource(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	if r, ok := wellKnown[gv.Group+"/"+kind]; ok && gv.Version == r.gvr.Version {
		return r.gvr, r.namespaced, nil
	}
	c.mu.Lock()
	if c.mapper == nil {
		c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.kube.Discovery))
	}
	m := c.mapper
	c.mu.Unlock()
	mapping, err := m.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("%s %s is not served by cluster %s: %w", apiVersion, kind, c.name, err)
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

type known struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// wellKnown are the kinds steps write, so no discovery is needed for them.
var wellKnown = map[string]known{
	"/Secret":                          {schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true},
	"/Node":                            {schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, false},
	"/Pod":                             {schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
	"apps/Deployment":                  {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
	"batch/Job":                        {schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, true},
	"fleet.cattle.io/Cluster":          {schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: "clusters"}, true},
	"fleet.cattle.io/Bundle":           {schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: "bundles"}, true},
	"fleet.cattle.io/GitRepo":          {schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: "gitrepos"}, true},
	"fleet.cattle.io/BundleDeployment": {schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: "bundledeployments"}, true},
	"upgrade.cattle.io/Plan":           {schema.GroupVersionResource{Group: "upgrade.cattle.io", Version: "v1", Resource: "plans"}, true},
	"apiextensions.k8s.io/CustomResourceDefinition": {schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false},
}

// resourceName renders a GVR as kubectl names it: plans.upgrade.cattle.io, secrets.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}
