package source

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/finding"
)

// MaxDrainNodes bounds how many cordoned nodes a live read lists the pods of. An upgrade
// drains a few nodes at a time (its concurrency); more cordoned nodes than this are mostly
// something else, and listing them all would make the read grow with the cluster.
const MaxDrainNodes = 20

// unschedulableTaint is the taint the node lifecycle controller puts on a cordoned node.
const unschedulableTaint = "node.kubernetes.io/unschedulable"

// noteNode remembers a node that is cordoned (a drain cordons first: kubectl's and
// Rancher's drains alike), so its pods in every namespace are read after the lists.
func (r *clusterReader) noteNode(name string, unschedulable bool, taints []string) {
	if !cordonedNode(unschedulable, taints) {
		return
	}
	r.mu.Lock()
	r.cordoned = append(r.cordoned, name)
	r.mu.Unlock()
}

func cordonedNode(unschedulable bool, taints []string) bool {
	cordoned := unschedulable
	for _, t := range taints {
		cordoned = cordoned || t == unschedulableTaint
	}
	return cordoned
}

// Cordoned reports whether a node is cordoned: unschedulable, or tainted as such by the node
// lifecycle controller.
func Cordoned(n *corev1.Node) bool {
	var taints []string
	for _, t := range n.Spec.Taints {
		taints = append(taints, t.Key)
	}
	return cordonedNode(n.Spec.Unschedulable, taints)
}

func (r *clusterReader) noteTypedNode(n *corev1.Node) {
	if Cordoned(n) {
		r.noteNode(n.Name, true, nil)
	}
}

// TooManyCordoned is the scan error when more nodes than MaxDrainNodes are cordoned.
func TooManyCordoned(n int) string {
	return fmt.Sprintf("%d nodes are cordoned: the pods of the first %d (by name) were read in every namespace, the others' only in the upgrade namespaces",
		n, MaxDrainNodes)
}

// NodePodsForbidden is the scan error when the pods of cordoned nodes cannot be listed across
// namespaces.
const NodePodsForbidden = "forbidden: cannot list pods across namespaces (grant it with deploy/rbac/scan.yaml): " +
	"the pods on cordoned nodes outside the upgrade namespaces were not read, and a drain's PodDisruptionBudget is found only through the drain error"

func (r *clusterReader) noteUnstructuredNode(u *unstructured.Unstructured) {
	unsched, _, _ := unstructured.NestedBool(u.Object, "spec", "unschedulable")
	ts, _, _ := unstructured.NestedSlice(u.Object, "spec", "taints")
	var taints []string
	for _, t := range ts {
		if m, ok := t.(map[string]any); ok {
			if k, ok := m["key"].(string); ok {
				taints = append(taints, k)
			}
		}
	}
	r.noteNode(u.GetName(), unsched, taints)
}

// drainNodePods reads the pods on each cordoned node in every namespace, one LIST per node
// narrowed by spec.nodeName, keeping those outside the watched namespaces (read already): the
// PodDisruptionBudgets that hold a drain cover application pods, which live elsewhere.
func (r *clusterReader) drainNodePods(ctx context.Context) {
	nodes := append([]string(nil), r.cordoned...)
	sort.Strings(nodes)
	if len(nodes) > MaxDrainNodes {
		r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: TooManyCordoned(len(nodes))})
		nodes = nodes[:MaxDrainNodes]
	}
	watched := make(map[string]bool, len(r.ns))
	for _, ns := range r.ns {
		watched[ns] = true
	}
	for _, node := range nodes {
		opts := metav1.ListOptions{Limit: r.l.PageSize, FieldSelector: "spec.nodeName=" + node}
		for {
			var list *corev1.PodList
			err := retryRead(ctx, func() (err error) {
				list, err = r.kube.Core.Pods("").List(ctx, opts)
				return err
			})
			if apierrors.IsForbidden(err) {
				r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: NodePodsForbidden})
				return
			}
			if err != nil {
				r.sink.Error(finding.ScanError{Cluster: r.t.Name, Message: fmt.Sprintf("cannot list the pods on cordoned node %s: %v", node, err)})
				break
			}
			for i := range list.Items {
				p := &list.Items[i]
				if watched[p.Namespace] {
					continue
				}
				p.ManagedFields = nil
				p.APIVersion, p.Kind = "v1", "Pod"
				r.emit(p, "Pod", p.Namespace, p.Name)
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
}
