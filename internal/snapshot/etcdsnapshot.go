package snapshot

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LabelRKEClusterName is the label Rancher puts on rke.cattle.io objects of a provisioned
// cluster.
const LabelRKEClusterName = "rke.cattle.io/cluster-name"

// decodeEtcdSnapshot reads the two snapshot record kinds into one shape.
//
// rke.cattle.io/v1 ETCDSnapshot (rancher/rancher pkg/apis/rke.cattle.io/v1/etcdsnapshot_types.go):
// spec.clusterName; snapshotFile{name, nodeName, location, createdAt, status, message};
// status.missing.
//
// k3s.cattle.io/v1 ETCDSnapshotFile (k3s-io/k3s pkg/apis/k3s.cattle.io/v1/types.go):
// spec{snapshotName, nodeName, location}; status{creationTime, readyToUse, error{message}}.
func decodeEtcdSnapshot(h *Header, raw []byte) (*EtcdSnapshot, error) {
	var v struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
		Spec     struct {
			ClusterName  string `json:"clusterName"`
			SnapshotName string `json:"snapshotName"`
			NodeName     string `json:"nodeName"`
			Location     string `json:"location"`
		} `json:"spec"`
		SnapshotFile struct {
			Name      string       `json:"name"`
			NodeName  string       `json:"nodeName"`
			Location  string       `json:"location"`
			CreatedAt *metav1.Time `json:"createdAt"`
			Status    string       `json:"status"`
			Message   string       `json:"message"`
		} `json:"snapshotFile"`
		Status struct {
			Missing      bool         `json:"missing"`
			CreationTime *metav1.Time `json:"creationTime"`
			ReadyToUse   *bool        `json:"readyToUse"`
			Error        *struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	s := &EtcdSnapshot{Kind: h.Kind, Namespace: v.Metadata.Namespace, Name: v.Metadata.Name}
	if h.Kind == "ETCDSnapshot" {
		s.Cluster = v.Spec.ClusterName
		if s.Cluster == "" {
			s.Cluster = v.Metadata.Labels[LabelRKEClusterName]
		}
		s.Node, s.Location, s.Message = v.SnapshotFile.NodeName, v.SnapshotFile.Location, v.SnapshotFile.Message
		if v.SnapshotFile.CreatedAt != nil {
			s.CreatedAt = v.SnapshotFile.CreatedAt.Time
		}
		// Rancher writes snapshotFile.status "successful" or "failed" (an older record may
		// have none: it is counted as ready unless it says it failed).
		s.Ready = v.SnapshotFile.Status != "failed" && !v.Status.Missing
	} else {
		s.Node, s.Location = v.Spec.NodeName, v.Spec.Location
		if v.Status.CreationTime != nil {
			s.CreatedAt = v.Status.CreationTime.Time
		}
		s.Ready = v.Status.ReadyToUse == nil || *v.Status.ReadyToUse
		if v.Status.Error != nil {
			s.Ready = false
			s.Message = v.Status.Error.Message
		}
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = v.Metadata.CreationTimestamp.Time
	}
	s.CreatedAt = s.CreatedAt.UTC()
	if s.CreatedAt.Equal(time.Time{}.UTC()) {
		s.CreatedAt = time.Time{}
	}
	return s, nil
}
