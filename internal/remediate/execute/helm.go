package execute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// Helm steps write release records with Helm's own Secrets driver (driver.Secrets, keyed as
// Helm's pkg/storage keys them: helmstore.go), through a SecretInterface that adds what
// Helm's driver does not do: the guard, server-side dry-run, the resourceVersion read when
// planning as a precondition of every update, and records written without loss
// (helmrecord.go). Helm's action.Rollback is not used: it needs Helm's kube client, which cannot
// dry-run or hold a write to a resourceVersion. Instead the rollback follows action.Rollback
// step by step (prepareRollback, performRollback, Run) and re-applies the target revision's
// manifest objects with server-side apply.

// guardedSecrets is the SecretInterface Helm's storage driver writes through.
type guardedSecrets struct {
	corev1client.SecretInterface
	cluster, namespace string
	step               string
	dry                bool
	// expect holds each Secret's resourceVersion precondition; an update of a Secret not in
	// it is refused (the driver only ever rewrites what the plan named).
	expect  map[string]string
	writes  []Write
	lastErr error
	// afterWrite journals each write as it is made (and runs the test hook).
	afterWrite func(Write) error
	// read holds each Secret as last read or written, the base of its next write;
	// derived names, for a new record, the Secret whose record it is made from
	// (helmrecord.go).
	read    map[string]*corev1.Secret
	derived map[string]string
}

func (g *guardedSecrets) object(name string) remediate.Object {
	return remediate.Object{Cluster: g.cluster, APIVersion: "v1", Kind: "Secret", Namespace: g.namespace, Name: name}
}

