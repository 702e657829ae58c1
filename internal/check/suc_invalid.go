package check

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// sucPlanValidity reports Plans SUC will not carry out, at once: no Job will come while they
// stay so, and waiting for suc/plan-stuck's hour only hides why. SUC's status handler sets
// Validated False with reason Error and the validation error as its message (handle_upgrade.go:
// a missing Secret or ConfigMap of spec.secrets, a version or channel it cannot use, drain
// options that contradict), and its generating handler creates no Job until Validated is True.
// SUC does not validate spec.serviceAccountName: a Plan naming a missing ServiceAccount gets
// Jobs whose pods the service account admission plugin refuses (FailedCreate "error looking
// up service account <ns>/<sa>: serviceaccount \"<sa>\" not found").
var sucPlanValidity = Check{
	Name:  "suc/plan-validity",
	Emits: []string{"suc/plan-invalid"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Plans {
				jobs := currentJobs(p, c.Jobs)
				if f, ok := planNotValidated(ctx, c, p, jobs); ok {
					out = append(out, f)
					continue
				}
				if f, ok := planServiceAccountMissing(ctx, c, p); ok {
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

func planNotValidated(ctx *Context, c *snapshot.Cluster, p *suc.Plan, jobs []*batchv1.Job) (finding.Finding, bool) {
	cond := p.Condition(suc.CondValidated)
	if cond == nil || cond.Status != corev1.ConditionFalse {
		return finding.Finding{}, false
	}
	f := ctx.New("suc/plan-invalid", c, planRef(p), fmt.Sprintf("Plan %s/%s is not valid, so SUC creates no upgrade Job for it: %s", p.Namespace, p.Name, orDash(cond.Message)))
	f.Evidence = []finding.Evidence{ev(sourceOf(c, planRef(p)), "condition %s=%s reason=%s: %s", cond.Type, cond.Status, orDash(cond.Reason), orDash(cond.Message))}
	if since := suc.ConditionTime(cond); !since.IsZero() {
		f.Since = timePtr(since)
	}
	f.Keys = planKeys(c, p, jobs)
	f.Vars = map[string]string{"plan": p.Name, "suc-namespace": p.Namespace, "serviceaccount": p.Spec.ServiceAccountName}
	return f, true
}

// planServiceAccountMissing finds the Plan's Jobs refused pods because the Plan's service
// account does not exist, and still without a pod: a Job that got its pods once the
// ServiceAccount was created keeps the refusals among its events for an hour.
func planServiceAccountMissing(ctx *Context, c *snapshot.Cluster, p *suc.Plan) (finding.Finding, bool) {
	var evidence []finding.Evidence
	keys := []string{PlanKey(c.Name, p.Namespace, p.Name)}
	var since, seen bool
	var first = ctx.Now
	for _, j := range p.JobsOf(c.Jobs) {
		for _, e := range jobRefusals(c, j) {
			if !saLookupRE().MatchString(e.Message) {
				continue
			}
			if len(evidence) < 4 {
				evidence = append(evidence, finding.Evidence{Source: "Job " + j.Name + " " + eventSource(e), Text: firstLine(e.Message)})
			}
			if t := snapshot.EventFirstTime(e); !t.IsZero() && t.Before(first) {
				first, since = t, true
			}
			seen = true
		}
		if seen {
			keys = append(keys, WorkloadKey(c.Name, j.Namespace, j.Name), NodeKey(c.Name, j.Labels[suc.LabelNode]))
		}
	}
	if !seen {
		return finding.Finding{}, false
	}
	sa := orDash(p.Spec.ServiceAccountName)
	f := ctx.New("suc/plan-invalid", c, planRef(p), fmt.Sprintf("Plan %s/%s names service account %s/%s, which does not exist: its upgrade Jobs cannot create pods", p.Namespace, p.Name, p.Namespace, sa))
	f.Evidence = evidence
	if since {
		f.Since = timePtr(first)
	}
	f.Keys = keys
	f.Vars = map[string]string{"plan": p.Name, "suc-namespace": p.Namespace, "serviceaccount": p.Spec.ServiceAccountName}
	return f, true
}
