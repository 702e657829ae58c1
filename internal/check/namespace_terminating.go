package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// NamespaceKey ties a namespace's findings to the failures of what tries to write into it.
func NamespaceKey(cluster, ns string) string { return "namespace:" + cluster + "/" + ns }

// namespaceDeletionConds are the conditions the namespace controller sets while it deletes a
// namespace's content (pkg/controller/namespace/deletion/status_condition_utils.go); True
// means that part of the deletion is failing or waiting.
var namespaceDeletionConds = []corev1.NamespaceConditionType{
	corev1.NamespaceFinalizersRemaining, corev1.NamespaceContentRemaining,
	corev1.NamespaceDeletionContentFailure, corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
}

// namespaceTerminating reports namespaces deleted longer than namespace.terminatingAfter ago
// and still there. The namespace controller deletes everything in a namespace before removing
// the "kubernetes" finalizer; an object whose finalizer no controller removes (its controller
// or CRD gone, an API service down so discovery fails) keeps the namespace Terminating for
// ever, and every Helm install or Fleet bundle targeting it fails with "because it is being
// terminated".
var namespaceTerminating = Check{
	Name:  "namespace/terminating",
	Emits: []string{"namespace/terminating-stuck"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("namespace.terminatingAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, ns := range c.Namespaces {
				if ns.DeletionTimestamp == nil || ctx.Age(ns.DeletionTimestamp.Time) < after {
					continue
				}
				out = append(out, terminatingNamespace(ctx, c, ns))
			}
		}
		return out, nil
	},
}

func terminatingNamespace(ctx *Context, c *snapshot.Cluster, ns *corev1.Namespace) finding.Finding {
	o := ref("v1", "Namespace", "", ns.Name)
	holders := finalizerHolders(c, ns.Name)
	summary := fmt.Sprintf("namespace %s has been Terminating for %s: %s", ns.Name, human(ctx.Age(ns.DeletionTimestamp.Time)), namespaceBlocker(ns, holders))
	f := ctx.New("namespace/terminating-stuck", c, o, summary)
	f.Evidence = append(f.Evidence, ev(sourceOf(c, o), "deletionTimestamp %s; spec.finalizers %s", ns.DeletionTimestamp.UTC().Format(time.RFC3339), orDash(strings.Join(finalizerNames(ns.Spec.Finalizers), ", "))))
	for _, t := range namespaceDeletionConds {
		if cond := namespaceCondition(ns, t); cond != nil && cond.Status == corev1.ConditionTrue {
			f.Evidence = append(f.Evidence, ev(sourceOf(c, o), "condition %s=True reason=%s: %s", cond.Type, orDash(cond.Reason), orDash(cond.Message)))
		}
	}
	for _, h := range firstN(holders, 8) {
		f.Evidence = append(f.Evidence, ev(sourceOf(c, h.ref), "%s %s deleted %s, held by finalizers %s", h.ref.Kind, h.ref.Name, h.deleted.UTC().Format(time.RFC3339), strings.Join(h.finalizers, ", ")))
	}
	f.Since = timePtr(ns.DeletionTimestamp.Time)
	f.Keys = append([]string{NamespaceKey(c.Name, ns.Name)}, terminatedWriters(ctx, c, ns.Name, &f)...)
	f.Vars = map[string]string{"namespace": ns.Name}
	if len(holders) > 0 {
		h := holders[0]
		f.Vars["kind"], f.Vars["name"], f.Vars["finalizer"] = strings.ToLower(h.ref.Kind), h.ref.Name, h.finalizers[0]
	}
	return f
}

// namespaceBlocker says what the deletion waits on: the objects holding finalizers, else the
// namespace controller's own account.
func namespaceBlocker(ns *corev1.Namespace, holders []holder) string {
	if len(holders) > 0 {
		var names []string
		for _, h := range firstN(holders, 3) {
			names = append(names, fmt.Sprintf("%s %s (%s)", h.ref.Kind, h.ref.Name, strings.Join(h.finalizers, ", ")))
		}
		return "waiting on finalizers of " + strings.Join(names, "; ")
	}
	for _, t := range namespaceDeletionConds {
		if cond := namespaceCondition(ns, t); cond != nil && cond.Status == corev1.ConditionTrue && cond.Message != "" {
			return cond.Message
		}
	}
	return "the namespace controller has not finished deleting its content"
}

