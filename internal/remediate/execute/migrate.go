package execute

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// The storage version migration of a CRD, and the trim of its status.storedVersions.
//
// The API server stores an object in the storage version its CRD has when the object is
// written; objects written before the storage version changed stay encoded in the old one
// until written again. Writing an object back unchanged re-encodes it: etcd's store skips a
// write only when the encoded bytes are identical, and an object stored in another version
// encodes differently (its apiVersion). So the migration is a no-op update of every object,
// each held to the resourceVersion it was read at. A conflict means someone else wrote the
// object after it was read — which stored it in the storage version too — and the object is
// read again and written again, never overwritten with the stale copy.
//
// When the cluster serves storagemigration.k8s.io and a controller acts on a
// StorageVersionMigration (kube-controller-manager's storage version migrator), that does the
// same on the server's side and is used instead.

// migrationPage is how many objects one list call returns.
const migrationPage = 500

// svmWait is how long a StorageVersionMigration may sit without a condition before it is
// taken as not acted on (no controller runs it), deleted, and the migration done by unstick.
var svmWait = 20 * time.Second

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdHold reads the CRD and holds it to the plan: same UID, same storage version; for a
// write to the CRD itself, also the same resourceVersion.
func (e *Executor) crdHold(ctx context.Context, cl *cluster, st remediate.Step, exactVersion bool) (*unstructured.Unstructured, error) {
	sm := st.Storage
	u, err := cl.dyn.Resource(crdGVR).Get(ctx, sm.CRD, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &ConflictError{Step: st.ID, Object: st.Target, Reason: "it no longer exists"}
	}
	if err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", sm.CRD, err)
	}
	if st.Target.UID != "" && string(u.GetUID()) != st.Target.UID {
		return nil, &ConflictError{Step: st.ID, Object: st.Target, Reason: fmt.Sprintf("it was deleted and created again (uid %s, now %s)", st.Target.UID, u.GetUID())}
	}
	if exactVersion && st.Target.ResourceVersion != "" && u.GetResourceVersion() != st.Target.ResourceVersion {
		return nil, &ConflictError{Step: st.ID, Object: st.Target, Reason: fmt.Sprintf("resourceVersion %s when planned, %s now", st.Target.ResourceVersion, u.GetResourceVersion())}
	}
	if sv := storageVersionOf(u); sv != sm.StorageVersion {
		return nil, &ConflictError{Step: st.ID, Object: st.Target, Reason: fmt.Sprintf("its storage version is %s now, not %s", sv, sm.StorageVersion)}
	}
	return u, nil
}

func storageVersionOf(crd *unstructured.Unstructured) string {
	vs, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range vs {
		if m, ok := v.(map[string]any); ok && m["storage"] == true {
			s, _ := m["name"].(string)
			return s
		}
	}
	return ""
}

func storedVersionsOf(crd *unstructured.Unstructured) []string {
	s, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return s
}

func crdNamespaced(crd *unstructured.Unstructured) bool {
	s, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	return s == "Namespaced"
}

func (sm *storageTarget) list(ctx context.Context, cont string) (*unstructured.UnstructuredList, error) {
	return sm.all.List(ctx, metav1.ListOptions{Limit: migrationPage, Continue: cont})
}

type storageTarget struct {
	gvr        schema.GroupVersionResource
	all        dynamic.ResourceInterface
	dyn        dynamic.Interface
	namespaced bool
}

func (t *storageTarget) handle(ns string) dynamic.ResourceInterface {
	if t.namespaced {
		return t.dyn.Resource(t.gvr).Namespace(ns)
	}
	return t.dyn.Resource(t.gvr)
}

func targetOf(cl *cluster, sm *remediate.StorageMigration, crd *unstructured.Unstructured) *storageTarget {
	gvr := schema.GroupVersionResource{Group: sm.Group, Version: sm.StorageVersion, Resource: sm.Plural}
	return &storageTarget{gvr: gvr, all: cl.dyn.Resource(gvr), dyn: cl.dyn, namespaced: crdNamespaced(crd)}
}

