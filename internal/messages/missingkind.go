package messages

import (
	"regexp"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// MissingKind is a kind the API server does not serve, as a message names it.
type MissingKind struct {
	Kind    string // "ServiceMonitor"
	Group   string // "monitoring.coreos.com"; "" for the core group
	Version string // "v1"
	// Name and Namespace are the object of that kind the client tried to build, when the
	// message says ("resource mapping not found for name: ...").
	Name, Namespace string
}

// GroupVersion is "group/version", the version alone for the core group, the group alone
// when the message names no version.
func (m MissingKind) GroupVersion() string {
	if m.Group == "" || m.Version == "" {
		return m.Group + m.Version
	}
	return m.Group + "/" + m.Version
}

var (
	// k8s.io/apimachinery pkg/api/meta/errors.go NoKindMatchError.Error:
	// `no matches for kind %q in version %q`.
	noKindMatch = lazyre.New(`no matches for kind "([A-Za-z0-9]+)" in version "([^"]+)"`)
	// helm pkg/kube/client.go (v3 and v4) wraps it per document: `resource mapping not found for
	// name: %q namespace: %q from %q: %w` + "\nensure CRDs are installed first"; Helm 3's
	// install/upgrade add "unable to build kubernetes objects from release manifest: ", Helm 4 does not.
	// The same error's other forms: `no matches for kind %q in versions %q` (several versions
	// searched, a Go-quoted list) and `no matches for kind %q in group %q` (none).
	noKindMatchVersions = lazyre.New(`no matches for kind "([A-Za-z0-9]+)" in versions \["([^"]+)"`)
	noKindMatchGroup    = lazyre.New(`no matches for kind "([A-Za-z0-9]+)" in group "([^"]*)"`)
	mappingNotFound     = lazyre.New(`resource mapping not found for name: "([^"]*)" namespace: "([^"]*)" from "[^"]*": no matches for kind "([A-Za-z0-9]+)" in version "([^"]+)"`)
)

// ParseMissingKind returns every kind a message says is not served, once each, in order.
func ParseMissingKind(msg string) []MissingKind {
	msg = unquote(msg)
	var out []MissingKind
	seen := map[string]bool{}
	add := func(m MissingKind) {
		k := m.Kind + "|" + m.GroupVersion() + "|" + m.Namespace + "|" + m.Name
		if !seen[k] {
			seen[k] = true
			out = append(out, m)
		}
	}
	named := map[string]bool{}
	for _, s := range mappingNotFound().FindAllStringSubmatch(msg, -1) {
		g, v := groupVersion(s[4])
		add(MissingKind{Kind: s[3], Group: g, Version: v, Name: s[1], Namespace: s[2]})
		named[s[3]+"|"+s[4]] = true
	}
	for _, re := range []*regexp.Regexp{noKindMatch(), noKindMatchVersions()} {
		for _, s := range re.FindAllStringSubmatch(msg, -1) {
			if named[s[1]+"|"+s[2]] {
				continue
			}
			g, v := groupVersion(s[2])
			add(MissingKind{Kind: s[1], Group: g, Version: v})
		}
	}
	for _, s := range noKindMatchGroup().FindAllStringSubmatch(msg, -1) {
		add(MissingKind{Kind: s[1], Group: s[2]})
	}
	return out
}
