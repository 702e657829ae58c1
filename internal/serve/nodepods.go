package serve

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// nodePodsTTL is how long the pods read from a cordoned node are reused between evaluations:
// one LIST per cordoned node, as the scan makes, but not on every change an informer reports.
const nodePodsTTL = 30 * time.Second

// nodePodsTimeout bounds the reads of one evaluation.
const nodePodsTimeout = 10 * time.Second

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

type nodePodsRead struct {
	pods []*cachedObject
	at   time.Time
}

// nodePods keeps, between evaluations, the pods read from one cluster's cordoned nodes.
type nodePods struct {
	mu sync.Mutex
	by map[string]nodePodsRead // node → its pods outside the watched namespaces
}

// feedNodePods adds the pods on each cordoned node outside the watched namespaces to b, as
// the scan reads them (source's drainNodePods): the PodDisruptionBudget that holds a drain
// covers an application's pods, which serve's informers do not watch. Each node's pods are
// listed again once the last read is older than nodePodsTTL; a node no longer cordoned is
// forgotten.
func (w *clusterWatch) feedNodePods(b *snapshot.Builder, nodes []*corev1.Node) {
	var cordoned []string
	for _, n := range nodes {
		if source.Cordoned(n) {
			cordoned = append(cordoned, n.Name)
		}
	}
	sort.Strings(cordoned)
	if len(cordoned) > source.MaxDrainNodes {
		b.Error(finding.ScanError{Cluster: w.t.Name, Message: source.TooManyCordoned(len(cordoned))})
		cordoned = cordoned[:source.MaxDrainNodes]
	}
	w.nodePods.mu.Lock()
	defer w.nodePods.mu.Unlock()
	if w.nodePods.by == nil {
		w.nodePods.by = map[string]nodePodsRead{}
	}
	keep := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), nodePodsTimeout)
	defer cancel()
	for _, node := range cordoned {
		keep[node] = true
		read, have := w.nodePods.by[node]
		if !have || time.Since(read.at) >= nodePodsTTL {
			pods, err := w.listNodePods(ctx, node)
			if apierrors.IsForbidden(err) {
				b.Error(finding.ScanError{Cluster: w.t.Name, Message: source.NodePodsForbidden})
				return
			}
			if err != nil {
				delete(w.nodePods.by, node)
				b.Error(finding.ScanError{Cluster: w.t.Name, Message: fmt.Sprintf("cannot list the pods on cordoned node %s: %v", node, err)})
				continue
			}
			read = nodePodsRead{pods: pods, at: time.Now()}
			w.nodePods.by[node] = read
		}
		w.addCached(b, read.pods)
	}
	for node := range w.nodePods.by {
		if !keep[node] {
			delete(w.nodePods.by, node) // uncordoned or deleted since
		}
	}
}

// listNodePods lists the pods on one node in every namespace, page by page, keeping those
// the watched namespaces' informers do not hold, compacted as the informers store theirs.
func (w *clusterWatch) listNodePods(ctx context.Context, node string) ([]*cachedObject, error) {
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName=" + node, Limit: 500}
	var out []*cachedObject
	for {
		l, err := w.dyn.Resource(podsGVR).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			if source.WatchedNamespace(l.Items[i].GetNamespace()) {
				continue
			}
			c, err := compact(&l.Items[i], "v1", "Pod", nil)
			if err != nil {
				return nil, err
			}
			if co, ok := c.(*cachedObject); ok && co.kept() {
				out = append(out, co)
			}
		}
		if l.GetContinue() == "" {
			return out, nil
		}
		opts.Continue = l.GetContinue()
	}
}
