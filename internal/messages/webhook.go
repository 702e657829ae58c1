package messages

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// WebhookFailure is an admission webhook that refused a request or could not be called. The
// two are different failures: a denial is the webhook's policy saying no (Denied), and only the
// policy or the object can change that; a failed call is the webhook's backend being down or
// unreachable (Unavailable), and the API server refuses everything the webhook matches, with
// failurePolicy Fail, until the backend answers again.
type WebhookFailure struct {
	Webhook string // the webhook's name inside its configuration, "validate.nginx.ingress.kubernetes.io"
	Denied  bool   // the webhook answered and denied the request
	// Service and ServiceNamespace are the webhook's Service, from the URL the API server
	// called ("https://SVC.NS.svc:443/...") or the error naming it.
	Service, ServiceNamespace string
	// ServiceMissing and NoEndpoints say what the API server found when it called.
	ServiceMissing, NoEndpoints bool
	Reason                      string // what follows: the denial's text or the call's error
	// Backend says how a call failed (BackendDown values); empty for a denial.
	Backend BackendDown
}

// BackendDown is how the API server failed to reach a webhook's backend.
type BackendDown string

// The ways a webhook call fails, from the API server's words.
const (
	BackendServiceMissing BackendDown = "service-missing" // `service "x" not found`
	BackendNoEndpoints    BackendDown = "no-endpoints"    // `no endpoints available for service "x"`
	BackendRefused        BackendDown = "refused"         // `connect: connection refused`
	BackendTimeout        BackendDown = "timeout"         // `context deadline exceeded`, `i/o timeout`
	BackendTLS            BackendDown = "tls"             // `x509: ...`, `tls: ...`
	BackendOther          BackendDown = "other"           // any other call error
)

// Unavailable says the webhook could not be called: its backend is down or unreachable, as
// opposed to a webhook that answered and denied the request.
func (w WebhookFailure) Unavailable() bool { return !w.Denied }

var (
	// k8s.io/apiserver pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr:
	// `admission webhook %q denied the request: %s` (or `... denied the request without explanation`).
	webhookDenied = lazyre.New(`admission webhook "([^"]+)" denied the request(?::\s*(.*))?`)
	// k8s.io/apiserver pkg/util/webhook/error.go ErrCallingWebhook.Error: `failed calling webhook
	// %q: %v`, its reason from pkg/admission/plugin/webhook/validating/dispatcher.go callHook:
	// `failed to call webhook: %w` around the client's `Post "URL": ...`.
	webhookCall = lazyre.New(`failed calling webhook "([^"]+)": (.*)`)
	webhookURL  = lazyre.New(`(?:Post|Patch|Put) "https://([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.[a-z.]+)?(?::[0-9]+)?[^"]*": (.*)`)
	// k8s.io/apiserver pkg/util/proxy/proxy.go ResolveEndpoint / ResolveCluster:
	// `service %q not found`, `no endpoints available for service %q`.
	serviceNotFound = lazyre.New(`service "([a-z0-9-]+)" not found`)
	noEndpoints     = lazyre.New(`no endpoints available for service "([a-z0-9-]+)"`)
)

// ParseWebhook reads an admission webhook's denial or a failed call to it.
func ParseWebhook(msg string) (WebhookFailure, bool) {
	msg = unquote(msg)
	if s := webhookDenied().FindStringSubmatch(msg); s != nil {
		return WebhookFailure{Webhook: s[1], Denied: true, Reason: strings.TrimSpace(trimQuoted(firstLineOf(s[2])))}, true
	}
	s := webhookCall().FindStringSubmatch(msg)
	if s == nil {
		return WebhookFailure{}, false
	}
	w := WebhookFailure{Webhook: s[1], Reason: trimQuoted(strings.TrimPrefix(firstLineOf(s[2]), "failed to call webhook: "))}
	if u := webhookURL().FindStringSubmatch(s[2]); u != nil {
		w.Service, w.ServiceNamespace, w.Reason = u[1], u[2], trimQuoted(firstLineOf(u[3]))
	}
	if n := serviceNotFound().FindStringSubmatch(s[2]); n != nil {
		w.ServiceMissing, w.Service = true, n[1]
	}
	if n := noEndpoints().FindStringSubmatch(s[2]); n != nil {
		w.NoEndpoints, w.Service = true, n[1]
	}
	w.Backend = backendDown(w, s[2])
	return w, true
}

// backendDown names how the call failed. The errors are the API server's
// (k8s.io/apiserver pkg/util/proxy/proxy.go for the Service and its endpoints) and Go's
// net/http client's around the Post (net: "connect: connection refused", "i/o timeout";
// context: "context deadline exceeded"; crypto/x509 and crypto/tls).
func backendDown(w WebhookFailure, callErr string) BackendDown {
	switch {
	case w.ServiceMissing:
		return BackendServiceMissing
	case w.NoEndpoints:
		return BackendNoEndpoints
	case strings.Contains(callErr, "connection refused"):
		return BackendRefused
	case strings.Contains(callErr, "context deadline exceeded"), strings.Contains(callErr, "i/o timeout"), strings.Contains(callErr, "Client.Timeout exceeded"):
		return BackendTimeout
	case strings.Contains(callErr, "x509: "), strings.Contains(callErr, "tls: "):
		return BackendTLS
	}
	return BackendOther
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
