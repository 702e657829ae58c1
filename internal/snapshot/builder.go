package snapshot

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleetconfig"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/redact"
	"github.com/unstick-dev/unstick/internal/suc"
	"github.com/unstick-dev/unstick/internal/yamlbudget"
)

// ClusterInfo is what a source knows of a cluster before reading its objects.
type ClusterInfo struct {
	Name         string
	Role         Role // empty: decided from the objects
	Server       string
	FleetCluster string // namespace/name of its Fleet Cluster, if known
	// Context is the kubeconfig context the cluster was (or, for a bundle, was collected)
	// read through; printed commands carry it as --context. Empty: not known.
	Context string
	// ServerVersion is the API server's version (gitVersion), when the source asked it (live)
	// or recorded it (a collected bundle). Empty: not known.
	ServerVersion string
	// ContextServer, when set, is the API server URL printed commands pass with --server
	// (helm: --kube-apiserver) next to Context: a cluster read through Rancher's proxy with
	// the credentials of a context that points at Rancher itself.
	ContextServer string
	// Kubeconfig, when set, is the kubeconfig file printed commands pass with --kubeconfig:
	// the one given on the command line of a live read. Bundles do not record it.
	Kubeconfig string
}

// Builder collects objects from a source and produces a Snapshot. Add* may be called from
// several goroutines.
type Builder struct {
	mu          sync.Mutex
	clusters    map[string]*Cluster
	infos       map[string]ClusterInfo
	collectedAt time.Time
	live        bool
	newest      time.Time
	errors      []finding.ScanError
	skipped     []Skipped
}

// MaxListed is how many errors, and how many skipped entries, a snapshot lists one by one
// (the first in order); the rest are counted in one closing entry, so that a hostile bundle
// of half a million links does not make a half-million-line report.
const MaxListed = 10_000

// NewBuilder starts an empty snapshot.
func NewBuilder() *Builder {
	return &Builder{clusters: map[string]*Cluster{}, infos: map[string]ClusterInfo{}}
}

// SetCollectedAt records when the source was read.
func (b *Builder) SetCollectedAt(t time.Time) { b.mu.Lock(); b.collectedAt = t; b.mu.Unlock() }

// SetReadLive records that the objects were read from live clusters just now (ClockLive).
func (b *Builder) SetReadLive(t time.Time) {
	b.mu.Lock()
	b.collectedAt, b.live = t, true
	b.mu.Unlock()
}

// DeclareCluster records what is known of a cluster (from metadata or a kubeconfig context).
func (b *Builder) DeclareCluster(info ClusterInfo) {
	// A server URL can carry credentials (https://user:password@host/?token=x), from a
	// kubeconfig or a bundle's metadata: every view shows these fields.
	info.Server, info.ContextServer = redact.String(info.Server), redact.String(info.ContextServer)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.infos[info.Name] = info
	b.cluster(info.Name)
}

// Error records something that could not be read; the scan goes on.
func (b *Builder) Error(e finding.ScanError) {
	b.mu.Lock()
	b.addError(e)
	b.mu.Unlock()
}

// addError keeps e with its message redacted: messages quote files, servers and metadata.
func (b *Builder) addError(e finding.ScanError) {
	e.Message = redact.String(e.Message)
	b.errors = append(b.errors, e)
}

// Skip records a file that held no Kubernetes object.
func (b *Builder) Skip(file, reason string) { b.SkipAt(file, 0, reason) }

// SkipAt records a document at file:line that was not turned into an object.
func (b *Builder) SkipAt(file string, line int, reason string) {
	b.mu.Lock()
	b.skipped = append(b.skipped, Skipped{File: file, Line: line, Reason: reason})
	b.mu.Unlock()
}

// MarkCRDsCollected says that the source listed this cluster's CRDs.
func (b *Builder) MarkCRDsCollected(cluster string) {
	b.mu.Lock()
	b.cluster(cluster).CRDsCollected = true
	b.mu.Unlock()
}

// SetCRDObjects records how many objects CRD crd has on cluster (ObjectsUnknown: the list
// did not say).
func (b *Builder) SetCRDObjects(cluster, crd string, n int) {
	b.mu.Lock()
	c := b.cluster(cluster)
	if c.CRDObjects == nil {
		c.CRDObjects = map[string]int{}
	}
	c.CRDObjects[crd] = n
	b.mu.Unlock()
}

func (b *Builder) cluster(name string) *Cluster {
	c := b.clusters[name]
	if c == nil {
		c = &Cluster{Name: name, Logs: map[string]*Log{}, objIndex: map[string]indexed{}, contentIx: map[string]bool{}}
		b.clusters[name] = c
	}
	return c
}

// Header is the part of any object that says what it is.
type Header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// IsObject reports whether h names a Kubernetes object (or a list of them).
func (h *Header) IsObject() bool { return h.APIVersion != "" && h.Kind != "" }

// IsList reports a List object: kind List, or a typed list (PodList) with items or without a
// name (the API server writes an empty one's items as null).
func (h *Header) IsList() bool {
	return h.Kind == "List" || (strings.HasSuffix(h.Kind, "List") && (h.Items != nil || h.Metadata.Name == ""))
}

