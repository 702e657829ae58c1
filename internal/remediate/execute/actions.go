package execute

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// RestartedAtAnnotation is what `kubectl rollout restart` sets on a pod template.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// ConflictError is an object that changed between planning and the write: nothing was
// written, and the plan must be made again from what the cluster holds now.
type ConflictError struct {
	Step   string
	Object remediate.Object
	Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s on %s changed since the plan was made (%s): no write was made; the plan has to be made again from the cluster as it is now",
		e.Object.Ref(), e.Object.Cluster, e.Reason)
}

// IsConflict reports a ConflictError anywhere in err's chain.
func IsConflict(err error) bool {
	var c *ConflictError
	return errors.As(err, &c)
}

// handle is one object's dynamic client.
func (c *cluster) handle(o remediate.Object) (dynamic.ResourceInterface, error) {
	gvr, namespaced, err := c.resource(o.APIVersion, o.Kind)
	if err != nil {
		return nil, err
	}
	if namespaced {
		return c.dyn.Resource(gvr).Namespace(o.Namespace), nil
	}
	return c.dyn.Resource(gvr), nil
}

func (c *cluster) read(ctx context.Context, o remediate.Object) (*unstructured.Unstructured, error) {
	h, err := c.handle(o)
	if err != nil {
		return nil, err
	}
	u, err := h.Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// checkPlanned reads an object a step will write and holds it to what the plan saw: the same
// UID and resourceVersion (or, for one the step creates, absence), and the guard.
func checkPlanned(a remediate.Action, step string, o remediate.Object, u *unstructured.Unstructured) error {
	if o.Create {
		if u != nil {
			return &ConflictError{Step: step, Object: o, Reason: "it exists now, and the step was to create it"}
		}
		return remediate.GuardAction(a, o, "", nil)
	}
	if u == nil {
		return &ConflictError{Step: step, Object: o, Reason: "it no longer exists"}
	}
	if o.UID != "" && string(u.GetUID()) != o.UID {
		return &ConflictError{Step: step, Object: o, Reason: fmt.Sprintf("it was deleted and created again (uid %s, now %s)", o.UID, u.GetUID())}
	}
	if o.ResourceVersion != "" && u.GetResourceVersion() != o.ResourceVersion {
		return &ConflictError{Step: step, Object: o, Reason: fmt.Sprintf("resourceVersion %s when planned, %s now", o.ResourceVersion, u.GetResourceVersion())}
	}
	typ, _, _ := unstructured.NestedString(u.Object, "type")
	return remediate.GuardAction(a, o, typ, u.GetLabels())
}

// patchBody is a JSON merge patch carrying the resourceVersion read when planning: the API
// server refuses it with 409 Conflict if the object changed since.
func patchBody(rv string, body map[string]any) ([]byte, error) {
	md, _ := body["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		body["metadata"] = md
	}
	if rv == "" {
		return nil, errors.New("no resourceVersion to hold the write to")
	}
	md["resourceVersion"] = rv
	return json.Marshal(body)
}

func dryRunOpt(dry bool) []string {
	if dry {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// patchOf is the merge patch a patching action makes.
func patchOf(st remediate.Step, v vals) (map[string]any, error) {
	restartedAt := v.restartedAt
	switch st.Action {
	case remediate.RedeployAgent:
		return map[string]any{"spec": map[string]any{"redeployAgentGeneration": st.Generation}}, nil
	case remediate.ForceSync:
		return map[string]any{"spec": map[string]any{"forceSyncGeneration": st.Generation}}, nil
	case remediate.RolloutRestart:
		if restartedAt == "" {
			return nil, errors.New("no restart time chosen")
		}
		return map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"annotations": map[string]any{RestartedAtAnnotation: restartedAt}}}}}, nil
	case remediate.PatchPlanImage:
		if st.Image == nil || st.Image.To == "" {
			return nil, errors.New("no verified image to patch in")
		}
		return map[string]any{"spec": map[string]any{st.Image.Stage: map[string]any{"image": st.Image.To}}}, nil
	case remediate.RemoveNodeLabel:
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{st.Label: nil}}}, nil
	case remediate.Uncordon:
		// What `kubectl uncordon` sends: unschedulable false is the field's zero value.
		return map[string]any{"spec": map[string]any{"unschedulable": nil}}, nil
	}
	return nil, fmt.Errorf("action %s is not a patch", st.Action)
}