func (g *guardedSecrets) Create(ctx context.Context, s *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error) {
	o := g.object(s.Name)
	s, err := g.created(ctx, s)
	if err != nil {
		g.lastErr = err
		return nil, err
	}
	if err := remediate.Guard(o, string(s.Type), s.Labels); err != nil {
		g.lastErr = err
		return nil, err
	}
	opts.FieldManager, opts.DryRun = FieldManager, dryRunOpt(g.dry)
	out, err := g.SecretInterface.Create(ctx, s, opts)
	if err != nil && !g.dry && OutcomeUnknown(err) {
		out, err = g.landed(ctx, s, "", err)
	}
	if err != nil {
		g.lastErr = err
		return nil, err
	}
	if !g.dry {
		g.writes = append(g.writes, Write{Cluster: g.cluster, APIVersion: "v1", Kind: "Secret", Namespace: g.namespace, Name: s.Name, Op: "create", After: out.ResourceVersion, UID: string(out.UID)})
		g.expect[s.Name] = out.ResourceVersion
		g.remember(out)
		if err := g.hook(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (g *guardedSecrets) Update(ctx context.Context, s *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error) {
	o := g.object(s.Name)
	rv, ok := g.expect[s.Name]
	if !ok {
		err := fmt.Errorf("refusing an unplanned write to Secret %s/%s", g.namespace, s.Name)
		g.lastErr = err
		return nil, err
	}
	s, err := g.updated(ctx, s, rv)
	if err != nil {
		g.lastErr = err
		return nil, err
	}
	if err := remediate.Guard(o, string(s.Type), s.Labels); err != nil {
		g.lastErr = err
		return nil, err
	}
	s.ResourceVersion = rv
	opts.FieldManager, opts.DryRun = FieldManager, dryRunOpt(g.dry)
	out, err := g.SecretInterface.Update(ctx, s, opts)
	if err != nil && !g.dry && OutcomeUnknown(err) {
		out, err = g.landed(ctx, s, rv, err)
	}
	if err != nil {
		g.lastErr = err
		return nil, err
	}
	if !g.dry {
		g.writes = append(g.writes, Write{Cluster: g.cluster, APIVersion: "v1", Kind: "Secret", Namespace: g.namespace, Name: s.Name, Op: "update", Before: rv, After: out.ResourceVersion, UID: string(out.UID)})
		g.expect[s.Name] = out.ResourceVersion
		g.remember(out)
		if err := g.hook(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// landed reads a release Secret back after a write whose answer was lost: when it holds
// exactly the record and labels written, past the version the write was held to (or newly
// there, for a create), the write was made and the rollback goes on; otherwise the write's
// own error stands.
func (g *guardedSecrets) landed(ctx context.Context, s *corev1.Secret, before string, werr error) (*corev1.Secret, error) {
	now, err := g.SecretInterface.Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil || now.ResourceVersion == before || !reflect.DeepEqual(now.Data, s.Data) || !maps.Equal(now.Labels, s.Labels) {
		return nil, werr
	}
	return now, nil
}

func (g *guardedSecrets) hook() error {
	if g.afterWrite == nil {
		return nil
	}
	if err := g.afterWrite(g.writes[len(g.writes)-1]); err != nil {
		g.lastErr = err
		return err
	}
	return nil
}

func (g *guardedSecrets) Delete(context.Context, string, metav1.DeleteOptions) error {
	return errors.New("unstick never deletes a release record through Helm's driver")
}

// storageFor opens the release records of a namespace's Secrets, writes guarded.
func (e *Executor) storageFor(cl *cluster, st remediate.Step, dry bool, expect map[string]string) (releaseStore, *guardedSecrets) {
	return e.storageIn(cl, st, st.Helm.Namespace, dry, expect)
}

// storageIn opens the release records in the Secrets of namespace ns, writes guarded.
func (e *Executor) storageIn(cl *cluster, st remediate.Step, ns string, dry bool, expect map[string]string) (releaseStore, *guardedSecrets) {
	gs := &guardedSecrets{SecretInterface: cl.kube.Core.Secrets(ns), cluster: cl.name, namespace: ns, step: st.ID, dry: dry, expect: expect}
	gs.afterWrite = func(w Write) error { return e.wrote(st, w) }
	return releaseStore{d: driver.NewSecrets(gs)}, gs
}

func plannedVersions(st remediate.Step) map[string]string {
	m := map[string]string{}
	for _, o := range st.Touches {
		if o.Kind == "Secret" && !o.Create {
			m[o.Name] = o.ResourceVersion
		}
	}
	return m
}

// helmErr maps a storage error to a conflict when the precondition caught a change.
func (e *Executor) helmErr(st remediate.Step, gs *guardedSecrets, name string, err error) error {
	cause := gs.lastErr
	if cause == nil {
		cause = err
	}
	if errors.Is(cause, ErrKilled) {
		return ErrKilled
	}
	var ge *remediate.GuardError
	if errors.As(cause, &ge) {
		return ge
	}
	if apierrors.IsConflict(cause) || apierrors.IsAlreadyExists(cause) || errors.Is(err, driver.ErrReleaseExists) {
		return &ConflictError{Step: st.ID, Object: gs.object(name), Reason: "the API server refused the write: " + cause.Error()}
	}
	if st.Helm == nil {
		return fmt.Errorf("Helm release record %s/%s: %w", gs.namespace, name, err)
	}
	return fmt.Errorf("Helm release %s/%s: %w", st.Helm.Namespace, st.Helm.Release, err)
}

// helmRollback is `helm rollback RELEASE TARGET` (Helm's pkg/action/rollback.go): a new
// revision N+1 with the target's chart, values, manifest, hooks and labels, status
// pending-rollback and description "Rollback to T"; the target manifest's objects applied;
// every deployed revision superseded; the stuck pending revision superseded too (helm leaves
// it pending in the history, where it only confuses); N+1 deployed.
func (e *Executor) helmRollback(ctx context.Context, cl *cluster, st remediate.Step, dry bool) ([]Write, error) {
	return e.rollback(ctx, cl, st, dry, plannedVersions(st), nil)
}

// helmFinish finishes a rollback an interrupted run left at pending-rollback, from the
// records as they are (their versions are the ones unstick's own writes left). It reports
// false when there is no such half-written rollback.
func (e *Executor) helmFinish(ctx context.Context, cl *cluster, st remediate.Step) ([]Write, bool, error) {
	h := st.Helm
	store, _ := e.storageFor(cl, st, true, map[string]string{})
	last, err := store.Last(h.Release)
	if err != nil {
		return nil, false, fmt.Errorf("reading Helm release %s/%s: %w", h.Namespace, h.Release, err)
	}
	if last.Version != h.NewRevision || last.Info == nil || last.Info.Description != fmt.Sprintf("Rollback to %d", h.Target) {
		return nil, false, nil
	}
	// The step comes from the journal, which is only a file: the revision must also be one
	// unstick wrote (its field manager), or this is not unstick's rollback to finish.
	if s, err := cl.kube.Core.Secrets(h.Namespace).Get(ctx, h.SecretName(h.NewRevision), metav1.GetOptions{}); err != nil || !managedBy(s.ManagedFields, FieldManager) {
		return nil, false, nil
	}
	expect := map[string]string{}
	for _, rev := range []int{h.Current, h.Target, h.NewRevision} {
		if s, err := cl.kube.Core.Secrets(h.Namespace).Get(ctx, h.SecretName(rev), metav1.GetOptions{}); err == nil {
			expect[s.Name] = s.ResourceVersion
		}
	}
	w, err := e.rollback(ctx, cl, st, false, expect, last)
	return w, true, err
}

func (e *Executor) rollback(ctx context.Context, cl *cluster, st remediate.Step, dry bool, expect map[string]string, resumed *release.Release) ([]Write, error) {
	h := st.Helm
	store, gs := e.storageFor(cl, st, dry, expect)
	rel := resumed
	if rel == nil {
		// Every release Secret is held to the version read when planning before the first
		// write, so a change anywhere in the history stops the rollback with nothing written.
		if err := e.holdSecrets(ctx, cl, st, expect); err != nil {
			return nil, err
		}
		last, err := store.Last(h.Release)
		if err != nil {
			return nil, e.helmErr(st, gs, h.SecretName(h.Current), err)
		}
		current, err := store.Get(h.Release, h.Current)
		if err != nil {
			return nil, e.helmErr(st, gs, h.SecretName(h.Current), err)
		}
		target, err := store.Get(h.Release, h.Target)
		if err != nil {
			return nil, e.helmErr(st, gs, h.SecretName(h.Target), err)
		}
		if err := checkRecords(st, gs, current, target); err != nil {
			return nil, err
		}
		if err := manifestFits(h.Namespace, h.Release, h.Target, target.Manifest); err != nil {
			return nil, err
		}
		// Every object of the target manifest is judged before the first write.
		if _, err := e.gateRollback(ctx, cl, st, target.Manifest); err != nil {
			return nil, err
		}
		switch {
		case last.Version != h.Current:
			return nil, &ConflictError{Step: st.ID, Object: gs.object(h.SecretName(last.Version)), Reason: fmt.Sprintf("revision %d is the newest now, not %d", last.Version, h.Current)}
		case current.Info == nil || current.Info.Status.String() != h.CurrentStatus:
			return nil, &ConflictError{Step: st.ID, Object: gs.object(h.SecretName(h.Current)), Reason: fmt.Sprintf("revision %d is no longer %s", h.Current, h.CurrentStatus)}
		}
		rel = &release.Release{
			Name:      h.Release,
			Namespace: h.Namespace,
			Chart:     target.Chart,
			Config:    target.Config,
			Info: &release.Info{
				FirstDeployed: current.Info.FirstDeployed,
				LastDeployed:  helmtime.Now(),
				Status:        release.StatusPendingRollback,
				Notes:         target.Info.Notes,
				Description:   fmt.Sprintf("Rollback to %d", h.Target),
			},
			Version:  current.Version + 1,
			Labels:   target.Labels,
			Manifest: target.Manifest,
			Hooks:    target.Hooks,
		}
		if dry {
			// A dry-run cannot update what it did not create: validate the final record.
			rel.Info.Status = release.StatusDeployed
		}
		gs.derive(h.SecretName(rel.Version), h.SecretName(h.Target))
		if err := store.Create(rel); err != nil {
			return nil, e.helmErr(st, gs, h.SecretName(rel.Version), err)
		}
	}
	applied, err := e.applyManifest(ctx, cl, st, rel.Manifest, dry)
	if err != nil {
		return append(gs.writes, applied...), err
	}
	deployed, err := store.DeployedAll(h.Release)
	if err != nil && !errors.Is(err, driver.ErrNoDeployedReleases) && !strings.Contains(err.Error(), "has no deployed releases") {
		return append(gs.writes, applied...), e.helmErr(st, gs, h.SecretName(h.Target), err)
	}
	for _, d := range deployed {
		if d.Version == rel.Version {
			continue
		}
		d.Info.Status = release.StatusSuperseded
		if err := store.Update(d); err != nil {
			return append(gs.writes, applied...), e.helmErr(st, gs, h.SecretName(d.Version), err)
		}
	}
	if cur, err := store.Get(h.Release, h.Current); err == nil && cur.Info != nil && cur.Info.Status.IsPending() {
		cur.Info.Status = release.StatusSuperseded
		if err := store.Update(cur); err != nil {
			return append(gs.writes, applied...), e.helmErr(st, gs, h.SecretName(h.Current), err)
		}
	}
	if !dry {
		rel.Info.Status = release.StatusDeployed
		if err := store.Update(rel); err != nil {
			return append(gs.writes, applied...), e.helmErr(st, gs, h.SecretName(rel.Version), err)
		}
	}
	return append(gs.writes, applied...), nil
}

// RecordError is a release record that does not match the Secret holding it: the step is
// refused, the rest of the run goes on.
type RecordError struct {
	Object remediate.Object
	Reason string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("refusing to act on Helm release Secret %s on %s: %s; a malformed release record is never acted on", e.Object.Ref(), e.Object.Cluster, e.Reason)
}

// checkRecords holds the records read to the Secrets they were read from: a record that
// names another release, namespace or revision than its Secret is not acted on.
func checkRecords(st remediate.Step, gs *guardedSecrets, recs ...*release.Release) error {
	h := st.Helm
	for i, r := range recs {
		rev := []int{h.Current, h.Target}[i]
		if r.Name != h.Release || r.Version != rev || (r.Namespace != "" && r.Namespace != h.Namespace) {
			return &RecordError{Object: gs.object(h.SecretName(rev)), Reason: fmt.Sprintf("the record it holds names release %q in namespace %q at revision %d", r.Name, r.Namespace, r.Version)}
		}
	}
	return nil
}

// holdSecrets checks that every release Secret still has the version read when planning.
func (e *Executor) holdSecrets(ctx context.Context, cl *cluster, st remediate.Step, expect map[string]string) error {
	return e.holdSecretsIn(ctx, cl, st, st.Helm.Namespace, expect)
}

func (e *Executor) holdSecretsIn(ctx context.Context, cl *cluster, st remediate.Step, ns string, expect map[string]string) error {
	for name, rv := range expect {
		o := remediate.Object{Cluster: cl.name, APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: name, ResourceVersion: rv}
		s, err := cl.kube.Core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return &ConflictError{Step: st.ID, Object: o, Reason: "it no longer exists"}
		}
		if err != nil {
			return fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
		}
		if rv != "" && s.ResourceVersion != rv {
			return &ConflictError{Step: st.ID, Object: o, Reason: fmt.Sprintf("resourceVersion %s when planned, %s now", rv, s.ResourceVersion)}
		}
	}
	return nil
}

// helmMarkFailed marks a pending revision with nothing to roll back to failed, in the record
// and its status label, as Fleet and Helm-based operators do to unlock a release.
func (e *Executor) helmMarkFailed(ctx context.Context, cl *cluster, st remediate.Step, dry bool) ([]Write, error) {
	h := st.Helm
	expect := plannedVersions(st)
	if err := e.holdSecrets(ctx, cl, st, expect); err != nil {
		return nil, err
	}
	store, gs := e.storageFor(cl, st, dry, expect)
	last, err := store.Last(h.Release)
	if err != nil {
		return nil, e.helmErr(st, gs, h.SecretName(h.Current), err)
	}
	if last.Version != h.Current || last.Info == nil || last.Info.Status.String() != h.CurrentStatus {
		return nil, &ConflictError{Step: st.ID, Object: gs.object(h.SecretName(last.Version)), Reason: fmt.Sprintf("the newest revision is %d (%s), not %d (%s)", last.Version, statusOf(last), h.Current, h.CurrentStatus)}
	}
	last.SetStatus(release.StatusFailed, fmt.Sprintf("Release unlocked from %q state by unstick: no earlier revision to roll back to", h.CurrentStatus))
	if err := store.Update(last); err != nil {
		return nil, e.helmErr(st, gs, h.SecretName(h.Current), err)
	}
	return gs.writes, nil
}

func statusOf(r *release.Release) string {
	if r.Info == nil {
		return "unknown"
	}
	return r.Info.Status.String()
}

// helmState reads the release the way Helm does.
func (e *Executor) helmState(ctx context.Context, cl *cluster, st remediate.Step) (bool, bool, string, error) {
	h := st.Helm
	store, _ := e.storageFor(cl, st, true, map[string]string{})
	last, err := store.Last(h.Release)
	if err != nil {
		return false, false, "", fmt.Errorf("reading Helm release %s/%s: %w", h.Namespace, h.Release, err)
	}
	switch st.Action {
	case remediate.HelmMarkFailed:
		cur, err := store.Get(h.Release, h.Current)
		if err != nil {
			return false, false, "", err
		}
		return markedThenDeployed(h, cur, last)
	}
	if last.Version != h.NewRevision || last.Info == nil || last.Info.Description != fmt.Sprintf("Rollback to %d", h.Target) {
		return false, false, fmt.Sprintf("the newest revision is %d (%s)", last.Version, statusOf(last)), nil
	}
	if last.Info.Status != release.StatusDeployed {
		return false, false, fmt.Sprintf("revision %d is %s", last.Version, statusOf(last)), nil
	}
	target, err := store.Get(h.Release, h.Target)
	if err != nil {
		return true, false, "", err
	}
	chart := ""
	if last.Chart != nil && last.Chart.Metadata != nil {
		chart = last.Chart.Metadata.Name + "-" + last.Chart.Metadata.Version
	}
	if h.TargetChart != "-" && chart != h.TargetChart {
		return true, false, fmt.Sprintf("revision %d has chart %s, not %s", last.Version, chart, h.TargetChart), nil
	}
	if h.TargetStatus == release.StatusDeployed.String() && statusOf(target) != release.StatusSuperseded.String() {
		return true, false, fmt.Sprintf("revision %d is %s, not superseded", h.Target, statusOf(target)), nil
	}
	return true, true, "", nil
}

// markedThenDeployed judges a mark-failed step: written once the pending revision reads
// failed; its outcome is the release deployed at a newer revision — the install or upgrade
// the mark let through (the Fleet agent's next deployment of its bundle, or the operator's
// `helm upgrade --install`). A release left failed has no deployed revision: its workloads
// are whatever the interrupted operation left.
func markedThenDeployed(h *remediate.HelmChange, cur, last *release.Release) (bool, bool, string, error) {
	if statusOf(cur) != release.StatusFailed.String() {
		return false, false, fmt.Sprintf("revision %d is %s", h.Current, statusOf(cur)), nil
	}
	if last.Version > h.Current && last.Info != nil && last.Info.Status == release.StatusDeployed {
		return true, true, "", nil
	}
	if last.Version == h.Current {
		return true, false, fmt.Sprintf("revision %d is marked failed, and no install or upgrade has deployed the release since (the Fleet agent does for its bundle; otherwise run `helm upgrade --install` with the release's chart and values)", h.Current), nil
	}
	return true, false, fmt.Sprintf("revision %d is marked failed; the newest revision %d is %s, not deployed", h.Current, last.Version, statusOf(last)), nil
}

// manifestObjects parses a release manifest into objects, each with its namespace resolved
// (Helm puts a namespaced object without one in the release namespace ns).
func (e *Executor) manifestObjects(cl *cluster, ns, manifest string) ([]*unstructured.Unstructured, []remediate.Object, error) {
	if err := checkAliases(manifest); err != nil {
		return nil, nil, fmt.Errorf("the release manifest: not read: %w", err)
	}
	dec := k8syaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var us []*unstructured.Unstructured
	var objs []remediate.Object
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err == io.EOF {
				break
			}
			return nil, nil, fmt.Errorf("the release manifest: %w", err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetName() == "" {
			continue
		}
		o, err := resolveObject(cl, ns, u)
		if err != nil {
			return nil, nil, err
		}
		us = append(us, u)
		objs = append(objs, o)
	}
	return us, objs, nil
}

// resolveObject sets a manifest object's namespace as Helm does (the release's for a
// namespaced object without one, none for a cluster-scoped one) and names it.
func resolveObject(cl *cluster, ns string, u *unstructured.Unstructured) (remediate.Object, error) {
	_, namespaced, err := cl.resource(u.GetAPIVersion(), u.GetKind())
	if err != nil {
		return remediate.Object{}, err
	}
	if namespaced && u.GetNamespace() == "" {
		u.SetNamespace(ns)
	}
	if !namespaced {
		u.SetNamespace("")
	}
	return remediate.Object{Cluster: cl.name, APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}, nil
}

// targetManifest reads the manifest of the revision a rollback goes back to.
func (e *Executor) targetManifest(cl *cluster, st remediate.Step) (string, error) {
	store, _ := e.storageFor(cl, st, true, map[string]string{})
	t, err := store.Get(st.Helm.Release, st.Helm.Target)
	if err != nil {
		return "", fmt.Errorf("reading revision %d of Helm release %s/%s: %w", st.Helm.Target, st.Helm.Namespace, st.Helm.Release, err)
	}
	if err := manifestFits(st.Helm.Namespace, st.Helm.Release, st.Helm.Target, t.Manifest); err != nil {
		return "", err
	}
	return t.Manifest, nil
}

// applyManifest re-applies a revision's objects as Helm's rollback does (with Helm's
// ownership labels and annotations), by server-side apply under the resourceVersion read just
// before, and only where the server says the object would change. Objects the guard forbids
// (Namespaces, CRDs, Secrets that are not release storage) are left alone and named.
func (e *Executor) applyManifest(ctx context.Context, cl *cluster, st remediate.Step, manifest string, dry bool) ([]Write, error) {
	us, objs, err := e.manifestObjects(cl, st.Helm.Namespace, manifest)
	if err != nil {
		return nil, err
	}
	var writes []Write
	for i, u := range us {
		o := objs[i]
		it, err := e.judgeObject(ctx, cl, st.Helm.Namespace, st.Helm.Release, u, o)
		if err != nil {
			return writes, err
		}
		if it.verdict.Op == remediate.OpLeftAlone {
			e.say("  left alone: %s: %s", o.Ref(), it.verdict.Refused)
			continue
		}
		if err := checkOwned(st, it); err != nil {
			return writes, err
		}
		live := it.live
		setHelmMetadata(u, st.Helm.Release, st.Helm.Namespace)
		h, err := cl.handle(o)
		if err != nil {
			return writes, err
		}
		before := ""
		if live != nil {
			before = live.GetResourceVersion()
			u.SetResourceVersion(before)
		}
		preview, err := h.Apply(ctx, o.Name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return writes, e.writeError(st, o, err)
		}
		if dry || (live != nil && sameContent(live, preview)) {
			continue
		}
		if it.verdict.HighRisk != "" && e.maxRisk < remediate.High {
			if it.verdict.Op = remediate.OpChange; live == nil {
				it.verdict.Op = remediate.OpCreate
			}
			return writes, &remediate.OwnershipError{Step: st.ID, Release: st.Helm.Namespace + "/" + st.Helm.Release, NeedsHigh: []remediate.ObjectVerdict{it.verdict}}
		}
		out, err := h.Apply(ctx, o.Name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		if err != nil && OutcomeUnknown(err) {
			// The answer was lost: the object moved past what was read, and applying it
			// again would change nothing, means the apply was made.
			if now, gerr := h.Get(ctx, o.Name, metav1.GetOptions{}); gerr == nil && now.GetResourceVersion() != before {
				again := u.DeepCopy()
				again.SetResourceVersion(now.GetResourceVersion())
				if p, perr := h.Apply(ctx, o.Name, again, metav1.ApplyOptions{FieldManager: FieldManager, Force: true, DryRun: []string{metav1.DryRunAll}}); perr == nil && sameContent(now, p) {
					out, err = now, nil
				}
			}
		}
		if err != nil {
			return writes, e.writeError(st, o, err)
		}
		op := "apply"
		if live == nil {
			op = "create"
		}
		writes = append(writes, writeOf(o, op, before, out))
		if err := e.wrote(st, writes[len(writes)-1]); err != nil {
			return writes, err
		}
	}
	return writes, nil
}

func setHelmMetadata(u *unstructured.Unstructured, name, ns string) {
	l := u.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l["app.kubernetes.io/managed-by"] = "Helm"
	u.SetLabels(l)
	a := u.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a["meta.helm.sh/release-name"] = name
	a["meta.helm.sh/release-namespace"] = ns
	u.SetAnnotations(a)
}

// sameContent compares two versions of an object, ignoring what the server keeps for itself.
func sameContent(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy().Object
		delete(c, "status")
		if md, ok := c["metadata"].(map[string]any); ok {
			for _, k := range []string{"managedFields", "resourceVersion", "generation", "creationTimestamp", "uid"} {
				delete(md, k)
			}
		}
		return c
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

func managedBy(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager {
			return true
		}
	}
	return false
}

// releaseSettled says whether the release a resync step answers (Step.Settles) has moved on to
// a deployed newest revision. It only reads.
func (e *Executor) releaseSettled(ctx context.Context, st remediate.Step) (bool, string, error) {
	r := st.Settles
	cl, err := e.cluster(ctx, r.Cluster)
	if err != nil {
		return false, "", err
	}
	store, _ := e.storageIn(cl, st, r.Namespace, true, map[string]string{})
	last, err := store.Last(r.Release)
	if err != nil {
		return false, "", fmt.Errorf("reading Helm release %s/%s: %w", r.Namespace, r.Release, err)
	}
	if last.Info != nil && last.Info.Status == release.StatusDeployed {
		return true, "", nil
	}
	return false, fmt.Sprintf("the Fleet controller reconciled the bump, but Helm release %s/%s on %s is still at revision %d %s: the agent has not deployed it again (is it running?)",
		r.Namespace, r.Release, r.Cluster, last.Version, statusOf(last)), nil
}
