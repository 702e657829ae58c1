package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

// workloadCreate reports controllers that cannot create their pods: an admission webhook or
// policy denies them, a webhook's backend cannot be called, or a ResourceQuota is exhausted. The evidence is the controller's
// FailedCreate events and ReplicaFailure condition (kube-controller-manager). A controller that
// has all its pods now is not blocked, whatever FailedCreate events it left behind: a webhook
// that timed out once during a rollout, or a quota raised since.
var workloadCreate = Check{
	Name:  "workload/create",
	Emits: []string{"workload/admission-denied", "workload/webhook-unavailable", "workload/quota-exceeded"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			seen := map[string]bool{}
			judge := func(kind, ns, name, owner string, condMsg string) {
				type text struct{ msg, source string }
				var texts []text
				if condMsg != "" {
					texts = append(texts, text{condMsg, sourceOf(c, ref("", kind, ns, name)) + " status.conditions[ReplicaFailure]"})
				}
				evs := eventsOf(c, groupOfKind(kind), kind, ns, name, "FailedCreate")
				var first time.Time
				for _, e := range evs {
					texts = append(texts, text{e.Message, eventSource(e)})
					first = earliest(first, snapshot.EventFirstTime(e))
				}
				for _, t := range texts {
					m, ok := classify.Classify(t.msg, classify.Event|classify.Status)
					if !ok || !createRefused(m.ID) {
						continue
					}
					k := m.ID + "/" + ns + "/" + owner
					if seen[k] {
						return
					}
					seen[k] = true
					what, vars, keys := createRefusal(c, m.ID, t.msg)
					f := ctx.New(m.ID, c, ref(apiVersionOf(kind), kind, ns, name), fmt.Sprintf("%s %s/%s cannot create pods: %s", kind, ns, name, what))
					f.Evidence = []finding.Evidence{{Source: t.source, Text: oneLine(t.msg)}}
					// The same denial as an event says how often and how recently it happened.
					for _, e := range evs {
						if e.Message == t.msg && t.source != eventSource(e) {
							f.Evidence = append(f.Evidence, finding.Evidence{Source: eventSource(e), Text: "(same message)"})
							break
						}
					}
					f.Keys = append([]string{WorkloadKey(c.Name, ns, owner)}, keys...)
					f.Vars = vars
					if isAgentWorkload(ns, owner) {
						f.Keys = append(f.Keys, agentKeyFor(c))
					}
					f.Since = timePtr(first)
					f.Signature = m.ID + "|" + classify.Signature(t.msg)
					if w, ok := messages.ParseWebhook(t.msg); ok && w.Unavailable() {
						f.Evidence = append(f.Evidence, webhookPolicyEvidence(c, webhookConfig(c, w.Webhook), w.Webhook)...)
					}
					if m.ID == "workload/quota-exceeded" {
						f.Evidence = append(f.Evidence, quotaEvidence(c, ns)...)
					}
					out = append(out, f)
					return
				}
			}
			for _, rs := range c.ReplicaSets {
				if !watchedNamespace(rs.Namespace) || rsSatisfied(rs) {
					continue
				}
				owner := rs.Name
				for _, o := range rs.OwnerReferences {
					if o.Kind == "Deployment" {
						owner = o.Name
					}
				}
				judge("ReplicaSet", rs.Namespace, rs.Name, owner, rsFailure(rs))
			}
			for _, ds := range c.DaemonSets {
				if !watchedNamespace(ds.Namespace) || ds.Status.CurrentNumberScheduled >= ds.Status.DesiredNumberScheduled {
					continue
				}
				judge("DaemonSet", ds.Namespace, ds.Name, ds.Name, "")
			}
			for _, j := range c.Jobs {
				if !(watchedNamespace(j.Namespace) || j.Labels[sucPlanLabel] != "") || jobHasPods(j) {
					continue
				}
				judge("Job", j.Namespace, j.Name, j.Name, "")
			}
			// Events about ReplicaSets that were not collected still tell.
			for _, e := range c.Events {
				if e.Reason == "FailedCreate" && e.InvolvedObject.Kind == "ReplicaSet" && snapshot.EventGroup(e) == "apps" && watchedNamespace(e.InvolvedObject.Namespace) &&
					c.Get("ReplicaSet", e.InvolvedObject.Namespace, e.InvolvedObject.Name) == nil {
					name := e.InvolvedObject.Name
					owner := name
					if i := strings.LastIndex(name, "-"); i > 0 {
						owner = name[:i]
					}
					judge("ReplicaSet", e.InvolvedObject.Namespace, name, owner, "")
				}
			}
		}
		return out, nil
	},
}

