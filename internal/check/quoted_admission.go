package check

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// quotedAdmission reports the admission refusals a BundleDeployment or a failed Helm release
// quotes: an admission webhook that denied the apply (its policy said no), one that could not
// be called ("failed calling webhook ...: no endpoints available for service ...",
// k8s.io/apiserver: its backend is down), and a ResourceQuota that refused an object. The refusal is the root cause; the bundle or release that quotes it is its symptom,
// so the finding carries that object's keys and quotes the message.
var quotedAdmission = Check{
	Name:  "workload/quoted-admission",
	Emits: []string{"workload/admission-denied", "workload/webhook-unavailable", "workload/quota-exceeded"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, q := range quotedMessages(ctx) {
			f, ok := quotedRefusal(ctx, q)
			if !ok {
				continue
			}
			if i := sameRefusal(out, f); i >= 0 {
				mergeQuote(&out[i], f)
				continue
			}
			out = append(out, f)
		}
		return out, nil
	},
}

// sameRefusal is the index of the finding in fs that reports the same refusal as f for the
// same failure — a bundle's BundleDeployment and the Helm release it deploys quote one
// error, and share the bundle's key — or -1. The webhook's own key, which every refusal by
// that webhook carries, does not make two bundles' failures one.
func sameRefusal(fs []finding.Finding, f finding.Finding) int {
	for i, g := range fs {
		if g.ID == f.ID && g.Cluster == f.Cluster && g.Object == f.Object && g.Affects == f.Affects && shareKey(g.Keys, f.Keys) {
			return i
		}
	}
	return -1
}

func shareKey(a, b []string) bool {
	for _, k := range a {
		if !strings.HasPrefix(k, "webhook:") && slices.Contains(b, k) {
			return true
		}
	}
	return false
}

// mergeQuote adds f's quote and keys to g, the finding already made for the same refusal;
// the lower severity wins (one quote may know the release it refused is the webhook's own).
func mergeQuote(g *finding.Finding, f finding.Finding) {
	if f.Severity < g.Severity {
		g.Severity, g.Summary = f.Severity, f.Summary
	}
	for _, k := range f.Keys {
		if !slices.Contains(g.Keys, k) {
			g.Keys = append(g.Keys, k)
		}
	}
	for _, e := range f.Evidence {
		if !slices.Contains(g.Evidence, e) {
			g.Evidence = append(g.Evidence, e)
		}
	}
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
	id := webhookFindingID(w)
	f := ctx.New(id, on, obj, fmt.Sprintf("%s: %s", webhookWhat(w, cfg), q.subject+" cannot be applied"))
	if on != q.target {
		f.Affects = q.affects
	}
	f.Evidence = []finding.Evidence{q.evidence()}
	f.Keys = append(append([]string{}, q.keys...), "webhook:"+q.affects+"/"+w.Webhook)
	f.Vars = map[string]string{"namespace": w.ServiceNamespace}
	if w.Service != "" {
		f.Vars["service"] = w.Service
	}
	if cfg != nil {
		f.Vars["webhook"] = cfg.Name
	}
	f.Signature = strings.TrimPrefix(id, "workload/") + "|" + w.Webhook
	if ownWebhook(q, w) {
		// The release's own webhook, not yet serving while the release upgrades (cert-manager's
		// upgrade timing out on webhook.cert-manager.io): the failed release is what to act on,
		// so this is a warning and the release stays the root cause.
		f.Severity = finding.Warning
		f.Summary += " (the release's own webhook)"
	}
	if w.Unavailable() {
		f.Evidence = append(f.Evidence, webhookPolicyEvidence(q.target, cfg, w.Webhook)...)
	}
	if w.ServiceMissing && cfg != nil {
		orphanedWebhookSteps(&f, q, w, cfg)
	}
	return f
}

// webhookPolicyEvidence quotes what the configuration says of a webhook that could not be
// called: its failurePolicy (Fail is why the API server refused) and its backend.
func webhookPolicyEvidence(c *snapshot.Cluster, cfg *snapshot.Unstructured, webhook string) []finding.Evidence {
	if c == nil || cfg == nil {
		return nil
	}
	hooks, _ := cfg.Object["webhooks"].([]any)
	for _, h := range hooks {
		m, _ := h.(map[string]any)
		if m == nil || m["name"] != webhook {
			continue
		}
		policy, _ := m["failurePolicy"].(string)
		if policy == "" {
			policy = "Fail" // the admissionregistration.k8s.io/v1 default
		}
		svc := rancher.String(m, "clientConfig", "service", "namespace") + "/" + rancher.String(m, "clientConfig", "service", "name")
		return []finding.Evidence{ev(sourceOf(c, ref(cfg.APIVersion, cfg.Kind, "", cfg.Name)), "webhook %s: failurePolicy %s, Service %s", webhook, policy, svc)}
	}
	return nil
}

// webhookFindingID tells a policy's denial from a backend that could not be called.
func webhookFindingID(w messages.WebhookFailure) string {
	if w.Unavailable() {
		return "workload/webhook-unavailable"
	}
	return "workload/admission-denied"
}

// ownWebhook says the webhook is served from the namespace of the release whose apply it
// refused: one the release itself installs. Another component's webhook — an admission
// controller, a policy engine, one left behind by an uninstall — is the cause of the failure.
func ownWebhook(q quoted, w messages.WebhookFailure) bool {
	return w.ServiceNamespace != "" && w.ServiceNamespace == q.releaseNS
}

// orphanedWebhookSteps replaces the guided step of a webhook whose Service does not exist —
// what an uninstall that removed the Service but left the cluster-scoped configuration
// behind leaves (ingress-nginx, cert-manager, Rancher's webhook) — with its ways out: bring
// the Service back by reinstalling what served it, or save and delete the configuration;
// then deploy the bundle that failed again.
func orphanedWebhookSteps(f *finding.Finding, q quoted, w messages.WebhookFailure, cfg *snapshot.Unstructured) {
	kind := strings.ToLower(cfg.Kind)
	saved := kind + "-" + cfg.Name + ".saved.yaml"
	cmds := []string{
		fmt.Sprintf("kubectl get %s %s -o yaml > %s", kind, cfg.Name, saved),
		fmt.Sprintf("kubectl delete %s %s", kind, cfg.Name),
	}
	sync := ""
	if q.bundle != "" && q.fleetNS != "" {
		cmds = append(cmds, forceSyncBundle)
		sync = ", then deploy the bundle again"
		f.Vars["bundle"], f.Vars["fleet-namespace"] = q.bundle, q.fleetNS
	}
	var kept []finding.Step
	for _, st := range f.Remediation {
		if st.Rung == "observe" {
			kept = append(kept, st)
		}
	}
	f.Remediation = append(kept, finding.Step{Rung: "realign", Risk: "high", Commands: cmds, Action: fmt.Sprintf(
		"The Service %s/%s behind webhook %q does not exist, so the API server refuses every request the webhook matches. If what served it was uninstalled, save %s %s to %s and delete it%s; if it is being installed again, let that finish instead (deleting the configuration turns its validation off until then).",
		w.ServiceNamespace, w.Service, w.Webhook, cfg.Kind, cfg.Name, saved, sync)})
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