// AddJSON decodes one object (never a List: the caller expands those) of any kind into the
// cluster's typed sets. src says where it came from, for evidence and errors.
func (b *Builder) AddJSON(cluster, src string, h *Header, raw []byte) error {
	o, err := Prepare(h, raw)
	if err != nil {
		return err
	}
	b.Add(cluster, src, o)
	return nil
}

// Add puts an object decoded by Prepare into the cluster's typed sets. The same Object may
// be added to many snapshots: nothing here or downstream changes it.
func (b *Builder) Add(cluster, src string, o *Object) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addLocked(b.cluster(cluster), indexed{o, src, -1})
}

// AddItems adds the items of the List read at src, in order (each one's source is
// "src items[i]").
func (b *Builder) AddItems(cluster, src string, objs []*Object) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.cluster(cluster)
	for i, o := range objs {
		b.addLocked(c, indexed{o, src, i})
	}
}

// AddLog records a container log tail.
func (b *Builder) AddLog(cluster, namespace, pod, container string, previous bool, file string, lines []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.cluster(cluster)
	k := LogKey(namespace, pod, container)
	l := c.Logs[k]
	if l == nil {
		l = &Log{Namespace: namespace, Pod: pod, Container: container}
		c.Logs[k] = l
	}
	if previous {
		l.Previous, l.PreviousFile = lines, file
	} else {
		l.Current, l.CurrentFile = lines, file
	}
}

type crdView struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		Group string `json:"group"`
		Names struct {
			Kind   string `json:"kind"`
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name    string `json:"name"`
			Served  bool   `json:"served"`
			Storage bool   `json:"storage"`
		} `json:"versions"`
	} `json:"spec"`
	Status struct {
		StoredVersions []string `json:"storedVersions"`
	} `json:"status"`
}

// decodeTyped turns raw JSON into the type unstick keeps for its kind.
func decodeTyped(h *Header, raw []byte) (any, error) {
	group := h.APIVersion
	if i := strings.Index(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	var target any
	switch group + "/" + h.Kind {
	case "/Pod":
		target = &corev1.Pod{}
	case "/Node":
		target = &corev1.Node{}
	case "/Event":
		target = &corev1.Event{}
	case "events.k8s.io/Event":
		var ev eventsv1.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		return coreEvent(&ev), nil
	case "/Namespace":
		target = &corev1.Namespace{}
	case "/ConfigMap":
		target = &corev1.ConfigMap{}
	case "/Secret":
		return decodeSecret(raw)
	case "/ResourceQuota":
		target = &corev1.ResourceQuota{}
	case "apps/Deployment":
		target = &appsv1.Deployment{}
	case "apps/ReplicaSet":
		target = &appsv1.ReplicaSet{}
	case "apps/DaemonSet":
		target = &appsv1.DaemonSet{}
	case "apps/StatefulSet":
		target = &appsv1.StatefulSet{}
	case "batch/Job":
		target = &batchv1.Job{}
	case "policy/PodDisruptionBudget":
		target = &policyv1.PodDisruptionBudget{}
	case "apiextensions.k8s.io/CustomResourceDefinition":
		target = &crdView{}
	case "fleet.cattle.io/Cluster":
		target = &fleetv1.Cluster{}
	case "fleet.cattle.io/Bundle":
		target = &fleetv1.Bundle{}
	case "fleet.cattle.io/BundleDeployment":
		target = &BundleDeployment{}
	case "fleet.cattle.io/ClusterRegistration":
		target = &fleetv1.ClusterRegistration{}
	case "fleet.cattle.io/GitRepo":
		target = &fleetv1.GitRepo{}
	case "fleet.cattle.io/HelmOp":
		target = &fleetv1.HelmOp{}
	case "fleet.cattle.io/Content":
		var v struct {
			Content []byte `json:"content"`
		}
		fc := &fleetContent{name: h.Metadata.Name}
		if err := json.Unmarshal(raw, &v); err != nil {
			fc.docErr = fmt.Errorf("content: %w", err)
			return fc, nil
		}
		fc.size = len(v.Content)
		fc.docs, fc.docErr = manifest.ContentDocs(v.Content)
		return fc, nil
	case "upgrade.cattle.io/Plan":
		return suc.Decode(raw)
	case "rke.cattle.io/ETCDSnapshot", "k3s.cattle.io/ETCDSnapshotFile":
		return decodeEtcdSnapshot(h, raw)
	default:
		u := &Unstructured{APIVersion: h.APIVersion, Kind: h.Kind, Namespace: h.Metadata.Namespace, Name: h.Metadata.Name}
		if err := json.Unmarshal(raw, &u.Object); err != nil {
			return nil, err
		}
		if md, ok := u.Object["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
		if group == rancher.GroupManagement && h.Kind == rancher.KindSetting && !rancher.KeptSetting(h.Metadata.Name) {
			// Only the settings the checks read keep a value (others may hold anything).
			delete(u.Object, "value")
			delete(u.Object, "default")
		}
		return u, nil
	}
	if err := json.Unmarshal(raw, target); err != nil {
		return nil, err
	}
	trimManagedFields(target)
	return target, nil
}

// trimManagedFields drops an object's managedFields, which no check reads, except a Fleet
// Cluster's entry owning spec.paused: its manager and time say who paused the cluster and
// when (fleet/cluster-paused).
func trimManagedFields(obj any) {
	if fc, ok := obj.(*fleetv1.Cluster); ok {
		var keep []metav1.ManagedFieldsEntry
		for _, mf := range fc.ManagedFields {
			if mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:paused"`) {
				keep = append(keep, metav1.ManagedFieldsEntry{Manager: mf.Manager, Operation: mf.Operation, Time: mf.Time, FieldsType: mf.FieldsType, FieldsV1: mf.FieldsV1})
			}
		}
		fc.ManagedFields = keep
		return
	}
	if m, ok := obj.(interface {
		SetManagedFields([]metav1.ManagedFieldsEntry)
	}); ok {
		m.SetManagedFields(nil)
	}
}

// Object is one object decoded into the type unstick keeps for its kind, trimmed of what no
// check reads and of every Secret payload. It is immutable once Prepare returns it, so a
// long-running source (serve) decodes an object once per change, not once per evaluation.
type Object struct {
	APIVersion, Kind, Namespace, Name string

	key  string
	obj  any
	helm *helmrelease.Release // the release record of a Helm release Secret
	plan *rancher.MachinePlan // the status of a Rancher machine-plan Secret
	// docs are a Fleet Bundle's documents (its resources are dropped); docErr says why some
	// could not be read.
	docs   []manifest.Doc
	docErr error
	// size is a Bundle's weight, measured before its resources are dropped.
	size *ObjectSize
	// cfgErr says why the Fleet controller's config was not read.
	cfgErr error
}

// Prepare decodes one object (never a List) and trims it: managedFields, ConfigMap values
// other than controller settings, Secret payloads (a Helm release Secret keeps its decoded
// release metadata), Bundle resources, CRD schemas.
func Prepare(h *Header, raw []byte) (*Object, error) {
	obj, err := decodeTyped(h, raw)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", h.Kind, h.Metadata.Namespace, h.Metadata.Name, err)
	}
	return finish(h.APIVersion, h.Kind, h.Metadata.Namespace, h.Metadata.Name, obj), nil
}

