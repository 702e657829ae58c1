package execute

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// RestoreOptions configure a restore.
type RestoreOptions struct {
	Dir string
	// Object restores one object: [CLUSTER:]KIND/NAMESPACE/NAME, or KIND/NAME for cluster scope.
	Object string
	// Force restores objects that changed after unstick wrote them.
	Force   bool
	Clients *Clients
	Out     io.Writer
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
	last  *Write // the last write unstick made to it
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
	index, err := ReadIndex(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.Dir, err)
	}
	if len(index) == 0 {
		return nil, fmt.Errorf("%s holds no backup made by unstick fix (no %s)", o.Dir, filepath.Join(objectsDir, indexFile))
	}
	entries, err := ReadJournal(o.Dir)
	if err != nil {
		return nil, err
	}
	items := map[string]*restoreItem{}
	var keys []string
	for i, e := range index {
		if _, ok := items[e.Key()]; ok {
			continue // the first backup of an object is its state before unstick
		}
		items[e.Key()] = &restoreItem{orig: e, key: e.Key(), order: i}
		keys = append(keys, e.Key())
	}
	for _, en := range entries {
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
	j, err := OpenJournal(o.Dir, "restore")
	if err != nil {
		return nil, err
	}
	var res []RestoreOutcome
	matched := 0
	// Undo the latest first.
	for i := len(keys) - 1; i >= 0; i-- {
		it := items[keys[i]]
		if filter != nil && !filter(it.orig) {
			continue
		}
		matched++
		r := restoreOne(ctx, o, it)
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

func restoreOne(ctx context.Context, o RestoreOptions, it *restoreItem) RestoreOutcome {
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
	if it.last.Op == "delete" && live != nil && string(live.GetUID()) == it.last.UID && live.GetDeletionTimestamp() != nil {
		return fail("unstick's delete is still pending (finalizers %v): it can be re-created once it is gone", live.GetFinalizers())
	}
	switch {
	case it.last.Op == "delete" && live != nil && !o.Force:
		return fail("it exists again (uid %s, created after unstick deleted it); --force replaces it with the backup", live.GetUID())
	case it.last.Op != "delete" && live == nil && !o.Force:
		return fail("it was deleted after unstick wrote it; --force re-creates it from the backup")
	case it.last.Op != "delete" && live != nil && live.GetResourceVersion() != it.last.After && !o.Force:
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
	saved, err := readBackup(filepath.Join(o.Dir, e.File))
	if err != nil {
		return fail("%v", err)
	}
	if err := remediate.Guard(obj, secretType(saved), saved.GetLabels()); err != nil {
		return fail("%v", err)
	}
	clean := saved.DeepCopy()
	for _, f := range []string{"managedFields", "creationTimestamp", "generation", "uid", "resourceVersion", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(clean.Object, "metadata", f)
	}
	if live == nil {
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
	if _, err := h.Update(ctx, clean, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fail("updating it: %v", err)
	}
	r.Status = Restored
	return r
}

func secretType(u *unstructured.Unstructured) string {
	t, _, _ := unstructured.NestedString(u.Object, "type")
	return t
}

func readBackup(path string) (*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the backup: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}
