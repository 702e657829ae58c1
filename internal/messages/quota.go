package messages

import (
	"regexp"
	"strings"
)

// QuotaExceeded is a request a ResourceQuota refused.
type QuotaExceeded struct {
	Quota                    string // the ResourceQuota's name
	Requested, Used, Limited string // "limits.cpu=2", as the message lists them
	Kind, Name               string // the refused object, when the message names it ("pods", "web-1")
}

var (
	// k8s.io/apiserver pkg/admission/plugin/resourcequota/controller.go CheckRequest:
	// `exceeded quota: %s, requested: %s, used: %s, limited: %s`, inside the Forbidden error
	// `%s %q is forbidden: ` (k8s.io/apimachinery pkg/api/errors NewForbidden).
	quotaExceeded = regexp.MustCompile(`exceeded quota: ([a-z0-9.-]+), requested: ([^ ]+?), used: ([^ ]+?), limited: ([^\s"]+)`)
	forbiddenObj  = regexp.MustCompile(`([a-z0-9.]+) "([^"]+)" is forbidden: exceeded quota`)
)

// ParseQuota reads a ResourceQuota refusal.
func ParseQuota(msg string) (QuotaExceeded, bool) {
	msg = unquote(msg)
	s := quotaExceeded.FindStringSubmatch(msg)
	if s == nil {
		return QuotaExceeded{}, false
	}
	q := QuotaExceeded{Quota: s[1], Requested: s[2], Used: s[3], Limited: strings.TrimRight(s[4], ".,;")}
	if o := forbiddenObj.FindStringSubmatch(msg); o != nil {
		q.Kind, q.Name = o[1], o[2]
	}
	return q, true
}