// finish trims a decoded object (see Prepare) and wraps it.
func finish(apiVersion, kind, namespace, name string, obj any) *Object {
	o := &Object{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name, key: KeyFor(apiVersion, kind, namespace, name)}
	switch t := obj.(type) {
	case *corev1.Event:
		normaliseSeries(t)
	case *corev1.ConfigMap:
		var log string
		if rancher.IsProvisioningLog(t.Namespace, t.Name) {
			log = rancher.LogTail(t.Data[rancher.ProvisioningLogKey])
		}
		checkin := ""
		if fleetconfig.IsControllerConfig(t.Namespace, t.Name) {
			checkin, o.cfgErr = controllerInterval(t.Data[fleetconfig.Key])
		}
		t.Data = keysOnly(t.Data, suc.EnvPrefix)
		if checkin != "" {
			t.Data[fleetconfig.Key] = checkin // the agents' check-in interval, nothing else
		}
		if log != "" {
			t.Data[rancher.ProvisioningLogKey] = log // the planner's history, redacted tail
		}
		t.BinaryData = nil
	case *corev1.Secret:
		if t.Type == helmrelease.SecretType || strings.HasPrefix(t.Name, helmrelease.SecretPrefix) {
			o.helm = helmrelease.FromSecret(t.Name, t.Namespace, t.Labels, t.Data["release"])
			o.helm.StoredBytes = SecretDataBytes(t.Data)
			if s, ok := SizesFromAnnotation(t.Annotations); ok {
				o.helm.StoredBytes = s.Bytes // collected: the record was reduced, its size kept
			}
			// Helm writes error text into the description, which may quote a value: every
			// reader (checks, fix plans, reports) gets it redacted, as log lines are.
			o.helm.Description = redact.String(o.helm.Description)
		}
		if t.Type == rancher.SecretTypeMachinePlan {
			// The plan bodies hold the cluster's join tokens: only checksums and the status
			// keys rancher-system-agent writes back survive.
			safe, problems := rancher.SafeData(t.Data)
			o.plan = rancher.FromSafeData(t.Namespace, t.Name, t.Labels, t.Annotations, safe)
			o.plan.Problems = problems
		}
		for k := range t.Data {
			t.Data[k] = nil // payloads never leave the loader
		}
		t.StringData = nil
	case *crdView:
		v := &CRD{Name: t.Metadata.Name, UID: string(t.Metadata.UID), ResourceVersion: t.Metadata.ResourceVersion, Group: t.Spec.Group, Kind: t.Spec.Names.Kind, Plural: t.Spec.Names.Plural, StoredVersions: t.Status.StoredVersions}
		for _, ver := range t.Spec.Versions {
			v.Versions = append(v.Versions, CRDVersion{Name: ver.Name, Served: ver.Served, Storage: ver.Storage})
		}
		obj = v
	case *fleetv1.Bundle:
		size := MeasureBundle(t)
		if s, ok := SizesFromAnnotation(t.Annotations); ok && len(t.Spec.Resources) == 0 {
			size = s // collected: the resources were reduced, their sizes kept
		}
		o.size = &size
		rs := make([]manifest.Resource, 0, len(t.Spec.Resources))
		for _, r := range t.Spec.Resources {
			rs = append(rs, manifest.Resource{Name: r.Name, Content: r.Content, Encoding: r.Encoding})
		}
		o.docs, o.docErr = manifest.ResourceDocs(rs)
		t.Spec.Resources = nil // payload: only its documents' identities are kept
	case *fleetv1.GitRepo:
		trimGitRepo(t)
	case *fleetv1.HelmOp:
		trimHelmOp(t)
	}
	o.obj = obj
	return o
}

