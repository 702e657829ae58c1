package execute

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// A release record is only a Secret: whoever may write Secrets in a namespace can write one
// whose manifest names a ClusterRoleBinding, a webhook or another team's Deployment. Before a
// step applies a stored manifest, every object in it is read and judged (ownership.go of
// internal/remediate); one object that is not the release's refuses the whole step before
// its first write.

// manifestItem is one object of a manifest with its live copy and the verdict on it.
type manifestItem struct {
	desired *unstructured.Unstructured
	live    *unstructured.Unstructured
	verdict remediate.ObjectVerdict
}

// reviewManifest reads every object of a manifest and judges it for release ns/name. With
// classify, each object the release may write is dry-run applied to tell a change from an
// unchanged object; without, an existing object counts as changed.
func (e *Executor) reviewManifest(ctx context.Context, cl *cluster, ns, name, manifest string, classify bool) ([]manifestItem, error) {
	us, objs, err := e.manifestObjects(cl, ns, manifest)
	if err != nil {
		return nil, err
	}
	return e.reviewObjects(ctx, cl, ns, name, us, objs, classify)
}

func (e *Executor) reviewObjects(ctx context.Context, cl *cluster, ns, name string, us []*unstructured.Unstructured, objs []remediate.Object, classify bool) ([]manifestItem, error) {
	items := make([]manifestItem, 0, len(us))
	for i, u := range us {
		it, err := e.judgeObject(ctx, cl, ns, name, u, objs[i])
		if err != nil {
			return nil, err
		}
		if classify && it.verdict.Op == remediate.OpChange {
			if it.verdict.Op, err = e.classify(ctx, cl, ns, name, it); err != nil {
				return nil, err
			}
		}
		items = append(items, it)
	}
	return items, nil
}

// judgeObject reads one manifest object and judges it without writing.
func (e *Executor) judgeObject(ctx context.Context, cl *cluster, ns, name string, u *unstructured.Unstructured, o remediate.Object) (manifestItem, error) {
	live, err := cl.read(ctx, o)
	if err != nil {
		return manifestItem{}, fmt.Errorf("reading %s: %w", o.Ref(), err)
	}
	it := manifestItem{desired: u, live: live}
	it.verdict = remediate.ObjectVerdict{Object: o, HighRisk: remediate.HighRiskReason(o, u.Object)}
	var typ string
	var lbls map[string]string
	if live != nil {
		typ, _, _ = unstructured.NestedString(live.Object, "type")
		lbls = live.GetLabels()
	}
	if err := remediate.Guard(o, typ, lbls); err != nil {
		it.verdict.Op, it.verdict.Refused = remediate.OpLeftAlone, err.Error()
		return it, nil
	}
	_, namespaced, err := cl.resource(o.APIVersion, o.Kind)
	if err != nil {
		return manifestItem{}, err
	}
	m := remediate.ManifestObject{Object: o, Namespaced: namespaced, Exists: live != nil, Doc: u.Object}
	if live != nil {
		m.Labels, m.Annotations = live.GetLabels(), live.GetAnnotations()
	}
	switch why := remediate.OwnershipRefusal(ns, name, m); {
	case why != "":
		it.verdict.Op, it.verdict.Refused = remediate.OpRefused, why
	case live == nil:
		it.verdict.Op = remediate.OpCreate
	default:
		it.verdict.Op = remediate.OpChange
	}
	return it, nil
}

// classify dry-run applies an existing object as the rollback would and says whether the
// server would change it.
func (e *Executor) classify(ctx context.Context, cl *cluster, ns, name string, it manifestItem) (string, error) {
	o := it.verdict.Object
	u := it.desired.DeepCopy()
	setHelmMetadata(u, name, ns)
	u.SetResourceVersion(it.live.GetResourceVersion())
	h, err := cl.handle(o)
	if err != nil {
		return "", err
	}
	preview, err := h.Apply(ctx, o.Name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return "", fmt.Errorf("dry-run apply of %s: %w", o.Ref(), err)
	}
	if sameContent(it.live, preview) {
		return remediate.OpUnchanged, nil
	}
	return remediate.OpChange, nil
}

func verdictsOf(items []manifestItem) []remediate.ObjectVerdict {
	out := make([]remediate.ObjectVerdict, len(items))
	for i, it := range items {
		out[i] = it.verdict
	}
	return out
}

// gateRollback reviews the target manifest of a rollback and refuses the whole step when an
// object is not the release's, or is high risk and would be written below --max-risk high.
func (e *Executor) gateRollback(ctx context.Context, cl *cluster, st remediate.Step, manifest string) ([]remediate.ObjectVerdict, error) {
	h := st.Helm
	items, err := e.reviewManifest(ctx, cl, h.Namespace, h.Release, manifest, true)
	if err != nil {
		return nil, err
	}
	vs := verdictsOf(items)
	if gerr := remediate.GateManifest(st.ID, h.Namespace, h.Release, vs, e.maxRisk); gerr != nil {
		return vs, gerr
	}
	return vs, nil
}

// previewRollback lists, before the prompt, what the rollback would do to each object of
// the target manifest, and refuses the step when the gate does.
func (e *Executor) previewRollback(ctx context.Context, cl *cluster, st remediate.Step) error {
	manifest, err := e.targetManifest(cl, st)
	if err != nil {
		return err
	}
	vs, gerr := e.gateRollback(ctx, cl, st, manifest)
	if vs == nil && gerr != nil {
		return gerr
	}
	e.say("  [%d] revision %d's manifest, object by object:", e.numbers[st.ID], st.Helm.Target)
	if len(vs) == 0 {
		e.say("      (no objects)")
	}
	for _, v := range vs {
		e.say("      %s", v)
	}
	return gerr
}

// checkOwned holds one object to the gate again just before it is applied: the objects were
// judged before the first write, and one that changed owner since is not written.
func checkOwned(st remediate.Step, it manifestItem) error {
	if it.verdict.Op != remediate.OpRefused {
		return nil
	}
	return &remediate.OwnershipError{Step: st.ID, Release: st.Helm.Namespace + "/" + st.Helm.Release, Refused: []remediate.ObjectVerdict{it.verdict}}
}

// gateRewrite judges the objects of the documents a manifest rewrite changes: the rewritten
// record claims them for the release at their new API, so each that exists must be the
// release's, as for a rollback. The record alone is written: no object is applied or
// created, so an object that does not exist is not refused (the next upgrade or rollback,
// by unstick, judges it again), and high risk does not apply.
func (e *Executor) gateRewrite(ctx context.Context, cl *cluster, st remediate.Step, changes []docChange) error {
	rw := st.Rewrite
	var us []*unstructured.Unstructured
	var objs []remediate.Object
	for _, c := range changes {
		u := (&unstructured.Unstructured{Object: c.Obj}).DeepCopy()
		o, err := resolveObject(cl, rw.Namespace, u)
		if err != nil {
			return err
		}
		us, objs = append(us, u), append(objs, o)
	}
	items, err := e.reviewObjects(ctx, cl, rw.Namespace, rw.Release, us, objs, false)
	if err != nil {
		return err
	}
	vs := verdictsOf(items)
	for i, it := range items {
		if it.live == nil && vs[i].Op == remediate.OpRefused {
			vs[i].Op, vs[i].Refused = remediate.OpCreate, ""
		}
	}
	if gerr := remediate.GateManifest(st.ID, rw.Namespace, rw.Release, vs, remediate.High); gerr != nil {
		return gerr
	}
	return nil
}
