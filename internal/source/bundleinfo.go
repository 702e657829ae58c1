package source

import (
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// BundleInfoFile is the metadata file at the root of a bundle (docs/bundle-format.md).
const BundleInfoFile = "unstick-bundle.yaml"

// BundleInfoKind and BundleInfoAPIVersion identify the metadata document.
const (
	BundleInfoKind       = "BundleInfo"
	BundleInfoAPIVersion = "unstick.dev/v1alpha1"
)

// BundleInfo is the collection metadata `unstick collect` writes.
type BundleInfo struct {
	APIVersion  string              `json:"apiVersion"`
	Kind        string              `json:"kind"`
	CollectedAt time.Time           `json:"collectedAt"`
	Collector   string              `json:"collector,omitempty"`
	Clusters    []BundleInfoCluster `json:"clusters,omitempty"`
	Redacted    []string            `json:"redacted,omitempty"`
	// Errors are what went wrong while collecting; a scan of the bundle reports them again.
	Errors []finding.ScanError `json:"errors,omitempty"`
}

// BundleInfoCluster describes one cluster of a bundle.
type BundleInfoCluster struct {
	Name    string        `json:"name"`
	Role    snapshot.Role `json:"role,omitempty"`
	Server  string        `json:"server,omitempty"`
	Context string        `json:"context,omitempty"`
	// ContextServer is the --server that goes with Context (a cluster read through
	// Rancher's proxy with a Rancher context's credentials).
	ContextServer string `json:"contextServer,omitempty"`
	FleetCluster  string `json:"fleetCluster,omitempty"`
	// CRDsCollected says the cluster's CRDs were listed, so an absent one is missing.
	CRDsCollected bool `json:"crdsCollected,omitempty"`
	// KubernetesVersion is the API server's version when the bundle was collected.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// CRDObjects counts, by CRD name, the objects of each CRD with stored versions to
	// migrate, as the live list said when collecting (a count the server did not give is
	// left out).
	CRDObjects map[string]int `json:"crdObjects,omitempty"`
}

// ParseBundleInfo reads and validates a metadata document.
func ParseBundleInfo(b []byte) (*BundleInfo, error) {
	var bi BundleInfo
	if mayAlias(b) {
		x, err := yamlExpansion(b)
		if err != nil {
			return nil, err
		}
		if x.need() > DefaultMaxMemory {
			return nil, errors.New(aliasLimit(x, DefaultMaxMemory))
		}
	}
	if err := yaml.UnmarshalStrict(b, &bi); err != nil {
		return nil, err
	}
	if bi.Kind != BundleInfoKind {
		return nil, fmt.Errorf("kind is %q, want %s", bi.Kind, BundleInfoKind)
	}
	for i, c := range bi.Clusters {
		if c.Name == "" {
			return nil, fmt.Errorf("clusters[%d]: name is required", i)
		}
		switch c.Role {
		case "", snapshot.Management, snapshot.Downstream:
		default:
			return nil, fmt.Errorf("clusters[%d] (%s): role %q is not management or downstream", i, c.Name, c.Role)
		}
	}
	return &bi, nil
}

// Marshal renders the metadata document.
func (bi *BundleInfo) Marshal() ([]byte, error) {
	bi.APIVersion, bi.Kind = BundleInfoAPIVersion, BundleInfoKind
	return yaml.Marshal(bi)
}