// trimGitRepo drops what no check reads of a GitRepo and could be large (the per-resource
// status, one entry per deployed object) or secret (a CA bundle; a password in the repo URL).
func trimGitRepo(g *fleetv1.GitRepo) {
	g.Status.Resources, g.Status.PerClusterResourceCounts = nil, nil
	g.Spec.CABundle = nil
	g.Spec.Repo = redact.String(g.Spec.Repo)
	for i := range g.Status.Conditions {
		g.Status.Conditions[i].Message = redact.String(g.Status.Conditions[i].Message)
	}
	g.Status.Display.Message = redact.String(g.Status.Display.Message)
}

// trimHelmOp drops a HelmOp's values (they may carry credentials; no check reads them),
// inline resources and per-resource status.
func trimHelmOp(h *fleetv1.HelmOp) {
	h.Spec.Resources, h.Spec.Targets, h.Spec.TargetRestrictions = nil, nil, nil
	h.Status.Resources, h.Status.PerClusterResourceCounts = nil, nil
	if h.Spec.Helm != nil {
		h.Spec.Helm.Values, h.Spec.Helm.ValuesFrom = nil, nil
		h.Spec.Helm.Repo = redact.String(h.Spec.Helm.Repo)
	}
}

// fleetContent is what is kept of a Fleet Content: its name and its documents' identities.
type fleetContent struct {
	name   string
	size   int // bytes of its payload; 0 when the source kept none (metadata only)
	docs   []manifest.Doc
	docErr error
}

// controllerInterval reduces the Fleet controller's config to its check-in interval. A config
// that does not parse is read as unset; one whose YAML aliases expand past fleetconfig's bound
// is too, and the error says so.
func controllerInterval(config string) (string, error) {
	if err := fleetconfig.CheckAliases(config); errors.As(err, new(*yamlbudget.TooLarge)) {
		return "", err
	}
	return fleetconfig.Reduce(config), nil
}

// decodeSecret reads a Secret whose data values may not be valid base64 (a hand-edited or
// truncated dump): such a value is kept as written, so a Helm release payload that cannot be
// read still yields a release record from its labels instead of losing the Secret.
func decodeSecret(raw []byte) (*corev1.Secret, error) {
	var view struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Type              corev1.SecretType `json:"type"`
		Data              map[string]string `json:"data"`
	}
	if err := json.Unmarshal(raw, &view); err != nil {
		return nil, err
	}
	sec := &corev1.Secret{TypeMeta: view.TypeMeta, ObjectMeta: view.ObjectMeta, Type: view.Type, Data: map[string][]byte{}}
	sec.ManagedFields = nil
	for k, v := range view.Data {
		if d, err := base64.StdEncoding.DecodeString(v); err == nil {
			sec.Data[k] = d
		} else {
			sec.Data[k] = []byte(v)
		}
	}
	return sec, nil
}

func coreEvent(ev *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          ev.ObjectMeta,
		InvolvedObject:      ev.Regarding,
		Reason:              ev.Reason,
		Message:             ev.Note,
		Type:                ev.Type,
		EventTime:           ev.EventTime,
		ReportingController: ev.ReportingController,
		ReportingInstance:   ev.ReportingInstance,
		Action:              ev.Action,
		Count:               1,
		FirstTimestamp:      ev.DeprecatedFirstTimestamp,
		LastTimestamp:       ev.DeprecatedLastTimestamp,
	}
	if ev.Series != nil {
		out.Count = ev.Series.Count
		out.LastTimestamp = metav1.Time{Time: ev.Series.LastObservedTime.Time}
	}
	if ev.DeprecatedCount > 0 {
		out.Count = ev.DeprecatedCount
	}
	return out
}

