package check

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// workloadCreate reports controllers that cannot create their pods: an admission webhook or
// policy denies them, or a ResourceQuota is exhausted. The evidence is the controller's
// FailedCreate events and ReplicaFailure condition (kube-controller-manager).
var workloadCreate = Check{
	Name:  "workload/create",
	Emits: []string{"workload/admission-denied", "workload/quota-exceeded"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			seen := map[string]bool{}
			judge := func(kind, ns, name, owner string, condMsg string) {
				if !watchedNamespace(ns) {
					return
				}
				texts := []string{}
				if condMsg != "" {
					texts = append(texts, condMsg)
				}
				evs, first := eventEvidence(c, kind, ns, name, "FailedCreate")
				for _, e := range evs {
					texts = append(texts, e.Text)
				}
				for _, t := range texts {
					m, ok := classify.Classify(t, classify.Event|classify.Status)
					if !ok || (m.ID != "workload/admission-denied" && m.ID != "workload/quota-exceeded") {
						continue
					}
					k := m.ID + "/" + ns + "/" + owner
					if seen[k] {
						return
					}
					seen[k] = true
					what := "an admission webhook or policy denies its pods"
					if m.ID == "workload/quota-exceeded" {
						what = "a ResourceQuota in its namespace is exhausted"
					}
					f := ctx.New(m.ID, c, ref(apiVersionOf(kind), kind, ns, name), fmt.Sprintf("%s %s/%s cannot create pods: %s", kind, ns, name, what))
					f.Evidence = append([]finding.Evidence{ev(sourceOf(c, ref("", kind, ns, name)), "%s", firstLine(t))}, evs...)
					f.Keys = []string{WorkloadKey(c.Name, ns, owner)}
					if isAgentWorkload(ns, owner) {
						f.Keys = append(f.Keys, agentKeyFor(c))
					}
					f.Since = timePtr(first)
					f.Signature = m.ID + "|" + classify.Signature(t)
					if m.ID == "workload/quota-exceeded" {
						f.Evidence = append(f.Evidence, quotaEvidence(c, ns)...)
					}
					out = append(out, f)
					return
				}
			}
			for _, rs := range c.ReplicaSets {
				owner := rs.Name
				for _, o := range rs.OwnerReferences {
					if o.Kind == "Deployment" {
						owner = o.Name
					}
				}
				judge("ReplicaSet", rs.Namespace, rs.Name, owner, rsFailure(rs))
			}
			for _, ds := range c.DaemonSets {
				judge("DaemonSet", ds.Namespace, ds.Name, ds.Name, "")
			}
			for _, j := range c.Jobs {
				judge("Job", j.Namespace, j.Name, j.Name, "")
			}
			// Events about ReplicaSets that were not collected still tell.
			for _, e := range c.Events {
				if e.Reason == "FailedCreate" && e.InvolvedObject.Kind == "ReplicaSet" && c.Get("ReplicaSet", e.InvolvedObject.Namespace, e.InvolvedObject.Name) == nil {
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
// (condition Progressing=False, reason ProgressDeadlineExceeded) or has not finished for
// longer than the threshold. Usually a symptom: the pods' own findings say why.
var workloadRollout = Check{
	Name:  "workload/rollout",
	Emits: []string{"workload/rollout-stalled"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("workload.rolloutStalledAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, d := range c.Deployments {
				if !watchedNamespace(d.Namespace) {
					continue
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
				behind := d.Status.UpdatedReplicas < want || d.Status.AvailableReplicas < want || d.Status.ObservedGeneration < d.Generation
				if !deadline && !behind {
					continue
				}
				var since time.Time
				if prog != nil {
					since = prog.LastTransitionTime.Time
					if !deadline {
						since = earliest(prog.LastUpdateTime.Time, prog.LastTransitionTime.Time)
					}
				}
				if since.IsZero() || (!deadline && ctx.Age(since) < after) {
					continue
				}
				obj := ref("apps/v1", "Deployment", d.Namespace, d.Name)
				f := ctx.New("workload/rollout-stalled", c, obj, fmt.Sprintf("rollout of Deployment %s/%s has stalled for %s: %d/%d replicas updated, %d available", d.Namespace, d.Name, human(ctx.Age(since)), d.Status.UpdatedReplicas, want, d.Status.AvailableReplicas))
				if prog != nil {
					f.Evidence = []finding.Evidence{ev(sourceOf(c, obj), "Progressing=%s reason=%s: %s", prog.Status, prog.Reason, prog.Message)}
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