// write makes (or, dry, has the server validate) a step's change.
func (e *Executor) write(ctx context.Context, cl *cluster, st remediate.Step, dry bool, v vals) ([]Write, error) {
	switch st.Action {
	case remediate.HelmRollback:
		return e.helmRollback(ctx, cl, st, dry)
	case remediate.HelmMarkFailed:
		return e.helmMarkFailed(ctx, cl, st, dry)
	case remediate.DeleteJob, remediate.DeleteBundleDeployment:
		return e.delete(ctx, cl, st, dry)
	case remediate.HelmRewriteAPIs:
		return e.helmRewrite(ctx, cl, st, dry)
	case remediate.MigrateStorage:
		return e.migrate(ctx, cl, st, dry)
	case remediate.TrimStoredVersions:
		return e.trim(ctx, cl, st, dry)
	}
	body, err := patchOf(st, v)
	if err != nil {
		return nil, err
	}
	data, err := patchBody(st.Target.ResourceVersion, body)
	if err != nil {
		return nil, err
	}
	h, err := cl.handle(st.Target)
	if err != nil {
		return nil, err
	}
	out, err := h.Patch(ctx, st.Target.Name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager, DryRun: dryRunOpt(dry)})
	if err != nil && !dry && OutcomeUnknown(err) {
		// The answer was lost: the object moved past the planned version, and the same
		// patch would change nothing now, means the patch was made.
		if now, gerr := h.Get(ctx, st.Target.Name, metav1.GetOptions{}); gerr == nil && now.GetResourceVersion() != st.Target.ResourceVersion {
			if again, perr := patchBody(now.GetResourceVersion(), body); perr == nil {
				if p, perr := h.Patch(ctx, st.Target.Name, types.MergePatchType, again, metav1.PatchOptions{FieldManager: FieldManager, DryRun: []string{metav1.DryRunAll}}); perr == nil && sameContent(now, p) {
					out, err = now, nil
				}
			}
		}
	}
	if err != nil {
		return nil, e.writeError(st, st.Target, err)
	}
	if dry {
		return nil, nil
	}
	w := writeOf(st.Target, "patch", st.Target.ResourceVersion, out)
	return []Write{w}, e.wrote(st, w)
}

// wrote journals one write the moment it is made, so restore knows of it even if the process
// dies before the step's applied line; then it runs the test hook.
func (e *Executor) wrote(st remediate.Step, w Write) error {
	if err := e.journal.Append(Entry{Step: st.ID, Phase: PhaseWrite, Action: string(st.Action), Cluster: st.Cluster, Target: st.Target.Ref(), Writes: []Write{w}}); err != nil {
		return err
	}
	if h := e.hooks.AfterWrite; h != nil {
		return h(context.Background(), st, w)
	}
	return nil
}

func writeOf(o remediate.Object, op, before string, after *unstructured.Unstructured) Write {
	w := Write{Cluster: o.Cluster, APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, Op: op, Before: before, UID: o.UID}
	if after != nil {
		w.After, w.UID = after.GetResourceVersion(), string(after.GetUID())
		w.AfterDigest = contentDigest(after)
	}
	return w
}

// controllerAnnotations are annotations a workload's own controller rewrites after every
// change of its spec (the Deployment controller's revision count).
var controllerAnnotations = []string{"deployment.kubernetes.io/revision"}

// contentDigest hashes an object without its status and the metadata the API server and the
// object's controllers keep moving (resourceVersion, generation, managedFields,
// controller-owned annotations). Two reads with the same digest differ only in those: what
// the real controllers do after a fix (the Fleet controller's Bundle status, the Deployment
// controller's rollout, the storage version migrator's conditions).
func contentDigest(u *unstructured.Unstructured) string {
	c := u.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"resourceVersion", "generation", "managedFields", "creationTimestamp", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	if ann := c.GetAnnotations(); ann != nil {
		for _, a := range controllerAnnotations {
			delete(ann, a)
		}
		if len(ann) == 0 {
			ann = nil
		}
		c.SetAnnotations(ann)
	}
	data, err := json.Marshal(c.Object) // map keys are sorted: the same content, the same bytes
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// OutcomeUnknown says whether a failed write may still have been applied: no answer came
// from the server (the connection dropped, the answer was cut short, the client timed out)
// or the server itself timed out.
func OutcomeUnknown(err error) bool {
	if err == nil || errors.Is(err, ErrKilled) || errors.Is(err, context.Canceled) {
		return false
	}
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status)
}