func (b *Builder) addLocked(c *Cluster, x indexed) {
	o := x.obj
	if old, ok := c.objIndex[o.key]; ok {
		// The same object twice (a dump and a list, say): the copy read from the file that
		// sorts first wins, whichever was read first, so the same bundle always gives the
		// same snapshot.
		if x.source() >= old.source() {
			return
		}
		c.remove(old.obj)
	}
	src := x.src // what errors name: the file and line (an item's index is not part of it)
	switch t := o.obj.(type) {
	case *corev1.Pod:
		c.Pods = append(c.Pods, t)
	case *corev1.Node:
		c.Nodes = append(c.Nodes, t)
	case *corev1.Event:
		c.Events = append(c.Events, t)
	case *corev1.Namespace:
		c.Namespaces = append(c.Namespaces, t)
	case *corev1.ConfigMap:
		if o.cfgErr != nil {
			file, line := splitSource(src)
			b.addError(finding.ScanError{Cluster: c.Name, File: file, Line: line,
				Message: fmt.Sprintf("Fleet controller ConfigMap %s/%s: %s not read: %v", t.Namespace, t.Name, fleetconfig.Key, o.cfgErr)})
		}
		c.ConfigMaps = append(c.ConfigMaps, t)
	case *corev1.Secret:
		if r := o.helm; r != nil {
			file, line := splitSource(src)
			switch {
			case r.Malformed != nil:
				// Never judged, planned or acted on: its Secret could be anyone's forgery.
				b.addError(finding.ScanError{Cluster: c.Name, File: file, Line: line,
					Message: fmt.Sprintf("Helm release Secret %s/%s is malformed: %v (ignored: never acted on)", t.Namespace, t.Name, r.Malformed)})
			case r.PayloadError != nil:
				b.addError(finding.ScanError{Cluster: c.Name, File: file, Line: line,
					Message: fmt.Sprintf("Helm release Secret %s/%s: %v (using its labels only)", t.Namespace, t.Name, r.PayloadError)})
			}
			if r.Malformed == nil {
				c.HelmReleases = append(c.HelmReleases, r)
			}
		}
		if p := o.plan; p != nil {
			file, line := splitSource(src)
			for _, msg := range p.Problems {
				b.addError(finding.ScanError{Cluster: c.Name, File: file, Line: line,
					Message: fmt.Sprintf("machine-plan Secret %s/%s: %s (ignored)", t.Namespace, t.Name, msg)})
			}
			c.MachinePlans = append(c.MachinePlans, p)
		}
		c.Secrets = append(c.Secrets, t)
	case *corev1.ResourceQuota:
		c.ResourceQuotas = append(c.ResourceQuotas, t)
	case *appsv1.Deployment:
		c.Deployments = append(c.Deployments, t)
	case *appsv1.ReplicaSet:
		c.ReplicaSets = append(c.ReplicaSets, t)
	case *appsv1.DaemonSet:
		c.DaemonSets = append(c.DaemonSets, t)
	case *appsv1.StatefulSet:
		c.StatefulSets = append(c.StatefulSets, t)
	case *batchv1.Job:
		c.Jobs = append(c.Jobs, t)
	case *policyv1.PodDisruptionBudget:
		c.PodDisruptionBudgets = append(c.PodDisruptionBudgets, t)
	case *CRD:
		c.CRDs = append(c.CRDs, t)
		c.CRDsCollected = true
	case *fleetv1.Cluster:
		c.FleetClusters = append(c.FleetClusters, t)
	case *fleetv1.Bundle:
		c.Bundles = append(c.Bundles, t)
		if o.size != nil {
			if c.BundleSizes == nil {
				c.BundleSizes = map[string]ObjectSize{}
			}
			c.BundleSizes[t.Namespace+"/"+t.Name] = *o.size
		}
		if len(o.docs) > 0 {
			if c.BundleDocs == nil {
				c.BundleDocs = map[string][]manifest.Doc{}
			}
			c.BundleDocs[t.Namespace+"/"+t.Name] = o.docs
		}
		if o.docErr != nil {
			file, line := splitSource(src)
			b.addError(finding.ScanError{Cluster: c.Name, File: file, Line: line, Message: fmt.Sprintf("Fleet Bundle %s/%s: %v", t.Namespace, t.Name, o.docErr)})
		}
	case *BundleDeployment:
		c.BundleDeployments = append(c.BundleDeployments, t)
	case *fleetv1.ClusterRegistration:
		c.ClusterRegistrations = append(c.ClusterRegistrations, t)
	case *fleetv1.GitRepo:
		c.GitRepos = append(c.GitRepos, t)
	case *fleetv1.HelmOp:
		c.HelmOps = append(c.HelmOps, t)
	case *fleetContent:
		c.Contents = append(c.Contents, t.name)
		c.contentIx[t.name] = true
		if t.size > 0 {
			if c.ContentBytes == nil {
				c.ContentBytes = map[string]int{}
			}
			c.ContentBytes[t.name] = t.size
		}
		if len(t.docs) > 0 {
			if c.ContentDocs == nil {
				c.ContentDocs = map[string][]manifest.Doc{}
			}
			c.ContentDocs[t.name] = t.docs
		}
		if t.docErr != nil {
			file, line := splitSource(src)
			b.addError(finding.ScanError{Cluster: c.Name, File: file, Line: line, Message: fmt.Sprintf("Fleet Content %s: %v", t.name, t.docErr)})
		}
	case *suc.Plan:
		c.Plans = append(c.Plans, t)
	case *EtcdSnapshot:
		c.EtcdSnapshots = append(c.EtcdSnapshots, t)
	case *Unstructured:
		c.Other = append(c.Other, t)
	}
	c.objIndex[o.key] = x
}

