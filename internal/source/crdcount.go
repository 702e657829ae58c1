package source

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/metadata"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// CRDObjectCounter is a Sink that keeps how many objects a CRD with stored versions to
// migrate has (the snapshot Builder; the bundle writer of collect).
type CRDObjectCounter interface {
	SetCRDObjects(cluster, crd string, n int)
}

// MaxCRDObjects bounds a count taken as real: more objects than an etcd of its largest
// supported size could hold is no count (a bundle is untrusted input).
const MaxCRDObjects = 100_000_000

// MigratingCRD is a CRD whose objects a storage migration has to rewrite, to be counted in
// Version (its storage version).
type MigratingCRD struct {
	Name, Group, Plural, Version string
}

// MigratingOf says whether crd has objects stored in a version other than its storage
// version (status.storedVersions), and so a migration to count objects for.
func MigratingOf(crd *snapshot.CRD) (MigratingCRD, bool) {
	storage := ""
	for _, v := range crd.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage == "" || crd.Group == "" || crd.Plural == "" || !slices.ContainsFunc(crd.StoredVersions, func(s string) bool { return s != storage }) {
		return MigratingCRD{}, false
	}
	return MigratingCRD{Name: crd.Name, Group: crd.Group, Plural: crd.Plural, Version: storage}, true
}

// migratingOfObject is MigratingOf for a CRD read as an unstructured object.
func migratingOfObject(u *unstructured.Unstructured) (MigratingCRD, bool) {
	crd := &snapshot.CRD{Name: u.GetName()}
	crd.StoredVersions, _, _ = unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
	crd.Group, _, _ = unstructured.NestedString(u.Object, "spec", "group")
	crd.Plural, _, _ = unstructured.NestedString(u.Object, "spec", "names", "plural")
	vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range vs {
		if vm, ok := v.(map[string]any); ok {
			name, _ := vm["name"].(string)
			served, _ := vm["served"].(bool)
			storage, _ := vm["storage"].(bool)
			crd.Versions = append(crd.Versions, snapshot.CRDVersion{Name: name, Served: served, Storage: storage})
		}
	}
	return MigratingOf(crd)
}

// CountObjects counts the objects of a CRD with one LIST of a single item's metadata: the
// items returned plus the server's metadata.remainingItemCount. A server may leave that out
// of a list that goes on (the field's API doc: with a selector, and servers before 1.15);
// the count is then snapshot.ObjectsUnknown rather than a guess. ok is false when the list
// failed.
func CountObjects(ctx context.Context, meta metadata.Interface, m MigratingCRD) (n int, ok bool) {
	var l *metav1.PartialObjectMetadataList
	err := retryRead(ctx, func() (err error) {
		l, err = meta.Resource(gvr(m.Group, m.Version, m.Plural)).Namespace("").List(ctx, metav1.ListOptions{Limit: 1})
		return err
	})
	if err != nil {
		return 0, false
	}
	switch {
	case l.Continue == "":
		return len(l.Items), true // everything fit in the one item asked for
	case l.RemainingItemCount != nil && *l.RemainingItemCount >= 0 && *l.RemainingItemCount < MaxCRDObjects:
		return len(l.Items) + int(*l.RemainingItemCount), true
	}
	return snapshot.ObjectsUnknown, true
}

// noteCRD keeps a listed CRD that has stored versions to migrate.
func (r *clusterReader) noteCRD(u *unstructured.Unstructured) {
	if m, ok := migratingOfObject(u); ok {
		r.mu.Lock()
		r.migrating = append(r.migrating, m)
		r.mu.Unlock()
	}
}

// countMigrating counts the objects of each CRD noted, for the sinks that keep counts. A
// list that fails (forbidden: the scan's role need not read every custom resource) leaves
// the count unread, which the findings say; it is no scan error.
func (r *clusterReader) countMigrating(ctx context.Context) {
	counter, ok := r.sink.(CRDObjectCounter)
	if !ok {
		return
	}
	for _, m := range r.migrating {
		n, ok := CountObjects(ctx, r.meta, m)
		if !ok {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		counter.SetCRDObjects(r.t.Name, m.Name, n)
	}
}