// createRefused says a classified FailedCreate message is one workloadCreate reports.
func createRefused(id string) bool {
	return slices.Contains([]string{"workload/admission-denied", "workload/webhook-unavailable", "workload/quota-exceeded"}, id)
}

// createRefusal reads a controller's FailedCreate message with the parser of its family: the
// webhook, its configuration and Service, or the ResourceQuota, as a bundle or release that
// quotes the same refusal names them; the webhook's key joins the two.
func createRefusal(c *snapshot.Cluster, id, msg string) (string, map[string]string, []string) {
	if w, ok := messages.ParseWebhook(msg); ok {
		cfg := webhookConfig(c, w.Webhook)
		vars := map[string]string{}
		if w.ServiceNamespace != "" {
			vars["namespace"] = w.ServiceNamespace
		}
		if w.Service != "" {
			vars["service"] = w.Service
		}
		if cfg != nil {
			vars["webhook"] = cfg.Name
		}
		return webhookWhat(w, cfg), vars, []string{"webhook:" + c.Name + "/" + w.Webhook}
	}
	if qe, ok := messages.ParseQuota(msg); ok {
		return fmt.Sprintf("ResourceQuota %s refuses %s %s (%s)", qe.Quota, orDash(qe.Kind), orDash(qe.Name), quotaWhy(qe)), map[string]string{"quota": qe.Quota}, nil
	}
	if id == "workload/quota-exceeded" {
		return "a ResourceQuota in its namespace is exhausted", nil, nil
	}
	return "an admission webhook or policy denies its pods", nil, nil
}

// rsSatisfied reports whether a ReplicaSet has every pod it wants and no ReplicaFailure:
// kube-controller-manager clears that condition once a create succeeds again.
func rsSatisfied(rs *appsv1.ReplicaSet) bool {
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	return rs.Status.Replicas >= want && rsFailure(rs) == ""
}

// jobHasPods reports whether a Job got past pod creation: it has a pod now or has completed.
// A Job that failed is not: system-upgrade-controller's Jobs carry an activeDeadlineSeconds, so
// one whose pods admission keeps refusing ends Failed with DeadlineExceeded, and the
// FailedCreate events are still the reason.
func jobHasPods(j *batchv1.Job) bool {
	if j.Status.Active > 0 {
		return true
	}
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// oneLine folds a multi-line message onto one line: admission webhooks such as Kyverno put
// the policy and rule that denied the pod on the lines after "denied the request:".
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return textsafe.ClipWords(s, 600)
}

// groupOfKind is the API group of apiVersionOf.
func groupOfKind(kind string) string {
	if g, _, ok := strings.Cut(apiVersionOf(kind), "/"); ok {
		return g
	}
	return ""
}

func apiVersionOf(kind string) string {
	switch kind {
	case "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet":
		return "apps/v1"
	case "Job":
		return "batch/v1"
	}
	return "v1"
}

func rsFailure(rs *appsv1.ReplicaSet) string {
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}

func quotaEvidence(c *snapshot.Cluster, ns string) []finding.Evidence {
	var out []finding.Evidence
	for _, q := range c.ResourceQuotas {
		if q.Namespace != ns {
			continue
		}
		var parts []string
		for r, hard := range q.Status.Hard {
			used := q.Status.Used[r]
			parts = append(parts, fmt.Sprintf("%s %s/%s", r, used.String(), hard.String()))
		}
		out = append(out, ev(sourceOf(c, ref("v1", "ResourceQuota", q.Namespace, q.Name)), "quota %s used/hard: %s", q.Name, strings.Join(parts, ", ")))
	}
	return out
}