// remove takes a duplicate's first copy out of the typed sets (rare: only duplicates come here).
func (c *Cluster) remove(old *Object) {
	switch t := old.obj.(type) {
	case *corev1.Pod:
		c.Pods = without(c.Pods, t)
	case *corev1.Node:
		c.Nodes = without(c.Nodes, t)
	case *corev1.Event:
		c.Events = without(c.Events, t)
	case *corev1.Namespace:
		c.Namespaces = without(c.Namespaces, t)
	case *corev1.ConfigMap:
		c.ConfigMaps = without(c.ConfigMaps, t)
	case *corev1.Secret:
		c.Secrets = without(c.Secrets, t)
		if old.helm != nil {
			c.HelmReleases = without(c.HelmReleases, old.helm)
		}
		if old.plan != nil {
			c.MachinePlans = without(c.MachinePlans, old.plan)
		}
	case *corev1.ResourceQuota:
		c.ResourceQuotas = without(c.ResourceQuotas, t)
	case *appsv1.Deployment:
		c.Deployments = without(c.Deployments, t)
	case *appsv1.ReplicaSet:
		c.ReplicaSets = without(c.ReplicaSets, t)
	case *appsv1.DaemonSet:
		c.DaemonSets = without(c.DaemonSets, t)
	case *appsv1.StatefulSet:
		c.StatefulSets = without(c.StatefulSets, t)
	case *batchv1.Job:
		c.Jobs = without(c.Jobs, t)
	case *policyv1.PodDisruptionBudget:
		c.PodDisruptionBudgets = without(c.PodDisruptionBudgets, t)
	case *CRD:
		c.CRDs = without(c.CRDs, t)
	case *fleetv1.Cluster:
		c.FleetClusters = without(c.FleetClusters, t)
	case *fleetv1.Bundle:
		c.Bundles = without(c.Bundles, t)
		delete(c.BundleDocs, t.Namespace+"/"+t.Name)
		delete(c.BundleSizes, t.Namespace+"/"+t.Name)
	case *BundleDeployment:
		c.BundleDeployments = without(c.BundleDeployments, t)
	case *fleetv1.ClusterRegistration:
		c.ClusterRegistrations = without(c.ClusterRegistrations, t)
	case *fleetv1.GitRepo:
		c.GitRepos = without(c.GitRepos, t)
	case *fleetv1.HelmOp:
		c.HelmOps = without(c.HelmOps, t)
	case *fleetContent:
		c.Contents = without(c.Contents, t.name)
		delete(c.ContentDocs, t.name)
		delete(c.ContentBytes, t.name)
	case *suc.Plan:
		c.Plans = without(c.Plans, t)
	case *EtcdSnapshot:
		c.EtcdSnapshots = without(c.EtcdSnapshots, t)
	case *Unstructured:
		c.Other = without(c.Other, t)
	}
}

func without[T comparable](s []T, x T) []T {
	for i, v := range s {
		if v == x {
			return append(s[:i:i], s[i+1:]...)
		}
	}
	return s
}

var sourceLine = lazyre.New(`^(.*?):(\d+)(?: .*)?$`)

// splitSource splits an evidence source "file:line items[3]" into the file and the line.
func splitSource(src string) (string, int) {
	if m := sourceLine().FindStringSubmatch(src); m != nil {
		n, _ := strconv.Atoi(m[2])
		return m[1], n
	}
	return src, 0
}

// keysOnly drops ConfigMap values, except those of keys starting with keep: controller
// settings the checks read (system-upgrade-controller's SYSTEM_UPGRADE_* in
// default-controller-env), which are configuration, not secrets.
func keysOnly(m map[string]string, keep string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if keep != "" && strings.HasPrefix(k, keep) {
			out[k] = v
		} else {
			out[k] = ""
		}
	}
	return out
}

