package testenv

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// serverSetMetadata is what the API server assigns itself and refuses or ignores on create.
var serverSetMetadata = []string{"uid", "resourceVersion", "creationTimestamp", "managedFields",
	"generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// generationAnnotation is set and removed on a workload's pod template to bring its
// metadata.generation up to the bundle's: checks compare it with status.observedGeneration.
const (
	generationAnnotation = "testenv.unstick.dev/replayed-generation"
	maxGenerationBumps   = 100
)

var (
	gkPod        = schema.GroupKind{Kind: "Pod"}
	gkNode       = schema.GroupKind{Kind: "Node"}
	gkService    = schema.GroupKind{Kind: "Service"}
	gkNamespace  = schema.GroupKind{Kind: "Namespace"}
	gkJob        = schema.GroupKind{Group: "batch", Kind: "Job"}
	gkAPIService = schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"}
	gkCRD        = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	gkWorkloads  = map[schema.GroupKind]bool{
		{Group: "apps", Kind: "Deployment"}: true, {Group: "apps", Kind: "StatefulSet"}: true,
		{Group: "apps", Kind: "DaemonSet"}: true, {Group: "apps", Kind: "ReplicaSet"}: true,
	}
)

// prepare turns a bundle object into an item ready to create, or counts why it is skipped.
func (l *loader) prepare(o map[string]any) *item {
	u := &unstructured.Unstructured{Object: integers(runtime.DeepCopyJSON(o)).(map[string]any)}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		l.skip("no apiVersion or kind")
		return nil
	}
	info, err := l.resolve(u)
	if err != nil {
		l.skip("not served by this API server: " + gvk.GroupVersion().String() + " " + gvk.Kind)
		return nil
	}
	if !info.creatable {
		l.skip("cannot be created: " + gvk.GroupVersion().String() + " " + gvk.Kind)
		return nil
	}
	gk := gvk.GroupKind()
	if gk == gkAPIService {
		if svc, ok, _ := unstructured.NestedMap(u.Object, "spec", "service"); ok && svc != nil {
			// Its backing server does not run here; discovery would fail for every client.
			l.skip("aggregated APIService (its server does not run here)")
			return nil
		}
	}
	if u.GetName() == "" && u.GetGenerateName() == "" {
		l.skip("no metadata.name")
		return nil
	}
	it := &item{info: info, oldUID: string(u.GetUID()), gen: u.GetGeneration()}
	if ts := u.GetDeletionTimestamp(); ts != nil {
		grace := int64(30)
		if g := u.GetDeletionGracePeriodSeconds(); g != nil {
			grace = *g
		}
		it.deleted = &grace
	}
	for _, ref := range u.GetOwnerReferences() {
		if ref.UID != "" {
			it.owners = append(it.owners, string(ref.UID))
		}
	}
	meta, _ := u.Object["metadata"].(map[string]any)
	for _, k := range serverSetMetadata {
		delete(meta, k)
	}
	if info.namespaced {
		if u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
	} else {
		u.SetNamespace("")
	}
	if status, ok := u.Object["status"]; ok {
		if info.status && !isEmpty(status) && gk != gkNamespace {
			it.status = status
		}
		if info.status || gk == gkNamespace {
			delete(u.Object, "status")
		}
	}
	fixSpec(gk, u)
	if gkWorkloads[gk] && it.gen > 1 && it.gen <= maxGenerationBumps {
		_ = unstructured.SetNestedField(u.Object, "1", "spec", "template", "metadata", "annotations", generationAnnotation)
	}
	it.obj = u
	it.desc = describe(u)
	return it
}

// integers turns the float64s of encoding/json back into int64 where they are whole, as
// unstructured's accessors (generation, grace periods) expect.
func integers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = integers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = integers(e)
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}
	return v
}

