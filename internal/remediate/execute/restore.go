package execute

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// RestoreOptions configure a restore.
type RestoreOptions struct {
	Dir string
	// Object restores one object: [CLUSTER:]KIND/NAMESPACE/NAME, or KIND/NAME for cluster scope.
	Object string
	// Force restores objects that changed after unstick wrote them. It never bypasses a
	// check of the backup itself (MAC, digests, paths, kinds, origin).
	Force   bool
	Clients *Clients
	Out     io.Writer
	// Key authenticates the backup directory (LoadBackup).
	Key *BackupKey
}

// Restore statuses.
const (
	Restored  = "restored"
	Recreated = "re-created"
	Deleted   = "deleted"
	Unchanged = "nothing to do"
	Refused   = "refused"
)

// RestoreOutcome is what happened to one object.
type RestoreOutcome struct {
	Cluster string `json:"cluster"`
	Object  string `json:"object"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

type restoreItem struct {
	orig  IndexEntry
	body  *unstructured.Unstructured // the saved object (nil for one fix created)
	last  *Write                     // the last write unstick made to it
	key   string
	order int
}

// Restore puts back what fix changed, from a backup directory: each object to the copy saved
// before unstick first wrote it (an update guarded by the live resourceVersion: metadata,
// spec and data replaced as saved), an object fix deleted re-created, one it created deleted.
// An object that changed after unstick's last write is refused unless Force: the backup is
// then older than someone else's work.
func Restore(ctx context.Context, o RestoreOptions) ([]RestoreOutcome, error) {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	// Everything about the backup that needs no cluster is checked first; then the identity
	// of each cluster, by reads; only then is anything written.
	b, err := LoadBackup(o.Dir, o.Key)
	if err != nil {
		return nil, err
	}
	index := b.Index
	if len(index) == 0 {
		return nil, fmt.Errorf("%s holds no backup made by unstick fix (no %s)", o.Dir, filepath.Join(objectsDir, indexFile))
	}
	items := map[string]*restoreItem{}
	var keys []string
	for i, e := range index {
		if _, ok := items[e.Key()]; ok {
			continue // the first backup of an object is its state before unstick
		}
		items[e.Key()] = &restoreItem{orig: e, key: e.Key(), order: i, body: b.bodies[i]}
		keys = append(keys, e.Key())
	}
	for _, en := range b.Journal {
		for _, w := range en.Writes {
			if it := items[w.Key()]; it != nil {
				w := w
				it.last = &w
			}
		}
	}
	var filter func(IndexEntry) bool
	if o.Object != "" {
		if filter, err = objectFilter(o.Object); err != nil {
			return nil, err
		}
	}
	var clusters []string
	seenCluster := map[string]bool{}
	for _, k := range keys {
		it := items[k]
		if (filter == nil || filter(it.orig)) && !seenCluster[it.orig.Cluster] {
			seenCluster[it.orig.Cluster] = true
			clusters = append(clusters, it.orig.Cluster)
		}
	}
	if err := checkOrigin(ctx, o.Dir, b.Origin, o.Clients, clusters); err != nil {
		return nil, err
	}
	s, err := openSeal(b, o.Key)
	if err != nil {
		return nil, err
	}
	j := openJournal(s, "restore")
	var res []RestoreOutcome
	matched := 0
	// Undo the latest first.
	for i := len(keys) - 1; i >= 0; i-- {
		it := items[keys[i]]
		if filter != nil && !filter(it.orig) {
			continue
		}
		matched++
		r := restoreOne(ctx, o, b, it)
		res = append(res, r)
		fmt.Fprintf(out, "%s %s: %s", r.Cluster, r.Object, r.Status)
		if r.Message != "" {
			fmt.Fprintf(out, " — %s", r.Message)
		}
		fmt.Fprintln(out)
		if r.Status != Unchanged {
			_ = j.Append(Entry{Step: "restore:" + it.key, Phase: r.Status, Cluster: r.Cluster, Target: r.Object, Message: r.Message})
		}
	}
	if o.Object != "" && matched == 0 {
		return res, fmt.Errorf("--object %s: no such object in the backup", o.Object)
	}
	return res, nil
}

// writeOps are the operations a journaled write may record.
var writeOps = map[string]bool{"create": true, "update": true, "update-status": true, "patch": true, "apply": true, "delete": true}

// checkJournalWrites refuses a journal (authenticated, but written by a version of unstick
// whose steps deleted other kinds, or by someone holding the key) that records a delete fix
// does not make: restore would create the object. Only kinds some step deletes
// (remediate.DeletedKinds) are ever re-created.
func checkJournalWrites(dir string, entries []Entry) error {
	for _, en := range entries {
		for _, w := range en.Writes {
			gk := remediate.GroupKind{Group: remediate.Object{APIVersion: w.APIVersion}.Group(), Kind: w.Kind}
			switch {
			case !writeOps[w.Op]:
				return refuseBackup(dir, "its journal records a write %q of %s on %s, which fix never makes", w.Op, remediate.Object{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}.Ref(), w.Cluster)
			case w.Op == "delete" && !remediate.Deletes(gk):
				return refuseBackup(dir, "its journal says fix deleted %s on %s, but fix never deletes a %s (it deletes only %s): restoring it would create one",
					remediate.Object{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}.Ref(), w.Cluster, gk, deletedKindList())
			}
		}
	}
	return nil
}

func deletedKindList() string {
	var s []string
	for _, k := range remediate.DeletedKinds() {
		s = append(s, k.String())
	}
	return strings.Join(s, ", ")
}

// objectFilter parses [CLUSTER:]KIND/NAMESPACE/NAME or [CLUSTER:]KIND/NAME.
func objectFilter(s string) (func(IndexEntry) bool, error) {
	cluster := ""
	if c, rest, ok := strings.Cut(s, ":"); ok {
		cluster, s = c, rest
	}
	parts := strings.Split(s, "/")
	var kind, ns, name string
	switch len(parts) {
	case 2:
		kind, name = parts[0], parts[1]
	case 3:
		kind, ns, name = parts[0], parts[1], parts[2]
	default:
		return nil, fmt.Errorf("--object %q: want KIND/NAMESPACE/NAME (or KIND/NAME for a cluster-scoped object), optionally CLUSTER: first", s)
	}
	return func(e IndexEntry) bool {
		return strings.EqualFold(e.Kind, kind) && e.Namespace == ns && e.Name == name && (cluster == "" || e.Cluster == cluster)
	}, nil
}

func restoreOne(ctx context.Context, o RestoreOptions, b *Backup, it *restoreItem) RestoreOutcome {
	e := it.orig
	obj := remediate.Object{Cluster: e.Cluster, APIVersion: e.APIVersion, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
	r := RestoreOutcome{Cluster: e.Cluster, Object: obj.Ref()}
	fail := func(format string, args ...any) RestoreOutcome {
		r.Status, r.Message = Refused, fmt.Sprintf(format, args...)
		return r
	}
	if it.last == nil {
		r.Status, r.Message = Unchanged, "unstick did not write it"
		return r
	}
	cl, err := o.Clients.get(e.Cluster)
	if err != nil {
		return fail("%v", err)
	}
	live, err := cl.read(ctx, obj)
	if err != nil {
		return fail("reading it: %v", err)
	}
	// Did anyone change it after unstick's last write?
	if !remediate.Writes(groupKind(e)) {
		// A manifest object a Helm rollback re-applied: fix never deletes one, so restore
		// never creates one, and it only touches one its release still owns.
		switch {
		case it.last.Op == "delete":
			return fail("fix never deletes a %s, so restore does not create one", groupKind(e))
		case live == nil:
			return fail("it no longer exists, and restore does not create a %s (not even with --force)", groupKind(e))
		}
		if err := b.helmOwned(e, live.GetAnnotations()); err != nil {
			return fail("%v", err)
		}
		if e.Existed && string(live.GetUID()) != e.UID {
			return fail("it is a different object now (uid %s, the backup's is %s)", live.GetUID(), e.UID)
		}
	}
	if it.last.Op == "delete" && live != nil && string(live.GetUID()) == it.last.UID && live.GetDeletionTimestamp() != nil {
		return fail("unstick's delete is still pending (finalizers %v): it can be re-created once it is gone", live.GetFinalizers())
	}
	switch {
	case it.last.Op == "delete" && live != nil && !o.Force:
		return fail("it exists again (uid %s, created after unstick deleted it); --force replaces it with the backup", live.GetUID())
	case it.last.Op != "delete" && live == nil && e.Existed:
		return fail("it was deleted after unstick wrote it; restore creates only an object fix deleted, of a kind it deletes (%s), so not this %s (not even with --force)", deletedKindList(), groupKind(e))
	case it.last.Op != "delete" && live != nil && live.GetResourceVersion() != it.last.After && !o.Force &&
		(it.last.AfterDigest == "" || contentDigest(live) != it.last.AfterDigest):
		return fail("it changed after unstick wrote it (resourceVersion %s, unstick left %s); --force restores the backup over that change", live.GetResourceVersion(), it.last.After)
	}
	h, err := cl.handle(obj)
	if err != nil {
		return fail("%v", err)
	}
	if !e.Existed {
		if live == nil {
			r.Status, r.Message = Unchanged, "unstick created it and it is already gone"
			return r
		}
		if err := remediate.Guard(obj, secretType(live), live.GetLabels()); err != nil {
			return fail("%v", err)
		}
		rv, uid := live.GetResourceVersion(), live.GetUID()
		if err := h.Delete(ctx, e.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}); err != nil {
			return fail("deleting it: %v", err)
		}
		r.Status, r.Message = Deleted, "unstick created it"
		return r
	}
	saved := it.body
	if saved == nil {
		return fail("the backup holds no copy of it")
	}
	if obj.Group() == "apiextensions.k8s.io" && obj.Kind == "CustomResourceDefinition" {
		return restoreStoredVersions(ctx, cl, obj, e, saved, live, r)
	}
	if err := remediate.Guard(obj, secretType(saved), saved.GetLabels()); err != nil {
		return fail("%v", err)
	}
	clean := saved.DeepCopy()
	for _, f := range []string{"managedFields", "creationTimestamp", "generation", "uid", "resourceVersion", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(clean.Object, "metadata", f)
	}
	if live == nil {
		// Reached only for a journaled delete (above) of a kind fix deletes: the one case
		// restore creates an object.
		if it.last.Op != "delete" || !remediate.Deletes(groupKind(e)) {
			return fail("restore creates only an object fix deleted, of a kind it deletes (%s)", deletedKindList())
		}
		unstructured.RemoveNestedField(clean.Object, "status")
		if e.Kind == "Job" && obj.Group() == "batch" {
			// The server generates a Job's selector and its controller-uid labels anew.
			unstructured.RemoveNestedField(clean.Object, "spec", "selector")
			for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
				unstructured.RemoveNestedField(clean.Object, "spec", "template", "metadata", "labels", l)
			}
		}
		if _, err := h.Create(ctx, clean, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fail("re-creating it: %v", err)
		}
		r.Status, r.Message = Recreated, "unstick had deleted it"
		return r
	}
	if string(live.GetUID()) != e.UID && !o.Force {
		return fail("it is a different object now (uid %s, the backup's is %s)", live.GetUID(), e.UID)
	}
	clean.SetResourceVersion(live.GetResourceVersion())
	clean.SetUID(types.UID(live.GetUID()))
	for attempt := 0; ; attempt++ {
		_, err := h.Update(ctx, clean, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			break
		}
		// With --force the backup goes over whatever changed; a controller writing the object
		// (its status) between our read and our write is one more such change: read it again.
		if !o.Force || !apierrors.IsConflict(err) || attempt >= 4 {
			return fail("updating it: %v", err)
		}
		now, gerr := h.Get(ctx, e.Name, metav1.GetOptions{})
		if gerr != nil {
			return fail("updating it: %v (reading it again: %v)", err, gerr)
		}
		if string(now.GetUID()) != string(clean.GetUID()) {
			return fail("updating it: %v (it is a different object now)", err)
		}
		clean.SetResourceVersion(now.GetResourceVersion())
	}
	r.Status, r.Message = Restored, restoreSideEffect(obj, saved, live)
	return r
}

// restoreSideEffect says what putting an object back makes its controller do, when that is
// more than nothing: restoring is a change like any other.
func restoreSideEffect(obj remediate.Object, saved, live *unstructured.Unstructured) string {
	switch {
	case obj.Group() == "fleet.cattle.io" && obj.Kind == "Cluster":
		was, _, _ := unstructured.NestedInt64(saved.Object, "spec", "redeployAgentGeneration")
		now, _, _ := unstructured.NestedInt64(live.Object, "spec", "redeployAgentGeneration")
		if was != now {
			return fmt.Sprintf("spec.redeployAgentGeneration back to %d: Fleet redeploys the agent once more (it acts whenever the deployed generation differs)", was)
		}
	case obj.Group() == "apps" && obj.Kind == "Deployment":
		was, _, _ := unstructured.NestedString(saved.Object, "spec", "template", "metadata", "annotations", RestartedAtAnnotation)
		now, _, _ := unstructured.NestedString(live.Object, "spec", "template", "metadata", "annotations", RestartedAtAnnotation)
		if was != now {
			return "the pod template is changed back, so the Deployment rolls out once more"
		}
	}
	return ""
}

func secretType(u *unstructured.Unstructured) string {
	t, _, _ := unstructured.NestedString(u.Object, "type")
	return t
}

// restoreStoredVersions undoes a stored-versions trim: status.storedVersions of the live CRD
// gets back the backup's, through the status subresource under the live resourceVersion.
// Nothing else of a CRD is ever written, by fix or by restore.
func restoreStoredVersions(ctx context.Context, cl *cluster, obj remediate.Object, e IndexEntry, saved, live *unstructured.Unstructured, r RestoreOutcome) RestoreOutcome {
	if e.action() != remediate.TrimStoredVersions || live == nil || string(live.GetUID()) != e.UID {
		r.Status, r.Message = Refused, "a CRD is only ever restored as a stored-versions trim left it: the same CRD, status.storedVersions only"
		return r
	}
	want, _, _ := unstructured.NestedStringSlice(saved.Object, "status", "storedVersions")
	if len(want) == 0 {
		r.Status, r.Message = Refused, "the backup holds no status.storedVersions"
		return r
	}
	upd := live.DeepCopy()
	if err := unstructured.SetNestedStringSlice(upd.Object, want, "status", "storedVersions"); err != nil {
		r.Status, r.Message = Refused, err.Error()
		return r
	}
	if _, err := cl.dyn.Resource(crdGVR).UpdateStatus(ctx, upd, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		r.Status, r.Message = Refused, fmt.Sprintf("updating status.storedVersions: %v", err)
		return r
	}
	r.Status, r.Message = Restored, fmt.Sprintf("status.storedVersions %v again", want)
	return r
}