// Build finishes the snapshot: roles, Fleet matching, indexes, evaluation time.
func (b *Builder) Build() *Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &Snapshot{CollectedAt: b.collectedAt, Errors: b.errors, Skipped: b.skipped}
	if s.Skipped == nil {
		s.Skipped = []Skipped{} // a report's skipped list is always present, even empty
	}
	names := make([]string, 0, len(b.clusters))
	for n := range b.clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := b.clusters[n]
		info := b.infos[n]
		c.Role, c.Server, c.FleetCluster = info.Role, info.Server, info.FleetCluster
		c.ServerVersion = info.ServerVersion
		c.Context, c.ContextSource, c.ContextServer = info.Context, ContextRecorded, info.ContextServer
		c.Kubeconfig = info.Kubeconfig
		if c.Context == "" {
			// A bundle that does not say how it was collected: the cluster's name is the
			// best guess, and the report says it is one.
			c.Context, c.ContextSource = c.Name, ContextFromName
		}
		if c.Role == "" {
			c.Role = Downstream
			if len(c.FleetClusters) > 0 {
				c.Role = Management
			}
		}
		c.indexEvents()
		sortCluster(c)
		s.Clusters = append(s.Clusters, c)
	}
	matchFleetClusters(s)
	s.Reindex()
	if s.CollectedAt.IsZero() {
		s.CollectedAt, s.IgnoredTimes = robustNewest(s)
		if !s.CollectedAt.IsZero() {
			s.ClockSource = ClockNewest
		}
	} else if b.live {
		s.ClockSource = ClockLive
	} else if s.ClockSource == "" {
		s.ClockSource = ClockRecorded
	}
	sort.SliceStable(s.Errors, func(i, j int) bool { return s.Errors[i].String() < s.Errors[j].String() })
	if n := len(s.Errors) - MaxListed; n > 0 {
		first := s.Errors[MaxListed]
		s.Errors = append(s.Errors[:MaxListed:MaxListed], finding.ScanError{Cluster: first.Cluster, File: first.File, Line: first.Line,
			Message: fmt.Sprintf("this and %d more errors, not listed (the first %d are)", n-1, MaxListed)})
	}
	sort.SliceStable(s.Skipped, func(i, j int) bool {
		a, b := s.Skipped[i], s.Skipped[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Reason < b.Reason
	})
	if n := len(s.Skipped) - MaxListed; n > 0 {
		first := s.Skipped[MaxListed]
		s.Skipped = append(s.Skipped[:MaxListed:MaxListed], Skipped{File: first.File, Line: first.Line,
			Reason: fmt.Sprintf("this and %d more skipped entries, not listed (the first %d are)", n-1, MaxListed)})
	}
	return s
}

