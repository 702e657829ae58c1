package messages

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// QuotaExceeded is a request a ResourceQuota refused.
type QuotaExceeded struct {
	Quota                    string // the ResourceQuota's name
	Requested, Used, Limited string // "limits.cpu=2", as the message lists them
	Kind, Name               string // the refused object, when the message names it ("pods", "web-1")
	// Constraint is why a quota that could not be charged refused the object ("must specify
	// limits.cpu for: app"): the quota limits a resource the object does not declare.
	Constraint string
}

var (
	// k8s.io/apiserver pkg/admission/plugin/resourcequota/controller.go CheckRequest:
	// `exceeded quota: %s, requested: %s, used: %s, limited: %s`, inside the Forbidden error
	// `%s %q is forbidden: ` (k8s.io/apimachinery pkg/api/errors NewForbidden).
	quotaExceeded = lazyre.New(`exceeded quota: ([a-z0-9.-]+), requested: ([^ ]+?), used: ([^ ]+?), limited: ([^\s"]+)`)
	forbiddenObj  = lazyre.New(`([a-z0-9.]+) "([^"]+)" is forbidden: (?:exceeded|failed) quota`)
	// The same CheckRequest: `failed quota: %s: %v` when the object cannot be charged, the
	// reason from pkg/quota/v1/evaluator/core/pods.go (`must specify %s`, joined by "; ").
	quotaFailed = lazyre.New(`failed quota: ([a-z0-9.-]+): ([^\n"]+)`)
)

// ParseQuota reads a ResourceQuota refusal.
func ParseQuota(msg string) (QuotaExceeded, bool) {
	msg = unquote(msg)
	var q QuotaExceeded
	if s := quotaExceeded().FindStringSubmatch(msg); s != nil {
		q = QuotaExceeded{Quota: s[1], Requested: s[2], Used: s[3], Limited: strings.TrimRight(s[4], ".,;")}
	} else if s := quotaFailed().FindStringSubmatch(msg); s != nil {
		q = QuotaExceeded{Quota: s[1], Constraint: strings.TrimSpace(s[2])}
	} else {
		return QuotaExceeded{}, false
	}
	if o := forbiddenObj().FindStringSubmatch(msg); o != nil {
		q.Kind, q.Name = o[1], o[2]
	}
	return q, true
}
