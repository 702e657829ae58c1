package testbed

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// EnsureNodeAddresses gives every node without an InternalIP one (10.89.0.<n>) and its
// Hostname address, as a kubelet reports them. KWOK gives a pod with hostNetwork (the
// system-upgrade-controller's Jobs) its node's InternalIP as hostIP and podIP; a node without
// one leaves such pods without a podIP, and KWOK's pod-create stage then matches them again and
// again instead of letting them run.
func (b *Bed) EnsureNodeAddresses(ctx context.Context) error {
	nodes, err := b.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i, n := range nodes.Items {
		has := false
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				has = true
			}
		}
		if has {
			continue
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"addresses": []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.89.0.%d", 10+i)},
			{Type: corev1.NodeHostName, Address: n.Name},
		}}})
		if err != nil {
			return err
		}
		if _, err := b.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("giving node %s an address: %w", n.Name, err)
		}
	}
	return nil
}