func (c *Cluster) indexEvents() {
	c.eventsBy = map[string][]*corev1.Event{}
	for _, e := range c.Events {
		k := eventKey(EventGroup(e), e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		c.eventsBy[k] = append(c.eventsBy[k], e)
	}
	for _, evs := range c.eventsBy {
		sort.SliceStable(evs, func(i, j int) bool { return EventTime(evs[i]).Before(EventTime(evs[j])) })
	}
}

// normaliseSeries folds an event series (what the scheduler and other events.k8s.io recorders
// write: eventTime + series{count, lastObservedTime}, no first/lastTimestamp) into the
// count/lastTimestamp the checks read.
func normaliseSeries(e *corev1.Event) {
	if e.Series == nil {
		return
	}
	if e.Series.Count > e.Count {
		e.Count = e.Series.Count
	}
	if t := e.Series.LastObservedTime.Time; t.After(e.LastTimestamp.Time) {
		e.LastTimestamp = metav1.Time{Time: t}
	}
}

// EventTime is the latest time an event was seen.
func EventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// EventFirstTime is the earliest time an event was seen.
func EventFirstTime(e *corev1.Event) time.Time {
	switch {
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return EventTime(e)
}

func sortCluster(c *Cluster) {
	byNsName := func(a, b named) bool {
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	}
	sort.Slice(c.Pods, func(i, j int) bool { return byNsName(c.Pods[i], c.Pods[j]) })
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
	sort.Slice(c.Deployments, func(i, j int) bool { return byNsName(c.Deployments[i], c.Deployments[j]) })
	sort.Slice(c.FleetClusters, func(i, j int) bool { return byNsName(c.FleetClusters[i], c.FleetClusters[j]) })
	sort.Slice(c.BundleDeployments, func(i, j int) bool { return byNsName(c.BundleDeployments[i], c.BundleDeployments[j]) })
	sort.Slice(c.ClusterRegistrations, func(i, j int) bool { return byNsName(c.ClusterRegistrations[i], c.ClusterRegistrations[j]) })
	sort.Slice(c.GitRepos, func(i, j int) bool { return byNsName(c.GitRepos[i], c.GitRepos[j]) })
	sort.Slice(c.HelmOps, func(i, j int) bool { return byNsName(c.HelmOps[i], c.HelmOps[j]) })
	sort.Slice(c.Jobs, func(i, j int) bool { return byNsName(c.Jobs[i], c.Jobs[j]) })
	sort.Slice(c.Plans, func(i, j int) bool { return byNsName(c.Plans[i], c.Plans[j]) })
	sort.Slice(c.PodDisruptionBudgets, func(i, j int) bool { return byNsName(c.PodDisruptionBudgets[i], c.PodDisruptionBudgets[j]) })
	sort.Slice(c.MachinePlans, func(i, j int) bool {
		a, b := c.MachinePlans[i], c.MachinePlans[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	sort.SliceStable(c.Other, func(i, j int) bool {
		a, b := c.Other[i], c.Other[j]
		if a.APIVersion != b.APIVersion {
			return a.APIVersion < b.APIVersion
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	sort.Slice(c.EtcdSnapshots, func(i, j int) bool {
		a, b := c.EtcdSnapshots[i], c.EtcdSnapshots[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	sort.Slice(c.CRDs, func(i, j int) bool { return c.CRDs[i].Name < c.CRDs[j].Name })
	sort.Slice(c.HelmReleases, func(i, j int) bool {
		a, b := c.HelmReleases[i], c.HelmReleases[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Revision < b.Revision
	})
}

// Labels Rancher puts on the Fleet Clusters it creates.
const (
	LabelRancherClusterName = "management.cattle.io/cluster-name"
	LabelRancherDisplayName = "management.cattle.io/cluster-display-name"
)

// matchFleetClusters ties each downstream cluster to its Fleet Cluster on a management cluster.
func matchFleetClusters(s *Snapshot) {
	// Every name a Fleet Cluster is known by, first writer wins (Fleet names beat labels).
	byName := map[string]*fleetv1.Cluster{}
	for pass := 0; pass < 3; pass++ {
		for _, m := range s.Management() {
			for _, fc := range m.FleetClusters {
				key := []string{fc.Name, fc.Labels[LabelRancherClusterName], fc.Labels[LabelRancherDisplayName]}[pass]
				if _, seen := byName[key]; key != "" && !seen {
					byName[key] = fc
				}
			}
		}
	}
	for _, c := range s.Clusters {
		if c.FleetCluster != "" || c.Role == Management && len(c.FleetClusters) > 0 && !hasLocalAgent(c) {
			continue
		}
		fc := byName[c.Name]
		if fc == nil {
			fc = byName[rancherClusterID(c.Server)]
		}
		if fc == nil {
			fc = registeredAs(s, c)
		}
		if fc != nil {
			c.FleetCluster = fc.Namespace + "/" + fc.Name
		}
	}
	// A management cluster managing itself: Rancher's and Fleet's "local" cluster.
	for _, m := range s.Management() {
		if m.FleetCluster != "" {
			continue
		}
		for _, fc := range m.FleetClusters {
			if fc.Name == "local" && fc.Namespace == "fleet-local" {
				m.FleetCluster = "fleet-local/local"
			}
		}
	}
}

// registeredAs is the Fleet Cluster a downstream cluster registered as, when its name is none of
// the names the Fleet Cluster goes by (agent-initiated registration names it cluster-<hash>):
// the one whose spec.clientID is the cluster's kube-system namespace UID (what the agent sends
// when its config sets no clientID), or the one whose agent bundle (fleet-agent-<cluster>,
// targeting that cluster by name) the cluster's agent installed as a Helm release.
// Tested on bundles the real Fleet produced (registered_test.go).
func registeredAs(s *Snapshot, c *Cluster) *fleetv1.Cluster {
	if c.Role == Management && len(c.FleetClusters) > 0 {
		return nil
	}
	var uid string
	for _, ns := range c.Namespaces {
		if ns.Name == "kube-system" {
			uid = string(ns.UID)
		}
	}
	releases := map[string]bool{}
	for _, r := range c.HelmReleases {
		if r.Namespace == "cattle-fleet-system" || strings.HasPrefix(r.Name, "fleet-agent") {
			releases[r.Name] = true
		}
	}
	for _, m := range s.Management() {
		if m == c {
			continue
		}
		for _, fc := range m.FleetClusters {
			// The clientID the agent registered with: the downstream kube-system UID (the
			// agent's default), or the cluster's own name, as Fleet's docs suggest setting it.
			if uid != "" && fc.Spec.ClientID == uid || fc.Spec.ClientID != "" && fc.Spec.ClientID == c.Name {
				return fc
			}
			// agentmanagement names a cluster's agent bundle, and so the agent's own Helm
			// release on it, fleet-agent-<Fleet Cluster> (a collected Bundle keeps no targets).
			if releases["fleet-agent-"+fc.Name] {
				return fc
			}
		}
		for _, b := range m.Bundles {
			if !releases[b.Name] || !strings.HasPrefix(b.Name, "fleet-agent-") {
				continue
			}
			for _, tg := range b.Spec.Targets {
				if tg.ClusterName == "" {
					continue
				}
				for _, fc := range m.FleetClusters {
					if fc.Namespace == b.Namespace && fc.Name == tg.ClusterName {
						return fc
					}
				}
			}
		}
	}
	return nil
}

// rancherClusterID is the cluster ID in a server URL proxied by Rancher:
// https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt.
func rancherClusterID(server string) string {
	_, rest, ok := strings.Cut(server, "/k8s/clusters/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}

func hasLocalAgent(c *Cluster) bool {
	for _, fc := range c.FleetClusters {
		if fc.Name == c.Name {
			return true
		}
	}
	return false
}

// newestTimestamp is the evaluation time of a bundle without metadata: the newest time any
// object records. Times stamped by an agent's or a kubelet's own clock (Fleet check-ins,
// node heartbeats) only count when nothing else does: a clock running fast would otherwise
// move "now" forward, hide its own skew and age everything else.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// ParseTime reads the RFC 3339 strings Fleet's generic conditions use; zero if empty or bad.
func ParseTime(s string) time.Time { return parseTime(s) }
