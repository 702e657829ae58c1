package testbed

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// downHolder holds a stopped node's Lease in KWOK's place.
const downHolder = "unstick-testbed-kubelet-stopped"

// downLeaseSeconds keeps KWOK from taking the Lease back: it acquires another holder's Lease
// only once renewTime + leaseDurationSeconds has passed (pkg/kwok/controllers
// node_lease_controller.go tryAcquireOrRenew in KWOK v0.8.0). About ten years.
const downLeaseSeconds = 10 * 365 * 24 * 3600

// StopKubelet makes a KWOK node behave as one whose kubelet stopped: its Lease passes to
// another holder, renewed one last time now. KWOK then treats the node as not its own — it
// neither renews the Lease, nor posts the node's status, nor moves the node's pods (KWOK
// v0.8.0 plays a node and its pods only while it holds the node's Lease) — and
// kube-controller-manager's node lifecycle controller, seeing no renewal for
// --node-monitor-grace-period, sets Ready=Unknown ("Kubelet stopped posting node status."),
// taints the node node.kubernetes.io/unreachable and marks its pods not Ready; pods deleted
// from it stay Terminating. Stopping KWOK's status heartbeat alone is not enough: the node
// lifecycle controller counts a Lease renewal as a heartbeat. The last write must move
// renewTime: with NodeControllerLeaseCircuitBreaker (Kubernetes 1.37) the controller marks a
// node Unknown only when the live Lease's resourceVersion is the one it last saw renewed
// (pkg/controller/nodelifecycle tryUpdateNodeHealth), so a write that left renewTime alone
// would hold the node Ready for ever.
func StopKubelet(ctx context.Context, c kubernetes.Interface, node string) error {
	leases := c.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the Lease of node %s: %w", node, err)
		}
		l.Spec.HolderIdentity = new(downHolder)
		l.Spec.LeaseDurationSeconds = new(int32(downLeaseSeconds))
		l.Spec.RenewTime = new(metav1.NewMicroTime(time.Now()))
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("taking the Lease of node %s from KWOK: %w", node, err)
		}
		return nil
	})
}

// StartKubelet undoes StopKubelet: with the Lease gone KWOK creates it anew, plays the node
// again and it turns Ready.
func StartKubelet(ctx context.Context, c kubernetes.Interface, node string) error {
	err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, node, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the Lease of node %s: %w", node, err)
	}
	return nil
}

// StopKubelet is StopKubelet on the bed's node.
func (b *Bed) StopKubelet(ctx context.Context, node string) error {
	return StopKubelet(ctx, b.Client, node)
}

// StartKubelet is StartKubelet on the bed's node.
func (b *Bed) StartKubelet(ctx context.Context, node string) error {
	return StartKubelet(ctx, b.Client, node)
}

// WaitNodeReady waits until the node's Ready condition has the status want (Unknown after
// StopKubelet, True after StartKubelet).
func (b *Bed) WaitNodeReady(ctx context.Context, node string, want corev1.ConditionStatus, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := b.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err == nil && readyStatus(n) == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready=%s after %s (get error: %v)\n%s", node, want, timeout, err, b.Logs("kube-controller-manager"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
