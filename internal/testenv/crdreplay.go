package testenv

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installedGroups are the API groups whose CRDs Start installs; only those are removed when
// a bundle's CRD list lacks them.
var installedGroups = map[string]bool{"fleet.cattle.io": true, "upgrade.cattle.io": true}

// replaceCRD gives an existing CRD the bundle's spec and status.
func (l *loader) replaceCRD(ctx context.Context, it *item) error {
	c := l.client(it)
	err := retryConflict(func() error {
		cur, err := c.Get(ctx, it.obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Object["spec"] = it.obj.Object["spec"]
		_, err = c.Update(ctx, cur, metav1.UpdateOptions{FieldManager: "unstick-testenv"})
		return err
	})
	if err != nil {
		if serverGone(ctx, err) {
			return fmt.Errorf("testenv: replacing %s: %w", it.desc, err)
		}
		l.count(func(r *LoadResult) { r.Existing++ })
		l.warnf("%s: kept the installed definition, the bundle's was refused: %v", it.desc, err)
		return nil
	}
	it.written = true
	l.count(func(r *LoadResult) { r.CRDsReplaced = append(r.CRDsReplaced, it.obj.GetName()) })
	if it.status != nil {
		cur, err := c.Get(ctx, it.obj.GetName(), metav1.GetOptions{})
		if err != nil {
			l.warnf("%s: status not written: %v", it.desc, err)
			return nil
		}
		return l.writeStatus(ctx, it, cur)
	}
	return nil
}

// crdRemovalTimeout bounds the wait for a removed CRD to disappear.
const crdRemovalTimeout = 3 * time.Minute

// pruneCRDs removes the installed Fleet and SUC CRDs that the bundle's CRD list lacks, and
// waits until they are gone.
func (l *loader) pruneCRDs(ctx context.Context, items []*item) error {
	inBundle := map[string]bool{}
	for _, it := range items {
		inBundle[it.obj.GetName()] = true
	}
	list, err := l.dyn.Resource(crdResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("testenv: listing CRDs: %w", err)
	}
	var removed []string
	for _, crd := range list.Items {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		if !installedGroups[group] || inBundle[crd.GetName()] {
			continue
		}
		l.warmStorage(ctx, &crd)
		if err := l.dyn.Resource(crdResource).Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			if serverGone(ctx, err) {
				return fmt.Errorf("testenv: removing CRD %s: %w", crd.GetName(), err)
			}
			l.warnf("CRD %s: not in the bundle, but removing it failed: %v", crd.GetName(), err)
			continue
		}
		removed = append(removed, crd.GetName())
	}
	// A CRD that is still terminating is still listed, so a scan would find it present: the
	// load is not done until it is gone. The apiextensions finalizer can take tens of seconds
	// on a loaded machine (it removes the CRD's objects first), hence the generous bound.
	for _, name := range removed {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdRemovalTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := l.dyn.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("testenv: CRD %s not in the bundle is still being removed after %s: %w", name, crdRemovalTimeout, err)
		}
	}
	sort.Strings(removed)
	l.count(func(r *LoadResult) { r.CRDsRemoved = removed })
	return nil
}

// warmStorage lists a CRD's objects until the API server answers, before the CRD is deleted.
// The server creates a CRD's storage (its watch cache) on first use; a CRD deleted before
// anything listed it has its deletion finalizer meet "storage is (re)initializing", and the
// finalizer's retries back off exponentially, leaving the CRD terminating — and still listed
// — for minutes on a loaded machine. Best effort: the deletion is waited for anyway.
func (l *loader) warmStorage(ctx context.Context, crd *unstructured.Unstructured) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["storage"] == true {
			version, _ = m["name"].(string)
		}
	}
	if plural == "" || version == "" {
		return
	}
	gvr := schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := l.dyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
}