// workloadRollout reports Deployments whose new ReplicaSet has stopped making progress
// (condition Progressing=False, reason ProgressDeadlineExceeded) or has made none for longer
// than the threshold. Usually a symptom: the pods' own findings say why.
//
// The deployment controller keeps the Progressing condition's lastTransitionTime while its
// status stays True and moves only lastUpdateTime when it sees progress
// (kubernetes pkg/controller/deployment/progress.go), so a rollout started two minutes ago on a
// Deployment created last year shows a lastTransitionTime of last year: the time of the last
// progress is lastUpdateTime.
var workloadRollout = Check{
	Name:  "workload/rollout",
	Emits: []string{"workload/rollout-stalled"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("workload.rolloutStalledAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, d := range c.Deployments {
				if !watchedNamespace(d.Namespace) || d.Spec.Paused {
					continue // a paused rollout waits for its owner on purpose
				}
				want := int32(1)
				if d.Spec.Replicas != nil {
					want = *d.Spec.Replicas
				}
				var prog *appsv1.DeploymentCondition
				for i := range d.Status.Conditions {
					if d.Status.Conditions[i].Type == appsv1.DeploymentProgressing {
						prog = &d.Status.Conditions[i]
					}
				}
				deadline := prog != nil && prog.Status == corev1.ConditionFalse && prog.Reason == "ProgressDeadlineExceeded"
				// Old pods still running beside updated ones (replicas > updatedReplicas) is a
				// rollout in progress too: with maxUnavailable 0 the old agent keeps serving while
				// the new one never becomes available.
				behind := d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want ||
					d.Status.Replicas > d.Status.UpdatedReplicas || d.Status.ObservedGeneration < d.Generation
				// A finished rollout (NewReplicaSetAvailable) that later lost a pod — a node went
				// away — is an availability problem, not a stalled rollout.
				complete := prog != nil && prog.Reason == "NewReplicaSetAvailable" &&
					d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas >= want && d.Status.Replicas == d.Status.UpdatedReplicas
				if !deadline && (!behind || complete) {
					continue
				}
				var since time.Time
				if prog != nil {
					since = prog.LastTransitionTime.Time
					if !deadline && !prog.LastUpdateTime.IsZero() {
						since = prog.LastUpdateTime.Time
					}
				}
				if since.IsZero() || (!deadline && ctx.Age(since) < after) {
					continue
				}
				obj := ref("apps/v1", "Deployment", d.Namespace, d.Name)
				f := ctx.New("workload/rollout-stalled", c, obj, fmt.Sprintf("rollout of Deployment %s/%s has stalled for %s: %d/%d replicas updated, %d available", d.Namespace, d.Name, human(ctx.Age(since)), d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas))
				// The catalogue raises a stalled rollout of the upgrade machinery itself — the
				// Fleet agent, system-upgrade-controller — to an error: it blocks every upgrade.
				if isAgentWorkload(d.Namespace, d.Name) || d.Name == "system-upgrade-controller" {
					f.Severity = finding.Error
				}
				if prog != nil {
					f.Evidence = []finding.Evidence{ev(sourceOf(c, obj), "Progressing=%s reason=%s: %s", prog.Status, prog.Reason, prog.Message)}
				}
				for _, cond := range d.Status.Conditions {
					if cond.Type == appsv1.DeploymentReplicaFailure && cond.Status == corev1.ConditionTrue {
						f.Evidence = append(f.Evidence, ev(sourceOf(c, obj), "ReplicaFailure=True reason=%s: %s", cond.Reason, oneLine(cond.Message)))
					}
				}
				f.Evidence = append(f.Evidence, ev(sourceOf(c, obj), "image %s", deploymentImages(d)))
				f.Keys = []string{WorkloadKey(c.Name, d.Namespace, d.Name)}
				if isAgentWorkload(d.Namespace, d.Name) {
					f.Keys = append(f.Keys, agentKeyFor(c))
				}
				f.Since = timePtr(since)
				out = append(out, f)
			}
		}
		return out, nil
	},
}

func deploymentImages(d *appsv1.Deployment) string {
	var imgs []string
	for _, c := range d.Spec.Template.Spec.Containers {
		imgs = append(imgs, c.Image)
	}
	return strings.Join(imgs, ", ")
}