func describe(u *unstructured.Unstructured) string {
	name := u.GetName()
	if name == "" {
		name = u.GetGenerateName() + "*"
	}
	if ns := u.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s", strings.ToLower(u.GetKind()), name)
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// fixSpec removes what a fresh server would refuse or compute differently itself.
func fixSpec(gk schema.GroupKind, u *unstructured.Unstructured) {
	switch gk {
	case gkPod:
		// Priority admission computes these from priorityClassName and refuses a pod that
		// states them already.
		unstructured.RemoveNestedField(u.Object, "spec", "priority")
		unstructured.RemoveNestedField(u.Object, "spec", "preemptionPolicy")
		// A token projection needs a service account; admission always names one ("default").
		if sa, _, _ := unstructured.NestedString(u.Object, "spec", "serviceAccountName"); sa == "" && projectsToken(u) {
			_ = unstructured.SetNestedField(u.Object, "default", "spec", "serviceAccountName")
		}
	case gkCRD:
		// CRDs in Kubernetes' own groups need an approval annotation; "unapproved…" is accepted.
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		if protectedGroup(group) {
			a := u.GetAnnotations()
			if _, ok := a["api-approved.kubernetes.io"]; !ok {
				if a == nil {
					a = map[string]string{}
				}
				a["api-approved.kubernetes.io"] = "unapproved, replayed from a bundle by unstick testenv"
				u.SetAnnotations(a)
			}
		}
	case gkService:
		// Cluster IPs and node ports are allocated from this server's ranges.
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
		unstructured.RemoveNestedField(u.Object, "spec", "ipFamilies")
		unstructured.RemoveNestedField(u.Object, "spec", "ipFamilyPolicy")
		unstructured.RemoveNestedField(u.Object, "spec", "healthCheckNodePort")
		if ports, ok, _ := unstructured.NestedSlice(u.Object, "spec", "ports"); ok {
			for _, p := range ports {
				if pm, ok := p.(map[string]any); ok {
					delete(pm, "nodePort")
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
		}
	case gkJob:
		// Unless the selector is manual, the server generates it from the Job's new UID and
		// refuses one given.
		if manual, _, _ := unstructured.NestedBool(u.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(u.Object, "spec", "selector")
			for _, k := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
				unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", k)
			}
		}
	}
	// Owner references without a UID are refused; they could not be followed anyway.
	if refs := u.GetOwnerReferences(); len(refs) > 0 {
		kept := refs[:0]
		for _, r := range refs {
			if r.UID != "" && r.Name != "" && r.Kind != "" && r.APIVersion != "" {
				kept = append(kept, r)
			}
		}
		u.SetOwnerReferences(kept)
	}
}

func protectedGroup(g string) bool {
	return g == "k8s.io" || g == "kubernetes.io" || strings.HasSuffix(g, ".k8s.io") || strings.HasSuffix(g, ".kubernetes.io")
}

func projectsToken(u *unstructured.Unstructured) bool {
	vols, _, _ := unstructured.NestedSlice(u.Object, "spec", "volumes")
	for _, v := range vols {
		srcs, _, _ := unstructured.NestedSlice(v.(map[string]any), "projected", "sources")
		for _, s := range srcs {
			if sm, ok := s.(map[string]any); ok && sm["serviceAccountToken"] != nil {
				return true
			}
		}
	}
	return false
}

func (l *loader) client(it *item) dynamic.ResourceInterface {
	r := l.dyn.Resource(it.info.gvr)
	if it.info.namespaced {
		return r.Namespace(it.obj.GetNamespace())
	}
	return r
}

// write creates one object, then replays its generation, status and deletion. It returns an
// error only when the server is gone; anything refused is a warning.
func (l *loader) write(ctx context.Context, it *item) error {
	l.remapUIDs(it.obj)
	c := l.client(it)
	created, err := c.Create(ctx, it.obj, metav1.CreateOptions{FieldManager: "unstick-testenv"})
	switch {
	case apierrors.IsAlreadyExists(err) && it.obj.GroupVersionKind().GroupKind() == gkCRD && !l.keepCRDs:
		return l.replaceCRD(ctx, it)
	case apierrors.IsAlreadyExists(err):
		l.count(func(r *LoadResult) { r.Existing++ })
		if cur, err := c.Get(ctx, it.obj.GetName(), metav1.GetOptions{}); err == nil {
			l.mapUID(it.oldUID, string(cur.GetUID()))
		}
		return nil
	case err != nil && serverGone(ctx, err):
		return fmt.Errorf("testenv: creating %s: %w", it.desc, err)
	case err != nil:
		l.skip("refused by the API server")
		l.warnf("%s: create refused: %v", it.desc, err)
		return nil
	}
	l.count(func(r *LoadResult) { r.Created++ })
	l.mapUID(it.oldUID, string(created.GetUID()))
	it.written = true

	if created, err = l.restoreSpec(ctx, it, created); err != nil {
		return err
	}
	if it.status != nil {
		if err := l.writeStatus(ctx, it, created); err != nil {
			return err
		}
	}
	if it.deleted != nil {
		l.mu.Lock()
		l.deletions = append(l.deletions, it)
		l.mu.Unlock()
	}
	return nil
}

func (l *loader) mapUID(old, new string) {
	if old == "" || new == "" {
		return
	}
	l.mu.Lock()
	l.uids[old] = new
	l.mu.Unlock()
}

// remapUIDs points owner references and events' object references at the UIDs the server
// gave the objects this load created; references to objects outside the bundle keep theirs.
func (l *loader) remapUIDs(u *unstructured.Unstructured) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if refs := u.GetOwnerReferences(); len(refs) > 0 {
		for i := range refs {
			if n, ok := l.uids[string(refs[i].UID)]; ok {
				refs[i].UID = types.UID(n)
			}
		}
		u.SetOwnerReferences(refs)
	}
	for _, f := range []string{"involvedObject", "regarding", "related"} {
		if uid, ok, _ := unstructured.NestedString(u.Object, f, "uid"); ok {
			if n, ok := l.uids[uid]; ok {
				_ = unstructured.SetNestedField(u.Object, n, f, "uid")
			}
		}
	}
}

// restoreSpec undoes what admission changed on create (a node's not-ready taint) and brings a
// workload's generation up to the bundle's.
func (l *loader) restoreSpec(ctx context.Context, it *item, created *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gk := it.obj.GroupVersionKind().GroupKind()
	c := l.client(it)
	update := func(mutate func(u *unstructured.Unstructured)) error {
		body := created.DeepCopy()
		mutate(body)
		out, err := c.Update(ctx, body, metav1.UpdateOptions{FieldManager: "unstick-testenv"})
		if err != nil {
			if serverGone(ctx, err) {
				return fmt.Errorf("testenv: updating %s: %w", it.desc, err)
			}
			l.warnf("%s: %v", it.desc, err)
			return errStop
		}
		created = out
		return nil
	}
	if gk == gkNode {
		want, _, _ := unstructured.NestedSlice(it.obj.Object, "spec", "taints")
		got, _, _ := unstructured.NestedSlice(created.Object, "spec", "taints")
		if len(got) != len(want) {
			err := update(func(u *unstructured.Unstructured) {
				if len(want) == 0 {
					unstructured.RemoveNestedField(u.Object, "spec", "taints")
				} else {
					_ = unstructured.SetNestedSlice(u.Object, want, "spec", "taints")
				}
			})
			if err != nil && err != errStop {
				return nil, err
			}
		}
	}
	if gkWorkloads[gk] && it.gen > maxGenerationBumps {
		l.warnf("%s: generation %d left at 1 (more than %d updates to replay)", it.desc, it.gen, maxGenerationBumps)
	}
	if gkWorkloads[gk] && it.gen > 1 && it.gen <= maxGenerationBumps {
		for g := int64(2); g <= it.gen; g++ {
			last := g == it.gen
			err := update(func(u *unstructured.Unstructured) {
				if last {
					unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "annotations", generationAnnotation)
					if a, ok, _ := unstructured.NestedMap(u.Object, "spec", "template", "metadata", "annotations"); ok && len(a) == 0 {
						unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "annotations")
					}
				} else {
					_ = unstructured.SetNestedField(u.Object, strconv.FormatInt(g, 10), "spec", "template", "metadata", "annotations", generationAnnotation)
				}
			})
			if err == errStop {
				break
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return created, nil
}

var errStop = fmt.Errorf("stop")

// writeStatus writes the bundle's status through the status subresource. Fields the server
// computes itself are taken from the created object; fields it still refuses are dropped one
// by one, each with a warning, so the rest of the status lands.
func (l *loader) writeStatus(ctx context.Context, it *item, created *unstructured.Unstructured) error {
	status := runtime.DeepCopyJSONValue(it.status).(map[string]any)
	fixStatus(it.obj.GroupVersionKind().GroupKind(), status, created)
	c := l.client(it)
	for attempt := 0; attempt < 10; attempt++ {
		body := created.DeepCopy()
		body.Object["status"] = status
		_, err := c.UpdateStatus(ctx, body, metav1.UpdateOptions{FieldManager: "unstick-testenv"})
		switch {
		case err == nil:
			l.count(func(r *LoadResult) { r.StatusWritten++ })
			return nil
		case apierrors.IsConflict(err):
			cur, gerr := c.Get(ctx, created.GetName(), metav1.GetOptions{})
			if gerr != nil {
				l.warnf("%s: status not written: %v", it.desc, gerr)
				return nil
			}
			created = cur
			continue
		case apierrors.IsInvalid(err):
			removed := false
			if se, ok := err.(apierrors.APIStatus); ok && se.Status().Details != nil {
				for _, cause := range se.Status().Details.Causes {
					if path, ok := strings.CutPrefix(cause.Field, "status."); ok && removeField(status, path) {
						removed = true
						l.warnf("%s: status field %s dropped: %s", it.desc, cause.Field, cause.Message)
					}
				}
			}
			if removed {
				continue
			}
			l.warnf("%s: status not written: %v", it.desc, err)
			return nil
		case serverGone(ctx, err):
			return fmt.Errorf("testenv: writing the status of %s: %w", it.desc, err)
		default:
			l.warnf("%s: status not written: %v", it.desc, err)
			return nil
		}
	}
	l.warnf("%s: status not written after repeated refusals", it.desc)
	return nil
}

// fixStatus adjusts a bundle status to what this server accepts for the object it created.
func fixStatus(gk schema.GroupKind, status map[string]any, created *unstructured.Unstructured) {
	switch gk {
	case gkPod:
		// qosClass is computed from the spec on create and immutable afterwards.
		if q, ok, _ := unstructured.NestedString(created.Object, "status", "qosClass"); ok {
			status["qosClass"] = q
		} else {
			delete(status, "qosClass")
		}
	case gkJob:
		fixJobConditions(status)
	}
}

// fixJobConditions adds the interim conditions the Job controller sets before a terminal
// one (FailureTarget before Failed, SuccessCriteriaMet before Complete), which the API
// server requires since Kubernetes 1.31 and older bundles or hand-written ones lack.
func fixJobConditions(status map[string]any) {
	conds, _ := status["conditions"].([]any)
	has := map[string]bool{}
	for _, c := range conds {
		if cm, ok := c.(map[string]any); ok && cm["status"] == "True" {
			has[fmt.Sprint(cm["type"])] = true
		}
	}
	var extra []any
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok || cm["status"] != "True" {
			continue
		}
		interim := map[string]string{"Failed": "FailureTarget", "Complete": "SuccessCriteriaMet"}[fmt.Sprint(cm["type"])]
		if interim == "" || has[interim] {
			continue
		}
		n := runtime.DeepCopyJSONValue(cm).(map[string]any)
		n["type"] = interim
		extra = append(extra, n)
		has[interim] = true
	}
	if len(extra) > 0 {
		status["conditions"] = append(extra, conds...)
	}
}

// removeField deletes the field a validation error names, such as "conditions[0].reason"
// or "containerStatuses[1].state"; a list element is removed when its field is not there.
func removeField(obj map[string]any, path string) bool {
	segs := splitFieldPath(path)
	if len(segs) == 0 {
		return false
	}
	var parent any = obj
	var chain []any // containers visited, for removing a list element
	for i, s := range segs {
		last := i == len(segs)-1
		switch p := parent.(type) {
		case map[string]any:
			v, ok := p[s]
			if !ok {
				return removeLastIndex(obj, segs[:i])
			}
			if last {
				delete(p, s)
				return true
			}
			chain = append(chain, p)
			parent = v
		case []any:
			idx, err := strconv.Atoi(s)
			if err != nil || idx < 0 || idx >= len(p) {
				return false
			}
			if last {
				return removeLastIndex(obj, segs[:i+1])
			}
			chain = append(chain, p)
			parent = p[idx]
		default:
			return removeLastIndex(obj, segs[:i])
		}
	}
	return false
}

// removeLastIndex removes the list element named by the last numeric segment of segs.
func removeLastIndex(obj map[string]any, segs []string) bool {
	for n := len(segs); n > 0; n-- {
		idx, err := strconv.Atoi(segs[n-1])
		if err != nil {
			continue
		}
		listPath := segs[:n-1]
		var cur any = obj
		var holder map[string]any
		key := ""
		for _, s := range listPath {
			switch p := cur.(type) {
			case map[string]any:
				holder, key = p, s
				cur = p[s]
			case []any:
				i, err := strconv.Atoi(s)
				if err != nil || i >= len(p) {
					return false
				}
				holder, key = nil, ""
				cur = p[i]
			default:
				return false
			}
		}
		list, ok := cur.([]any)
		if !ok || holder == nil || idx >= len(list) {
			return false
		}
		holder[key] = append(append([]any{}, list[:idx]...), list[idx+1:]...)
		return true
	}
	return false
}

// splitFieldPath splits "a.b[2].c[key.with.dots]" into a, b, 2, c, key.with.dots.
func splitFieldPath(p string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; ch {
		case '.':
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		case '[':
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				return append(out, p[i+1:])
			}
			out = append(out, p[i+1:i+j])
			i += j
		default:
			cur.WriteByte(ch)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// replayDeletions deletes again what was terminating in the bundle, once everything else is
// written (a terminating namespace refuses new objects). Only what something would hold in
// place here stays terminating: objects with finalizers and pods bound to a node (which wait
// for a kubelet); anything else would vanish, so it is left alive with a warning.
func (l *loader) replayDeletions(ctx context.Context) error {
	for _, it := range l.deletions {
		gk := it.obj.GroupVersionKind().GroupKind()
		node, _, _ := unstructured.NestedString(it.obj.Object, "spec", "nodeName")
		held := len(it.obj.GetFinalizers()) > 0 || gk == gkNamespace || (gk == gkPod && node != "")
		if !held {
			l.warnf("%s: terminating in the bundle, left alive (nothing here would hold its deletion)", it.desc)
			continue
		}
		grace := *it.deleted
		if grace < 1 {
			grace = 1 // 0 would remove it at once
		}
		opts := metav1.DeleteOptions{}
		if gk == gkPod {
			opts.GracePeriodSeconds = &grace
		}
		err := l.client(it).Delete(ctx, it.obj.GetName(), opts)
		if err != nil {
			if serverGone(ctx, err) {
				return fmt.Errorf("testenv: deleting %s: %w", it.desc, err)
			}
			l.warnf("%s: replaying its deletion: %v", it.desc, err)
		}
	}
	return nil
}