// resumable says whether a write error leaves the step for the next run to finish: not a
// conflict, a guard refusal or a simulated kill (those have their own endings).
func resumable(err error) bool {
	var ge *remediate.GuardError
	return !IsConflict(err) && !errors.As(err, &ge) && !errors.Is(err, ErrKilled)
}

// writeError turns the server's 409 into a ConflictError: the precondition did its job.
func (e *Executor) writeError(st remediate.Step, o remediate.Object, err error) error {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return &ConflictError{Step: st.ID, Object: o, Reason: "the API server refused the write: " + string(apierrors.ReasonForError(err)) + ": " + err.Error()}
	}
	if apierrors.IsNotFound(err) {
		return &ConflictError{Step: st.ID, Object: o, Reason: "it no longer exists"}
	}
	return fmt.Errorf("%s %s on %s: %w", st.Action, o.Ref(), o.Cluster, err)
}

// deletable refuses a delete of a kind the action does not declare it deletes
// (remediate.ActionDeletes): restore re-creates only those kinds, so fix deletes no other.
func deletable(a remediate.Action, o remediate.Object) error {
	if !slices.Contains(remediate.ActionDeletes(a), remediate.GroupKind{Group: o.Group(), Kind: o.Kind}) {
		return &remediate.GuardError{Object: o, Reason: fmt.Sprintf("a %s step does not delete a %s", a, o.Kind)}
	}
	return nil
}

func (e *Executor) delete(ctx context.Context, cl *cluster, st remediate.Step, dry bool) ([]Write, error) {
	if err := deletable(st.Action, st.Target); err != nil {
		return nil, err
	}
	h, err := cl.handle(st.Target)
	if err != nil {
		return nil, err
	}
	uid := types.UID(st.Target.UID)
	rv := st.Target.ResourceVersion
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, PropagationPolicy: &bg, DryRun: dryRunOpt(dry)}
	if err := h.Delete(ctx, st.Target.Name, opts); err != nil {
		// The answer was lost: the object gone (or replaced) means the delete was made.
		gone := false
		if !dry && OutcomeUnknown(err) {
			now, gerr := h.Get(ctx, st.Target.Name, metav1.GetOptions{})
			gone = apierrors.IsNotFound(gerr) || (gerr == nil && string(now.GetUID()) != st.Target.UID)
		}
		// Someone else deleted it first: the object with that UID gone, or being deleted (the
		// system-upgrade-controller replaces a Job whose Plan's image changed, so the Job a
		// realign step left behind is already on its way out). What the step wants happens
		// without a write of ours; verify waits for it to be gone.
		if !gone && (apierrors.IsConflict(err) || apierrors.IsNotFound(err)) {
			now, gerr := h.Get(ctx, st.Target.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) || (gerr == nil && (string(now.GetUID()) != st.Target.UID || now.GetDeletionTimestamp() != nil)) {
				return nil, nil
			}
		}
		if !gone {
			return nil, e.writeError(st, st.Target, err)
		}
	}
	if dry {
		return nil, nil
	}
	w := writeOf(st.Target, "delete", rv, nil)
	return []Write{w}, e.wrote(st, w)
}