// migrate is the migrate step's write (dry: the CRD is held to the plan and one object's
// write-back is dry-run on the server).
func (e *Executor) migrate(ctx context.Context, cl *cluster, st remediate.Step, dry bool) ([]Write, error) {
	sm := st.Storage
	crd, err := e.crdHold(ctx, cl, st, dry)
	if err != nil {
		return nil, err
	}
	t := targetOf(cl, sm, crd)
	if dry {
		list, err := t.all.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", resourceName(t.gvr), err)
		}
		if len(list.Items) > 0 {
			it := list.Items[0]
			if _, err := t.handle(it.GetNamespace()).Update(ctx, &it, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: []string{metav1.DryRunAll}}); err != nil && !apierrors.IsConflict(err) {
				return nil, fmt.Errorf("writing back %s %s (dry-run): %w", sm.Kind, it.GetName(), err)
			}
		}
		return nil, nil
	}
	// A run resuming an interrupted migration goes on where that one stopped.
	var writes []Write
	if s := e.states[st.ID]; s == nil || s.pages == 0 {
		done, w, err := e.migrateWithSVM(ctx, cl, st)
		if err != nil || done {
			return w, err
		}
		writes = w
	}
	return writes, e.migrateObjects(ctx, cl, st, t)
}

// svmResource is the StorageVersionMigration API the cluster serves, if any.
func svmResource(cl *cluster) (schema.GroupVersionResource, bool) {
	for _, v := range []string{"v1", "v1beta1"} {
		l, err := cl.kube.Discovery.ServerResourcesForGroupVersion("storagemigration.k8s.io/" + v)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if r.Name == "storageversionmigrations" {
				return schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: v, Resource: r.Name}, true
			}
		}
	}
	return schema.GroupVersionResource{}, false
}

// migrateWithSVM creates a StorageVersionMigration when the cluster serves the API and waits
// for a controller to act on it. Not acted on within svmWait, it is deleted again and the
// caller migrates the objects itself (done false).
func (e *Executor) migrateWithSVM(ctx context.Context, cl *cluster, st remediate.Step) (bool, []Write, error) {
	gvr, ok := svmResource(cl)
	if !ok {
		e.say("  [%d] the cluster serves no StorageVersionMigration API: unstick writes the objects back itself", e.numbers[st.ID])
		return false, nil, nil
	}
	sm := st.Storage
	name := remediate.SVMName(sm.CRD)
	// Only the one the plan names (a plan from an older journal names none: write back).
	if !slices.ContainsFunc(st.Creates, func(o remediate.Object) bool { return o.Kind == "StorageVersionMigration" && o.Name == name }) {
		e.say("  [%d] the plan names no StorageVersionMigration to create: unstick writes the objects back itself", e.numbers[st.ID])
		return false, nil, nil
	}
	obj := remediate.Object{Cluster: cl.name, APIVersion: gvr.GroupVersion().String(), Kind: "StorageVersionMigration", Name: name, Create: true}
	h := cl.dyn.Resource(gvr)
	svm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "StorageVersionMigration",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/managed-by": "unstick"}},
		"spec":     map[string]any{"resource": map[string]any{"group": sm.Group, "resource": sm.Plural}},
	}}
	if _, _, err := e.backups.saveObject(st.ID, obj, nil); err != nil {
		return false, nil, err
	}
	out, err := h.Create(ctx, svm, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		e.say("  [%d] could not create a StorageVersionMigration (%v): unstick writes the objects back itself", e.numbers[st.ID], err)
		return false, nil, nil
	}
	w := writeOf(obj, "create", "", out)
	writes := []Write{w}
	if err := e.wrote(st, w); err != nil {
		return false, writes, err
	}
	deadline := time.Now().Add(svmWait)
	acted := false
	failed, running := "", ""
poll:
	for {
		cur, err := h.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, writes, fmt.Errorf("reading StorageVersionMigration %s: %w", name, err)
		}
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["status"] != "True" {
				continue
			}
			acted = true
			switch m["type"] {
			case "Running":
				running = fmt.Sprint(m["message"])
			case "Succeeded":
				e.say("  [%d] StorageVersionMigration %s succeeded", e.numbers[st.ID], name)
				return true, writes, nil
			case "Failed":
				// Seen with kube-controller-manager v1.37 when its discovery still maps the
				// resource to the version the CRD stopped serving: the controller gives up
				// ("not retrying"). Writing the objects back does not depend on it.
				failed = fmt.Sprint(m["message"])
				break poll
			}
		}
		limit := deadline
		if acted {
			limit = deadline.Add(e.opts.VerifyTimeout)
		}
		if time.Now().After(limit) {
			break
		}
		select {
		case <-ctx.Done():
			return false, writes, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	// Failed, not acted on (no controller runs it) or too slow: take it away again.
	uid := out.GetUID()
	if err := deletable(st.Action, obj); err != nil {
		return false, writes, err
	}
	if err := h.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return false, writes, fmt.Errorf("deleting StorageVersionMigration %s, which did not succeed: %w", name, err)
	}
	dw := writeOf(obj, "delete", out.GetResourceVersion(), nil)
	writes = append(writes, dw)
	if err := e.wrote(st, dw); err != nil {
		return false, writes, err
	}
	switch {
	case failed != "":
		e.say("  [%d] StorageVersionMigration %s failed (%s): deleted it; unstick writes the objects back itself", e.numbers[st.ID], name, failed)
	case running != "":
		e.say("  [%d] StorageVersionMigration %s still running (%s) after %s: deleted it; unstick writes the objects back itself (a longer --verify-timeout leaves the migrator more time)", e.numbers[st.ID], name, running, svmWait+e.opts.VerifyTimeout)
	default:
		e.say("  [%d] no controller acted on StorageVersionMigration %s within %s: deleted it; unstick writes the objects back itself", e.numbers[st.ID], name, svmWait)
	}
	return false, writes, nil
}

