// Package snapshot is the immutable, indexed set of objects every check reads. Live clusters,
// offline directories, tar.gz archives and Fleet's own dumps all become one of these; nothing
// downstream knows where the objects came from.
package snapshot

import (
	"sort"
	"strconv"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/suc"
)

// Role says what a cluster is to Fleet.
type Role string

const (
	Management Role = "management"
	Downstream Role = "downstream"
)

// Snapshot is every cluster's objects plus what went wrong reading them.
type Snapshot struct {
	Clusters []*Cluster
	// CollectedAt is when the objects were read (live: now; offline: the bundle's metadata,
	// else the newest timestamp found in it). Zero if nothing told.
	CollectedAt time.Time
	// ClockSource says where CollectedAt came from (ClockRecorded, ClockNewest), and
	// IgnoredTimes lists timestamps left out of it as outliers.
	ClockSource  string
	IgnoredTimes []IgnoredTime
	Errors       []finding.ScanError
	Skipped      []Skipped

	// Lookups, built by Build (and Reindex) before any concurrent reader.
	byName, byFleet map[string]*Cluster
}

// Skipped is a file, or one document of a file, that the loader did not turn into an object.
type Skipped struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"` // the document's first line; 0 for a whole file
	Reason string `json:"reason"`
}

// Cluster is one cluster's objects, typed where a check needs the type.
type Cluster struct {
	Name   string
	Role   Role
	Server string
	// FleetCluster names the management cluster's Fleet Cluster object for this cluster
	// (namespace/name), when it was matched.
	FleetCluster string
	// Context is the kubeconfig context commands about this cluster are aimed at, and
	// ContextSource says where that name comes from.
	Context       string
	ContextSource ContextSource
	// ServerVersion is the API server's version (gitVersion) when the source read or recorded
	// it; empty otherwise (the Nodes' kubeletVersions then say what the cluster runs).
	ServerVersion string
	// ContextServer, when set, goes with Context as --server: the cluster is reached
	// through Rancher's proxy with the credentials of a context for Rancher (ClusterInfo).
	ContextServer string
	// Kubeconfig, when set, goes with Context as --kubeconfig (ClusterInfo).
	Kubeconfig string

	Namespaces           []*corev1.Namespace
	Nodes                []*corev1.Node
	Pods                 []*corev1.Pod
	Events               []*corev1.Event
	ConfigMaps           []*corev1.ConfigMap // data values dropped: keys only
	Secrets              []*corev1.Secret    // data values dropped: keys only
	ResourceQuotas       []*corev1.ResourceQuota
	Deployments          []*appsv1.Deployment
	ReplicaSets          []*appsv1.ReplicaSet
	DaemonSets           []*appsv1.DaemonSet
	StatefulSets         []*appsv1.StatefulSet
	Jobs                 []*batchv1.Job
	CRDs                 []*CRD
	FleetClusters        []*fleetv1.Cluster
	Bundles              []*fleetv1.Bundle
	BundleDeployments    []*BundleDeployment
	ClusterRegistrations []*fleetv1.ClusterRegistration
	Contents             []string // names of fleet Content objects (payloads are not kept)
	// ContentBytes is, by Content name, the size of its payload (the gzipped manifest) when
	// the source held it; a live scan reads Contents' metadata only and leaves it empty.
	ContentBytes map[string]int
	// BundleSizes is, by namespace/name, what each Bundle weighs (its resources and status),
	// measured before its resources were dropped.
	BundleSizes map[string]ObjectSize
	// GitRepos are Fleet's GitRepos: the first stage of the pipeline a commit goes through
	// (GitRepo → gitjob Job → Bundle → BundleDeployment). HelmOps are Fleet's HelmOps, when
	// the CRD is installed.
	GitRepos             []*fleetv1.GitRepo
	HelmOps              []*fleetv1.HelmOp
	HelmReleases         []*helmrelease.Release
	Plans                []*suc.Plan     // system-upgrade-controller Plans (upgrade.cattle.io)
	EtcdSnapshots        []*EtcdSnapshot // rke.cattle.io ETCDSnapshots and k3s.cattle.io ETCDSnapshotFiles
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// MachinePlans are the status keys of Rancher's machine-plan Secrets (type
	// rke.cattle.io/machine-plan); the Secrets themselves are in Secrets, payloads dropped.
	MachinePlans []*rancher.MachinePlan
	// Other holds every kind without a type of its own, as read: among them Rancher's
	// provisioning.cattle.io and management.cattle.io Clusters, rke.cattle.io
	// RKEControlPlanes and RKEBootstraps, CAPI (cluster.x-k8s.io) objects and
	// management.cattle.io Settings. Use OtherOf to pick a group and kind.
	Other []*Unstructured
	// BundleDocs are the documents of each Fleet Bundle's resources, by identity only (see
	// package manifest), keyed namespace/name; ContentDocs the same for each Content, by name.
	// The resources themselves are not kept.
	BundleDocs  map[string][]manifest.Doc
	ContentDocs map[string][]manifest.Doc

	// CRDsCollected is true when the source listed CRDs for this cluster, so an absent
	// CRD means a missing CRD rather than an unread one.
	CRDsCollected bool
	// CRDObjects counts, by CRD name, the objects of each CRD that has stored versions to
	// migrate, as a live LIST said when the cluster was read (or a collected bundle recorded).
	// ObjectsUnknown: the list was read but the server did not say how many; absent: not read.
	CRDObjects map[string]int

	// Logs by namespace/pod/container.
	Logs map[string]*Log

	eventsBy  map[string][]*corev1.Event
	objIndex  map[string]indexed // by object key
	contentIx map[string]bool
}

