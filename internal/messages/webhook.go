package messages

import (
	"regexp"
	"strings"
)

// WebhookFailure is an admission webhook that refused a request or could not be called.
type WebhookFailure struct {
	Webhook string // the webhook's name inside its configuration, "validate.nginx.ingress.kubernetes.io"
	Denied  bool   // the webhook answered and denied the request
	// Service and ServiceNamespace are the webhook's Service, from the URL the API server
	// called ("https://SVC.NS.svc:443/...") or the error naming it.
	Service, ServiceNamespace string
	// ServiceMissing and NoEndpoints say what the API server found when it called.
	ServiceMissing, NoEndpoints bool
	Reason                      string // what follows: the denial's text or the call's error
}

var (
	// k8s.io/apiserver pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr:
	// `admission webhook %q denied the request: %s` (or `... denied the request without explanation`).
	webhookDenied = regexp.MustCompile(`admission webhook "([^"]+)" denied the request(?::\s*(.*))?`)
	// k8s.io/apiserver pkg/util/webhook/error.go ErrCallingWebhook.Error: `failed calling webhook
	// %q: %v`, its reason from pkg/admission/plugin/webhook/validating/dispatcher.go callHook:
	// `failed to call webhook: %w` around the client's `Post "URL": ...`.
	webhookCall = regexp.MustCompile(`failed calling webhook "([^"]+)": (.*)`)
	webhookURL  = regexp.MustCompile(`(?:Post|Patch|Put) "https://([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.[a-z.]+)?(?::[0-9]+)?[^"]*": (.*)`)
	// k8s.io/apiserver pkg/util/proxy/proxy.go ResolveEndpoint / ResolveCluster:
	// `service %q not found`, `no endpoints available for service %q`.
	serviceNotFound = regexp.MustCompile(`service "([a-z0-9-]+)" not found`)
	noEndpoints     = regexp.MustCompile(`no endpoints available for service "([a-z0-9-]+)"`)
)

// ParseWebhook reads an admission webhook's denial or a failed call to it.
func ParseWebhook(msg string) (WebhookFailure, bool) {
	msg = unquote(msg)
	if s := webhookDenied.FindStringSubmatch(msg); s != nil {
		return WebhookFailure{Webhook: s[1], Denied: true, Reason: strings.TrimSpace(trimQuoted(firstLineOf(s[2])))}, true
	}
	s := webhookCall.FindStringSubmatch(msg)
	if s == nil {
		return WebhookFailure{}, false
	}
	w := WebhookFailure{Webhook: s[1], Reason: trimQuoted(strings.TrimPrefix(firstLineOf(s[2]), "failed to call webhook: "))}
	if u := webhookURL.FindStringSubmatch(s[2]); u != nil {
		w.Service, w.ServiceNamespace, w.Reason = u[1], u[2], trimQuoted(firstLineOf(u[3]))
	}
	if n := serviceNotFound.FindStringSubmatch(s[2]); n != nil {
		w.ServiceMissing, w.Service = true, n[1]
	}
	if n := noEndpoints.FindStringSubmatch(s[2]); n != nil {
		w.NoEndpoints, w.Service = true, n[1]
	}
	return w, true
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