// migrateObjects writes every object back, page by page, resuming from the continue token an
// interrupted run journaled. Each page is saved to the backup before its first write.
func (e *Executor) migrateObjects(ctx context.Context, cl *cluster, st remediate.Step, t *storageTarget) error {
	n := e.numbers[st.ID]
	cont, done, page := "", 0, 0
	if s := e.states[st.ID]; s != nil && s.pages > 0 {
		if s.cont == "" {
			e.say("  [%d] the interrupted run wrote back every page (%d objects)", n, s.migrated)
			return nil
		}
		cont, done, page = s.cont, s.migrated, s.pages
		e.say("  [%d] resuming the migration after %d objects (page %d)", n, done, page)
	}
	conflicts := 0
	for {
		list, err := t.list(ctx, cont)
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			// The continue token expired (etcd compacted): start over; objects already in the
			// storage version are skipped by the server (their write changes nothing).
			e.say("  [%d] the journaled continue token expired: listing from the start again", n)
			cont = ""
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", resourceName(t.gvr), err)
		}
		page++
		if err := e.backups.savePage(st.ID, cl.name, st.Storage.CRD, page, list); err != nil {
			return err
		}
		var names []string
		for i := range list.Items {
			it := &list.Items[i]
			if e.hooks.BeforeMigrateObject != nil {
				if err := e.hooks.BeforeMigrateObject(ctx, st, it.DeepCopy()); err != nil {
					return err
				}
			}
			c, err := writeBack(ctx, t.handle(it.GetNamespace()), it)
			conflicts += c
			if err != nil {
				return fmt.Errorf("writing back %s %s: %w", st.Storage.Kind, objName(it), err)
			}
			names = append(names, objName(it))
		}
		done += len(list.Items)
		cont = list.GetContinue()
		msg := fmt.Sprintf("page %d: %d objects written back (%d in all%s, %d conflicts read again and written again)", page, len(list.Items), done, ofCounted(st.Storage), conflicts)
		if err := e.record(st, PhaseProgress, msg, func(en *Entry) {
			en.Continue, en.Migrated, en.Pages, en.Objects = cont, done, page, names
		}); err != nil {
			return err
		}
		if cont == "" {
			break
		}
	}
	counted := ""
	if st.Storage.Objects != nil {
		counted = fmt.Sprintf(" (%d counted when planned)", *st.Storage.Objects)
	}
	e.note = fmt.Sprintf("%d %s objects written back in %s%s, %d conflicts with other writers read again and written again; each page backed up under %s/ before its writes",
		done, st.Storage.Kind, st.Storage.StorageVersion, counted, conflicts, migrationDir)
	e.say("  [%d] migrated: %s", n, e.note)
	return nil
}

// ofCounted measures the objects done against the count the plan took when the cluster was
// read: " of 520 counted when planned" (objects created or deleted since move it).
func ofCounted(sm *remediate.StorageMigration) string {
	if sm == nil || sm.Objects == nil {
		return ""
	}
	return fmt.Sprintf(" of %d counted when planned", *sm.Objects)
}

func objName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// writeBack writes one object back unchanged, held to the resourceVersion it was read at. On
// a conflict the object was written by someone else after the read: it is read again and
// written again (what it holds now, never the stale copy). It reports the conflicts met.
func writeBack(ctx context.Context, h dynamic.ResourceInterface, it *unstructured.Unstructured) (int, error) {
	conflicts := 0
	cur := it
	for attempt := 0; ; attempt++ {
		_, err := h.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		switch {
		case err == nil:
			return conflicts, nil
		case apierrors.IsNotFound(err):
			return conflicts, nil // deleted meanwhile: nothing left to migrate
		case apierrors.IsConflict(err) && attempt < 10:
			conflicts++
			cur, err = h.Get(ctx, it.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return conflicts, nil
			}
			if err != nil {
				return conflicts, err
			}
		default:
			return conflicts, err
		}
	}
}