// indexed is an object of a cluster and where it was read from: src ("file:line" or
// "live"), and its position in the List there (-1: not a List item).
type indexed struct {
	obj  *Object
	src  string
	item int
}

// source is where the object was read from: src, or "src items[i]" for a List's item (made
// when asked for, not for each of a fleet's objects).
func (x indexed) source() string {
	if x.item < 0 {
		return x.src
	}
	return x.src + " items[" + strconv.Itoa(x.item) + "]"
}

// CRD is what the checks need of a CustomResourceDefinition.
type CRD struct {
	Name string
	// UID and ResourceVersion are what a fix plan holds a write to the CRD to.
	UID             string
	ResourceVersion string
	Group           string
	Kind            string
	Plural          string
	Versions        []CRDVersion
	StoredVersions  []string
}

// ObjectsUnknown is a CRDObjects count the API server did not give (no remainingItemCount).
const ObjectsUnknown = -1

// CRDObjectCount is what is known of the objects of CRD name: n and whether it was read as
// a count (ok false: not read, or read without a count — unknown says which).
func (c *Cluster) CRDObjectCount(name string) (n int, ok, unknown bool) {
	v, read := c.CRDObjects[name]
	switch {
	case !read:
		return 0, false, false
	case v < 0:
		return 0, false, true
	}
	return v, true, false
}

// CRDVersion is one version of a CRD.
type CRDVersion struct {
	Name    string
	Served  bool
	Storage bool
}

// EtcdSnapshot is one etcd snapshot record: an rke.cattle.io ETCDSnapshot (on the Rancher
// management cluster, one per snapshot of a provisioned RKE2/K3s cluster; rancher/rancher
// pkg/apis/rke.cattle.io/v1/etcdsnapshot_types.go) or a k3s.cattle.io ETCDSnapshotFile (on the
// RKE2/K3s cluster itself).
type EtcdSnapshot struct {
	Kind, Namespace, Name string
	// Cluster is the provisioned cluster an rke.cattle.io snapshot belongs to
	// (spec.clusterName, else the rke.cattle.io/cluster-name label); empty for
	// ETCDSnapshotFiles, which belong to the cluster they were read from.
	Cluster   string
	Node      string
	Location  string
	CreatedAt time.Time
	// Ready is false for a snapshot that failed (snapshotFile.status "failed",
	// status.readyToUse false) or is missing from its storage (status.missing).
	Ready   bool
	Message string
}

// Unstructured is an object of a kind no check has a type for.
type Unstructured struct {
	APIVersion, Kind, Namespace, Name string
	Object                            map[string]any
}

// Log is the tail of one container's current and previous log.
type Log struct {
	Namespace, Pod, Container string
	Current, Previous         []string
	CurrentFile, PreviousFile string
}

