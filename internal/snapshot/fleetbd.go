package snapshot

import (
	"encoding/json"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"github.com/rancher/wrangler/v3/pkg/genericcondition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BundleDeployment is what unstick keeps of a Fleet BundleDeployment (fleet.cattle.io/v1alpha1):
// the fields its checks and fix plans read, under Fleet's own JSON names, decoded straight
// from the object as Fleet writes it. A management cluster holds one per downstream cluster
// and bundle — 50,000 in a fleet of 5,000 clusters — and Fleet's Go type is over a kilobyte
// before any field is set (two sets of deployment options, resource lists, display and
// counts), so `serve` keeping every one decoded for hours keeps this form instead. Fields not
// here are simply not read; the sub-types are Fleet's.
type BundleDeployment struct {
	metav1.TypeMeta `json:",inline"`
	Meta            `json:"metadata"`
	Spec            BundleDeploymentSpec   `json:"spec"`
	Status          BundleDeploymentStatus `json:"status"`
}

// Meta is the part of an object's metadata kept for slim kinds: its identity, the resource
// version a fix guards on, and the labels unstick reads (see Labels).
type Meta struct {
	Name            string    `json:"name"`
	Namespace       string    `json:"namespace,omitempty"`
	UID             types.UID `json:"uid,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Labels          Labels    `json:"labels,omitempty"`
	// DeletionTimestamp says the object is being deleted (held by a finalizer while set).
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
}

func (m *Meta) GetName() string                              { return m.Name }
func (m *Meta) GetNamespace() string                         { return m.Namespace }
func (m *Meta) GetUID() types.UID                            { return m.UID }
func (m *Meta) GetResourceVersion() string                   { return m.ResourceVersion }
func (m *Meta) SetManagedFields([]metav1.ManagedFieldsEntry) {} // never kept

// BundleDeploymentSpec holds the deployment IDs that say what the controller wants applied,
// and the options that change how a bundle is fetched or named.
type BundleDeploymentSpec struct {
	DeploymentID       string `json:"deploymentID,omitempty"`
	StagedDeploymentID string `json:"stagedDeploymentID,omitempty"`
	Paused             bool   `json:"paused,omitempty"`
	OffSchedule        bool   `json:"offSchedule,omitempty"`
	OCIContents        bool   `json:"ociContents,omitempty"`
	// HelmChartOptions is set when the agent pulls the chart itself (no Content); only its
	// presence is read.
	HelmChartOptions *struct{}               `json:"helmChartOptions,omitempty"`
	Options          BundleDeploymentOptions `json:"options,omitempty"`
}

// BundleDeploymentOptions keeps, of Fleet's deployment options, the Helm release name and
// the namespaces the release goes to.
type BundleDeploymentOptions struct {
	Helm *HelmOptions `json:"helm,omitempty"`
	// Namespace forces every resource (and the Helm release) into one namespace;
	// DefaultNamespace is the release's namespace otherwise.
	Namespace        string `json:"namespace,omitempty"`
	DefaultNamespace string `json:"defaultNamespace,omitempty"`
}

// ReleaseNamespace is the namespace of the Helm release Fleet deploys: options.namespace,
// else options.defaultNamespace, else Fleet's "default".
func (o BundleDeploymentOptions) ReleaseNamespace() string {
	switch {
	case o.Namespace != "":
		return o.Namespace
	case o.DefaultNamespace != "":
		return o.DefaultNamespace
	}
	return "default"
}

// HelmOptions keeps, of Fleet's Helm options, the release name (values are not kept).
type HelmOptions struct {
	ReleaseName string `json:"releaseName,omitempty"`
}

// BundleDeploymentStatus is what the agent reports: the deployment it applied, readiness,
// drift, and Fleet's per-resource summaries.
type BundleDeploymentStatus struct {
	Conditions          []genericcondition.GenericCondition `json:"conditions,omitempty"`
	AppliedDeploymentID string                              `json:"appliedDeploymentID,omitempty"`
	Ready               bool                                `json:"ready,omitempty"`
	NonModified         bool                                `json:"nonModified,omitempty"`
	NonReadyStatus      []fleetv1.NonReadyStatus            `json:"nonReadyStatus,omitempty"`
	ModifiedStatus      []fleetv1.ModifiedStatus            `json:"modifiedStatus,omitempty"`
}

// keptLabels are the labels read from slim kinds: the ones Fleet sets on every
// BundleDeployment to name its Bundle and target Cluster (see package fleet).
var keptLabels = [...]string{
	"fleet.cattle.io/bundle-name", "fleet.cattle.io/bundle-namespace",
	"fleet.cattle.io/cluster", "fleet.cattle.io/cluster-namespace",
}

// Labels are the kept labels of a slim object, in the order of keptLabels. A handful of
// pairs in a slice costs a third of what a map costs.
type Labels []Label

// Label is one label.
type Label struct{ Key, Value string }

// Get returns the value of a label, or "".
func (l Labels) Get(key string) string {
	for _, x := range l {
		if x.Key == key {
			return x.Value
		}
	}
	return ""
}

// UnmarshalJSON reads a labels map, keeping the labels unstick reads.
func (l *Labels) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	return l.keep(m)
}

// keep sets l to the kept labels of m.
func (l *Labels) keep(m map[string]string) error {
	n := 0
	for _, k := range keptLabels {
		if _, ok := m[k]; ok {
			n++
		}
	}
	*l = nil
	if n > 0 {
		*l = make(Labels, 0, n)
	}
	for _, k := range keptLabels {
		if v, ok := m[k]; ok {
			*l = append(*l, Label{k, v})
		}
	}
	return nil
}

// MarshalJSON writes the kept labels as a map.
func (l Labels) MarshalJSON() ([]byte, error) {
	m := make(map[string]string, len(l))
	for _, x := range l {
		m[x.Key] = x.Value
	}
	return json.Marshal(m)
}