// migrateState: the migration is in place once its write finished (journaled applied); it
// verifies when every object can be listed in the storage version.
func (e *Executor) migrateState(ctx context.Context, cl *cluster, st remediate.Step) (bool, bool, string, error) {
	crd, err := cl.dyn.Resource(crdGVR).Get(ctx, st.Storage.CRD, metav1.GetOptions{})
	if err != nil {
		return false, false, "", fmt.Errorf("reading CRD %s: %w", st.Storage.CRD, err)
	}
	in := e.states[st.ID] != nil && e.states[st.ID].phases[PhaseApplied]
	n, err := countAll(ctx, targetOf(cl, st.Storage, crd))
	if err != nil {
		return in, false, fmt.Sprintf("listing the objects in %s fails: %v", st.Storage.StorageVersion, err), nil
	}
	return in, in, fmt.Sprintf("%d objects readable; the migration has not finished", n), nil
}

func countAll(ctx context.Context, t *storageTarget) (int, error) {
	n, cont := 0, ""
	for {
		l, err := t.list(ctx, cont)
		if err != nil {
			return n, err
		}
		n += len(l.Items)
		if cont = l.GetContinue(); cont == "" {
			return n, nil
		}
	}
}

// trim sets status.storedVersions to the storage version, through the status subresource,
// held to the CRD's resourceVersion read when planning. It runs only after the migration of
// the same CRD verified.
func (e *Executor) trim(ctx context.Context, cl *cluster, st remediate.Step, dry bool) ([]Write, error) {
	sm := st.Storage
	if m := e.states[sm.MigrateStep]; sm.MigrateStep == "" || m == nil || m.terminal != PhaseVerified {
		return nil, fmt.Errorf("refusing to trim status.storedVersions of CRD %s: the migration step %s has not verified (in this run or an earlier one with this --backup-dir); objects may still be stored as %s",
			sm.CRD, sm.MigrateStep, strings.Join(without(sm.StoredVersions, sm.StorageVersion), ", "))
	}
	crd, err := e.crdHold(ctx, cl, st, true)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(storedVersionsOf(crd), sm.StoredVersions) {
		return nil, &ConflictError{Step: st.ID, Object: st.Target, Reason: fmt.Sprintf("status.storedVersions is %v now, not %v", storedVersionsOf(crd), sm.StoredVersions)}
	}
	if err := remediate.GuardAction(st.Action, st.Target, "", nil); err != nil {
		return nil, err
	}
	if err := unstructured.SetNestedStringSlice(crd.Object, []string{sm.StorageVersion}, "status", "storedVersions"); err != nil {
		return nil, err
	}
	out, err := cl.dyn.Resource(crdGVR).UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: FieldManager, DryRun: dryRunOpt(dry)})
	if err != nil {
		return nil, e.writeError(st, st.Target, err)
	}
	if dry {
		return nil, nil
	}
	w := writeOf(st.Target, "update-status", st.Target.ResourceVersion, out)
	return []Write{w}, e.wrote(st, w)
}

func (e *Executor) trimState(ctx context.Context, cl *cluster, st remediate.Step) (bool, bool, string, error) {
	crd, err := cl.dyn.Resource(crdGVR).Get(ctx, st.Storage.CRD, metav1.GetOptions{})
	if err != nil {
		return false, false, "", fmt.Errorf("reading CRD %s: %w", st.Storage.CRD, err)
	}
	got := storedVersionsOf(crd)
	in := slices.Equal(got, []string{st.Storage.StorageVersion})
	if !in {
		return false, false, fmt.Sprintf("status.storedVersions is %v", got), nil
	}
	if _, err := countAll(ctx, targetOf(cl, st.Storage, crd)); err != nil {
		return true, false, fmt.Sprintf("listing the objects fails: %v", err), nil
	}
	return true, true, "", nil
}

func without(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// savePage backs up one page of a migration's objects, exactly as listed, before any of them
// is written back (migration/<cluster>/<crd>/<step>-page-<n>.yaml, 0600). Restore has nothing
// to put back for them: the migration leaves their content as it was.
func (b *Backups) savePage(step, cluster, crd string, page int, list *unstructured.UnstructuredList) error {
	items := make([]any, 0, len(list.Items))
	for _, it := range list.Items {
		c := it.DeepCopy()
		unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
		items = append(items, c.Object)
	}
	y, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	path := filepath.Join(b.dir, migrationDir, safeName(cluster), safeName(crd), fmt.Sprintf("%s-page-%05d.yaml", safeName(step), page))
	if err := writeNew(path, y); err != nil {
		return fmt.Errorf("backing up page %d of %s: %w", page, crd, err)
	}
	return nil
}

const migrationDir = "migration"