// Key is the index key of an object: kind/namespace/name (namespace empty for cluster scope).
// Kinds of the groups in QualifiedGroups are indexed under KeyFor's group-qualified key
// instead, so that a Rancher provisioning Cluster, a management Cluster, a CAPI Cluster and
// the Fleet Cluster of the same name (Rancher gives them one) do not replace each other.
func Key(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

// QualifiedGroups are the API groups whose kinds share names with the kinds unstick indexed
// first (Cluster: Fleet's): their objects are keyed by kind.group.
var QualifiedGroups = map[string]bool{
	rancher.GroupProvisioning: true, rancher.GroupManagement: true, rancher.GroupCAPI: true, rancher.GroupRKE: true,
}

// KeyFor is the index key of an object of that apiVersion: Key for most, kind.group/... for
// the kinds of QualifiedGroups.
func KeyFor(apiVersion, kind, namespace, name string) string {
	if g := groupOf(apiVersion); QualifiedGroups[g] {
		return Key(kind+"."+g, namespace, name)
	}
	return Key(kind, namespace, name)
}

// GetRef returns the object of that apiVersion/kind/namespace/name (typed, or *Unstructured
// for kinds without a type), or nil.
func (c *Cluster) GetRef(apiVersion, kind, namespace, name string) any {
	if x, ok := c.objIndex[KeyFor(apiVersion, kind, namespace, name)]; ok {
		return x.obj.obj
	}
	return nil
}

// SourceRef is Source for an object named with its apiVersion.
func (c *Cluster) SourceRef(apiVersion, kind, namespace, name string) string {
	return c.objIndex[KeyFor(apiVersion, kind, namespace, name)].sourceOrNone()
}

// OtherOf returns the untyped objects of one API group and kind, in snapshot order.
func (c *Cluster) OtherOf(group, kind string) []*Unstructured {
	var out []*Unstructured
	for _, u := range c.Other {
		if u.Kind == kind && groupOf(u.APIVersion) == group {
			out = append(out, u)
		}
	}
	return out
}

// MachinePlanFor returns the machine-plan status of a machine (rke.cattle.io/machine-name).
func (c *Cluster) MachinePlanFor(namespace, machine string) *rancher.MachinePlan {
	for _, p := range c.MachinePlans {
		if p.Namespace == namespace && p.Machine() == machine {
			return p
		}
	}
	return nil
}

// LogKey is the index key of a container log.
func LogKey(namespace, pod, container string) string { return namespace + "/" + pod + "/" + container }

// Source returns where an object was read from ("file:line" or "live"), if known.
func (c *Cluster) Source(kind, namespace, name string) string {
	return c.objIndex[Key(kind, namespace, name)].sourceOrNone()
}

// sourceOrNone is source, or "" for no object.
func (x indexed) sourceOrNone() string {
	if x.obj == nil {
		return ""
	}
	return x.source()
}

// Get returns the typed object of that kind/namespace/name, or nil.
func (c *Cluster) Get(kind, namespace, name string) any {
	if x, ok := c.objIndex[Key(kind, namespace, name)]; ok {
		return x.obj.obj
	}
	return nil
}

// EventsFor returns the events whose involvedObject is the object of that API group ("" for
// core), kind, namespace and name, oldest first. The group is part of the key: Rancher has four
// kinds named Cluster (Fleet's, provisioning's, management's, CAPI's), often with one name.
func (c *Cluster) EventsFor(group, kind, namespace, name string) []*corev1.Event {
	return c.eventsBy[eventKey(group, kind, namespace, name)]
}

func eventKey(group, kind, namespace, name string) string {
	return group + "|" + Key(kind, namespace, name)
}

// EventGroup is the API group of the object an event is about, as EventsFor keys it. An
// involvedObject without an apiVersion counts as core: the kubelet names its Node that way (a
// reference built by hand, not from a typed object), and every other recorder fills it in.
func EventGroup(e *corev1.Event) string { return groupOf(e.InvolvedObject.APIVersion) }

// HasContent reports whether a Fleet Content object of that name was read.
func (c *Cluster) HasContent(name string) bool { return c.contentIx[name] }

// LogsFor returns the logs of one pod, by container name.
func (c *Cluster) LogsFor(namespace, pod string) []*Log {
	var out []*Log
	for _, l := range c.Logs {
		if l.Namespace == namespace && l.Pod == pod {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Container < out[j].Container })
	return out
}

// HasCRD reports whether a CRD of that name (plural.group) was read.
func (c *Cluster) HasCRD(name string) bool {
	return c.objIndex[Key("CustomResourceDefinition", "", name)].obj != nil
}

// Releases returns every revision of one Helm release, oldest first.
func (c *Cluster) Releases(namespace, name string) []*helmrelease.Release {
	var out []*helmrelease.Release
	for _, r := range c.HelmReleases {
		if r.Namespace == namespace && r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// Cluster returns the named cluster, or nil.
func (s *Snapshot) Cluster(name string) *Cluster {
	s.ensureIndex()
	return s.byName[name]
}

// Reindex rebuilds the lookups after a source renamed or re-matched clusters.
func (s *Snapshot) Reindex() {
	s.byName, s.byFleet = nil, nil
	s.ensureIndex()
}

func (s *Snapshot) ensureIndex() {
	if s.byName != nil {
		return
	}
	s.byName = make(map[string]*Cluster, len(s.Clusters))
	s.byFleet = make(map[string]*Cluster, len(s.Clusters))
	for _, c := range s.Clusters {
		s.byName[c.Name] = c
		if c.FleetCluster != "" {
			if _, dup := s.byFleet[c.FleetCluster]; !dup {
				s.byFleet[c.FleetCluster] = c
			}
		}
	}
}

// Management returns the management clusters (those holding Fleet Cluster objects).
func (s *Snapshot) Management() []*Cluster {
	var out []*Cluster
	for _, c := range s.Clusters {
		if c.Role == Management {
			out = append(out, c)
		}
	}
	return out
}

// ClusterForFleet returns the snapshot cluster matched to Fleet Cluster namespace/name, or nil.
func (s *Snapshot) ClusterForFleet(nsName string) *Cluster {
	s.ensureIndex()
	return s.byFleet[nsName]
}

// ContextSource says where a cluster's kubeconfig context name comes from.
type ContextSource string

const (
	// ContextRecorded: the context the cluster was read through (live), or the one
	// collect recorded in the bundle.
	ContextRecorded ContextSource = "kubeconfig"
	// ContextFromName: nothing recorded a context; the cluster's name stands in for it.
	ContextFromName ContextSource = "cluster name"
	// ContextUnknown: a single-cluster bundle recorded no context, and its cluster's name
	// came from the bundle's directory or metadata, not from a kubeconfig: commands carry
	// a <context> placeholder instead of a guess.
	ContextUnknown ContextSource = "unknown"
)

// ContextPlaceholder is what a command carries as the context of a cluster whose context
// is unknown.
const ContextPlaceholder = "<context>"