// state says whether a step's change is in the cluster (inPlace, for a resumed step) and
// whether the state moved as the step expects (verified), with why not.
func (e *Executor) state(ctx context.Context, cl *cluster, st remediate.Step, v vals) (inPlace, verified bool, why string, err error) {
	restartedAt := v.restartedAt
	switch st.Action {
	case remediate.HelmRollback, remediate.HelmMarkFailed:
		return e.helmState(ctx, cl, st)
	case remediate.HelmRewriteAPIs:
		return e.rewriteState(cl, st)
	case remediate.MigrateStorage:
		return e.migrateState(ctx, cl, st)
	case remediate.TrimStoredVersions:
		return e.trimState(ctx, cl, st)
	}
	u, err := cl.read(ctx, st.Target)
	if err != nil {
		return false, false, "", err
	}
	switch st.Action {
	case remediate.DeleteJob, remediate.DeleteBundleDeployment:
		gone := u == nil || string(u.GetUID()) != st.Target.UID
		return gone, gone, "the object with that UID still exists", nil
	}
	if u == nil {
		return false, false, fmt.Sprintf("%s no longer exists", st.Target.Ref()), nil
	}
	switch st.Action {
	case remediate.RedeployAgent:
		spec, _, _ := unstructured.NestedInt64(u.Object, "spec", "redeployAgentGeneration")
		deployed, found, _ := unstructured.NestedInt64(u.Object, "status", "agentDeployedGeneration")
		ok := found && deployed >= st.Generation && v.moved(deployed)
		if ok && st.Settles != nil {
			ok, why, err = e.releaseSettled(ctx, st)
			return spec >= st.Generation, ok, why, err
		}
		if ok && st.ChecksIn != nil {
			ok, why, err = e.checkedIn(ctx, st, v.began)
			return spec >= st.Generation, ok, "agentmanagement deployed the agent again, but " + why, err
		}
		return spec >= st.Generation, ok, fmt.Sprintf("status.agentDeployedGeneration is %s, waiting for %d (is the Fleet controller running?)", int64OrUnset(deployed, found), st.Generation), nil
	case remediate.ForceSync:
		spec, _, _ := unstructured.NestedInt64(u.Object, "spec", "forceSyncGeneration")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		ok := spec >= st.Generation && observed >= u.GetGeneration() && v.moved(observed)
		if ok && st.Settles != nil {
			ok, why, err = e.releaseSettled(ctx, st)
			return spec >= st.Generation, ok, why, err
		}
		return spec >= st.Generation, ok, fmt.Sprintf("status.observedGeneration is %d (was %s), generation %d: the Fleet controller has not reconciled the bump (is it running?)", observed, v.baselineText(), u.GetGeneration()), nil
	case remediate.RolloutRestart:
		got, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", RestartedAtAnnotation)
		if got != restartedAt {
			return false, false, fmt.Sprintf("the pod template's %s is %q, not %q", RestartedAtAnnotation, got, restartedAt), nil
		}
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		if !v.moved(observed) {
			return true, false, fmt.Sprintf("status.observedGeneration is still %d: the deployment controller has not seen the restart (is it running?)", observed), nil
		}
		ok, why := rolledOut(u)
		if ok && st.ChecksIn != nil {
			ok, why, err = e.checkedIn(ctx, st, v.began)
			return true, ok, "the rollout completed, but " + why, err
		}
		return true, ok, why, nil
	case remediate.PatchPlanImage:
		got, _, _ := unstructured.NestedString(u.Object, "spec", st.Image.Stage, "image")
		ok := got == st.Image.To
		return ok, ok, fmt.Sprintf("spec.%s.image is %s", st.Image.Stage, got), nil
	case remediate.RemoveNodeLabel:
		_, has := u.GetLabels()[st.Label]
		return !has, !has, fmt.Sprintf("the node still has the label %s", st.Label), nil
	case remediate.Uncordon:
		unsched, _, _ := unstructured.NestedBool(u.Object, "spec", "unschedulable")
		return !unsched, !unsched, "the node is still unschedulable", nil
	}
	return false, false, "", fmt.Errorf("no verification for action %s", st.Action)
}

// vals are what a step decided or read at run time: the restart time it writes, the status
// value it waits to see move, and when it began.
type vals struct {
	restartedAt string
	baseline    *int64
	began       time.Time
}

// checkedIn says whether the agent of the Fleet Cluster a step names (Step.ChecksIn) checked in
// after the step began. It only reads.
func (e *Executor) checkedIn(ctx context.Context, st remediate.Step, began time.Time) (bool, string, error) {
	r := st.ChecksIn
	cl, err := e.cluster(ctx, r.Cluster)
	if err != nil {
		return false, "", err
	}
	ref := remediate.Object{Cluster: r.Cluster, APIVersion: "fleet.cattle.io/v1alpha1", Kind: "Cluster", Namespace: r.Namespace, Name: r.Name}
	u, err := cl.read(ctx, ref)
	if err != nil {
		return false, "", err
	}
	if u == nil {
		return false, fmt.Sprintf("Fleet Cluster %s/%s no longer exists", r.Namespace, r.Name), nil
	}
	raw, _, _ := unstructured.NestedString(u.Object, "status", "agent", "lastSeen")
	seen, perr := time.Parse(time.RFC3339, raw)
	if perr == nil && !began.IsZero() && seen.After(began) {
		return true, "", nil
	}
	if raw == "" {
		raw = "unset"
	}
	return false, fmt.Sprintf("the agent of Fleet Cluster %s/%s has not checked in since the step began (status.agent.lastSeen %s): it is not back", r.Namespace, r.Name, raw), nil
}