func namespaceCondition(ns *corev1.Namespace, t corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range ns.Status.Conditions {
		if ns.Status.Conditions[i].Type == t {
			return &ns.Status.Conditions[i]
		}
	}
	return nil
}

func finalizerNames(fs []corev1.FinalizerName) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, string(f))
	}
	return out
}

// holder is an object in a terminating namespace that is deleted but kept by its finalizers.
type holder struct {
	ref        finding.ObjectRef
	deleted    time.Time
	finalizers []string
}

// finalizerHolders lists the objects of namespace ns in the snapshot that are deleted and
// still carry finalizers, oldest deletion first.
func finalizerHolders(c *snapshot.Cluster, ns string) []holder {
	var out []holder
	add := func(apiVersion, kind string, m metav1.Object) {
		if m.GetNamespace() == ns && m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) > 0 {
			out = append(out, holder{ref(apiVersion, kind, ns, m.GetName()), m.GetDeletionTimestamp().Time, m.GetFinalizers()})
		}
	}
	for _, p := range c.Pods {
		add("v1", "Pod", p)
	}
	for _, s := range c.Secrets {
		add("v1", "Secret", s)
	}
	for _, s := range c.ConfigMaps {
		add("v1", "ConfigMap", s)
	}
	for _, d := range c.Deployments {
		add("apps/v1", "Deployment", d)
	}
	for _, j := range c.Jobs {
		add("batch/v1", "Job", j)
	}
	for _, g := range c.GitRepos {
		add("fleet.cattle.io/v1alpha1", "GitRepo", g)
	}
	for _, h := range c.HelmOps {
		add("fleet.cattle.io/v1alpha1", "HelmOp", h)
	}
	for _, u := range c.Other {
		if u.Namespace == ns {
			if h, ok := unstructuredHolder(u); ok {
				out = append(out, h)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].deleted.Before(out[j].deleted) })
	return out
}

func unstructuredHolder(u *snapshot.Unstructured) (holder, bool) {
	md, _ := u.Object["metadata"].(map[string]any)
	del, _ := md["deletionTimestamp"].(string)
	raw, _ := md["finalizers"].([]any)
	t, err := time.Parse(time.RFC3339, del)
	if err != nil || len(raw) == 0 {
		return holder{}, false
	}
	var fs []string
	for _, x := range raw {
		if s, ok := x.(string); ok {
			fs = append(fs, s)
		}
	}
	return holder{ref(u.APIVersion, u.Kind, u.Namespace, u.Name), t, fs}, len(fs) > 0
}

// terminatedWriters finds what failed to write into namespace ns of cluster c because it is
// being terminated — Fleet BundleDeployments targeting c, Helm releases on c, events on c —
// adds their quotes to f's evidence and returns their keys: they are this finding's symptoms.
func terminatedWriters(ctx *Context, c *snapshot.Cluster, ns string, f *finding.Finding) []string {
	var keys []string
	quotes := func(s string) bool {
		got, ok := messages.TerminatingNamespace(s)
		return ok && got == ns
	}
	for _, m := range ctx.Snap.Management() {
		ix := newFleetIndex(m)
		for _, bd := range m.BundleDeployments {
			fc := ix.forBD(m, bd)
			if fc == nil || ctx.Snap.ClusterForFleet(fc.Namespace+"/"+fc.Name) != c {
				continue
			}
			for _, t := range bdTexts(bd) {
				if quotes(t) {
					keys = append(keys, BundleKey(fc.Namespace+"/"+fc.Name, fleet.BundleName(bd)))
					f.Evidence = append(f.Evidence, ev(sourceOf(m, bdRef(bd)), "%s", firstLine(t)))
					break
				}
			}
		}
	}
	for _, r := range c.HelmReleases {
		if quotes(r.Description) {
			keys = append(keys, "helm:"+c.Name+"/"+r.Namespace+"/"+r.Name)
		}
	}
	for _, e := range c.Events {
		if quotes(e.Message) && e.InvolvedObject.Namespace != "" {
			keys = append(keys, WorkloadKey(c.Name, e.InvolvedObject.Namespace, e.InvolvedObject.Name))
		}
	}
	// Every other quote of the refusal (a Bundle's summary, a SUC Plan's or Job's condition).
	for _, q := range quotedMessages(ctx) {
		if q.target == c && quotes(q.msg) {
			keys = append(keys, q.keys...)
		}
	}
	return uniqueKeys(keys)
}

func uniqueKeys(xs []string) []string {
	seen := map[string]bool{}
	out := xs[:0]
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
