package check

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// quotedAdmission reports the admission refusals a BundleDeployment or a failed Helm release
// quotes: an admission webhook that denied the apply or could not be called ("failed calling
// webhook ...: service ... not found", k8s.io/apiserver), and a ResourceQuota that refused an
// object. The refusal is the root cause; the bundle or release that quotes it is its symptom,
// so the finding carries that object's keys and quotes the message.
var quotedAdmission = Check{
	Name:  "workload/quoted-admission",
	Emits: []string{"workload/admission-denied", "workload/quota-exceeded"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		seen := map[string]bool{}
		for _, q := range quotedMessages(ctx) {
			f, ok := quotedRefusal(ctx, q)
			if !ok {
				continue
			}
			k := f.ID + "|" + f.Cluster + "|" + f.Object.String() + "|" + f.Affects + "|" + strings.Join(q.keys, ",")
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, f)
		}
		return out, nil
	},
}

func quotedRefusal(ctx *Context, q quoted) (finding.Finding, bool) {
	if w, ok := messages.ParseWebhook(q.msg); ok {
		return webhookFinding(ctx, q, w), true
	}
	if qe, ok := messages.ParseQuota(q.msg); ok {
		return quotaFinding(ctx, q, qe), true
	}
	return finding.Finding{}, false
}

// webhookFinding names the webhook, the configuration that holds it (when the cluster's
// webhook configurations were collected) and the Service it is served by.
func webhookFinding(ctx *Context, q quoted, w messages.WebhookFailure) finding.Finding {
	on, cfg := q.on, webhookConfig(q.target, w.Webhook)
	if q.target != nil {
		on = q.target
	}
	obj := ref("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", w.Webhook)
	if cfg != nil {
		obj = ref(cfg.APIVersion, cfg.Kind, "", cfg.Name)
	} else if w.Service != "" {
		obj = ref("v1", "Service", w.ServiceNamespace, w.Service)
	}
	f := ctx.New("workload/admission-denied", on, obj, fmt.Sprintf("%s: %s", webhookWhat(w, cfg), q.subject+" cannot be applied"))
	if on != q.target {
		f.Affects = q.affects
	}
	f.Evidence = []finding.Evidence{q.evidence()}
	f.Keys = append(append([]string{}, q.keys...), "webhook:"+q.affects+"/"+w.Webhook)
	f.Vars = map[string]string{"namespace": w.ServiceNamespace}
	if cfg != nil {
		f.Vars["webhook"] = cfg.Name
	}
	f.Signature = "admission-denied|" + w.Webhook
	return f
}

// webhookWhat says what went wrong with the webhook, in the words a user acts on.
func webhookWhat(w messages.WebhookFailure, cfg *snapshot.Unstructured) string {
	name := fmt.Sprintf("admission webhook %q", w.Webhook)
	if cfg != nil {
		name += fmt.Sprintf(" (%s %s)", cfg.Kind, cfg.Name)
	}
	svc := w.ServiceNamespace + "/" + w.Service
	switch {
	case w.Denied:
		return name + " denied the request: " + orDash(w.Reason)
	case w.ServiceMissing:
		return name + " cannot be called: its Service " + svc + " does not exist"
	case w.NoEndpoints:
		return name + " cannot be called: its Service " + svc + " has no ready endpoints"
	case w.Service != "":
		return name + " cannot be called at Service " + svc + ": " + orDash(w.Reason)
	}
	return name + " cannot be called: " + orDash(w.Reason)
}

// webhookConfig finds the Validating- or MutatingWebhookConfiguration that holds a webhook
// of that name, among the collected objects of cluster c.
func webhookConfig(c *snapshot.Cluster, webhook string) *snapshot.Unstructured {
	if c == nil {
		return nil
	}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		for _, u := range c.OtherOf("admissionregistration.k8s.io", kind) {
			hooks, _ := u.Object["webhooks"].([]any)
			for _, h := range hooks {
				if m, ok := h.(map[string]any); ok && m["name"] == webhook {
					return u
				}
			}
		}
	}
	return nil
}

// quotaFinding names the ResourceQuota and the refused object.
func quotaFinding(ctx *Context, q quoted, qe messages.QuotaExceeded) finding.Finding {
	on := q.on
	if q.target != nil {
		on = q.target
	}
	ns := quotaNamespace(q.target, qe.Quota)
	if ns == "" {
		// A quota refuses objects of its own namespace: the one of the resource Fleet
		// summarises, when the ResourceQuota itself was not collected.
		ns = q.ns
	}
	f := ctx.New("workload/quota-exceeded", on, ref("v1", "ResourceQuota", ns, qe.Quota),
		fmt.Sprintf("ResourceQuota %s refuses %s %s (%s): %s cannot be applied", qe.Quota, orDash(qe.Kind), orDash(qe.Name), quotaWhy(qe), q.subject))
	if on != q.target {
		f.Affects = q.affects
	}
	f.Evidence = []finding.Evidence{q.evidence()}
	if q.target != nil && ns != "" {
		f.Evidence = append(f.Evidence, quotaEvidence(q.target, ns)...)
	}
	f.Keys = append([]string{}, q.keys...)
	f.Vars = map[string]string{"quota": qe.Quota, "namespace": ns}
	f.Signature = "quota-exceeded|" + qe.Quota
	return f
}

// quotaWhy is the refusal's account: the amounts, or what the object does not declare.
func quotaWhy(qe messages.QuotaExceeded) string {
	if qe.Constraint != "" {
		return qe.Constraint
	}
	return fmt.Sprintf("requested %s, used %s, limited %s", qe.Requested, qe.Used, qe.Limited)
}

// quotaNamespace is the namespace of the collected ResourceQuota of that name, when only one
// namespace has one.
func quotaNamespace(c *snapshot.Cluster, name string) string {
	if c == nil {
		return ""
	}
	return onlyNamespace(c.ResourceQuotas, name, func(rq *corev1.ResourceQuota) (string, string) { return rq.Name, rq.Namespace })
}

// onlyNamespace is the namespace of the items named name, when they are all in one; "" when
// none is, or they are in several.
func onlyNamespace[T any](items []T, name string, of func(T) (name, namespace string)) string {
	ns := ""
	for _, it := range items {
		if n, itNS := of(it); n == name {
			if ns != "" && ns != itNS {
				return ""
			}
			ns = itNS
		}
	}
	return ns
}