// moved reports a status value that changed since it was read before the write (true when
// nothing was read: a step resumed from an older journal).
func (v vals) moved(now int64) bool { return v.baseline == nil || now > *v.baseline }

func (v vals) baselineText() string {
	if v.baseline == nil {
		return "unknown"
	}
	return fmt.Sprintf("%d", *v.baseline)
}

// baselineOf reads, before the write, the status value a resync or restart waits on.
func baselineOf(st remediate.Step, u *unstructured.Unstructured) *int64 {
	var path []string
	switch st.Action {
	case remediate.RedeployAgent:
		path = []string{"status", "agentDeployedGeneration"}
	case remediate.ForceSync, remediate.RolloutRestart:
		path = []string{"status", "observedGeneration"}
	default:
		return nil
	}
	n, _, _ := unstructured.NestedInt64(u.Object, path...)
	return &n
}

func int64OrUnset(v int64, found bool) string {
	if !found {
		return "unset"
	}
	return fmt.Sprintf("%d", v)
}

// rolledOut is `kubectl rollout status` for the workload kinds a restart or patch can roll
// out (k8s.io/kubectl pkg/polymorphichelpers/rollout_status.go): the controller observed the
// new template and every replica or scheduled pod is updated and available.
func rolledOut(u *unstructured.Unstructured) (bool, string) {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if observed < u.GetGeneration() {
		return false, fmt.Sprintf("the %s controller has not observed generation %d yet (observed %d)", strings.ToLower(u.GetKind()), u.GetGeneration(), observed)
	}
	status := func(f string) int64 { n, _, _ := unstructured.NestedInt64(u.Object, "status", f); return n }
	switch u.GetKind() {
	case "DaemonSet":
		return daemonSetRolledOut(status)
	case "StatefulSet":
		return statefulSetRolledOut(u, status)
	}
	return deploymentRolledOut(u, status)
}

func deploymentRolledOut(u *unstructured.Unstructured, status func(string) int64) (bool, string) {
	want, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	updated, replicas, available := status("updatedReplicas"), status("replicas"), status("availableReplicas")
	switch {
	case updated < want:
		return false, fmt.Sprintf("%d of %d replicas updated", updated, want)
	case replicas > updated:
		return false, fmt.Sprintf("%d old replicas pending termination", replicas-updated)
	case available < updated:
		return false, fmt.Sprintf("%d of %d updated replicas available", available, updated)
	}
	return true, ""
}

// daemonSetRolledOut: every node that should run the pod runs the new one, available (a node
// NotReady keeps its old pod, and the rollout waits on it).
func daemonSetRolledOut(status func(string) int64) (bool, string) {
	want, updated, available := status("desiredNumberScheduled"), status("updatedNumberScheduled"), status("numberAvailable")
	switch {
	case updated < want:
		return false, fmt.Sprintf("%d of %d nodes run the updated pod", updated, want)
	case available < want:
		return false, fmt.Sprintf("%d of %d updated pods available", available, want)
	}
	return true, ""
}

// statefulSetRolledOut: a RollingUpdate is done when every replica is at the update revision
// and ready (a partition leaves the ordinals below it at the current revision, by design).
func statefulSetRolledOut(u *unstructured.Unstructured, status func(string) int64) (bool, string) {
	if typ, _, _ := unstructured.NestedString(u.Object, "spec", "updateStrategy", "type"); typ == "OnDelete" {
		return true, "" // kubectl: nothing rolls out until pods are deleted
	}
	want, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	partition, _, _ := unstructured.NestedInt64(u.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	current, _, _ := unstructured.NestedString(u.Object, "status", "currentRevision")
	update, _, _ := unstructured.NestedString(u.Object, "status", "updateRevision")
	switch {
	case status("readyReplicas") < want:
		return false, fmt.Sprintf("%d of %d replicas ready", status("readyReplicas"), want)
	case partition > 0 && status("updatedReplicas") < want-partition:
		return false, fmt.Sprintf("%d of %d replicas above partition %d updated", status("updatedReplicas"), want-partition, partition)
	case partition == 0 && current != update:
		return false, fmt.Sprintf("%d of %d replicas at update revision %s", status("updatedReplicas"), want, update)
	}
	return true, ""
}
