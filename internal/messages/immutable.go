package messages

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// Immutable is an update the API server refused because it changes a field that cannot change.
type Immutable struct {
	Kind, Group, Name string   // "Deployment", "apps", "web"
	Fields            []string // "spec.selector", "spec.template"
}

var (
	// k8s.io/apimachinery pkg/api/errors NewInvalid: `%s %q is invalid: %s` with the
	// qualified kind ("Deployment.apps", "Job.batch", "Service"); pkg/util/validation/field
	// ErrorList entries `FIELD: Invalid value: VALUE: DETAIL`, DETAIL being
	// apimachinery/pkg/api/validation FieldImmutableErrorMsg `field is immutable`.
	invalidObject  = lazyre.New(`([A-Z][A-Za-z0-9]*)(?:\.([a-z0-9.-]+))? "([^"]+)" is invalid: `)
	invalidField   = lazyre.New(`(?:^|[\[ ])([a-z][A-Za-z0-9_.\[\]]*): (?:Invalid value|Forbidden): `)
	fieldImmutable = "field is immutable"
)

// ParseImmutable reads a refusal to change an immutable field.
func ParseImmutable(msg string) (Immutable, bool) {
	msg = unquote(msg)
	if !strings.Contains(msg, fieldImmutable) {
		return Immutable{}, false
	}
	var out Immutable
	rest := msg
	if o := invalidObject().FindStringSubmatchIndex(msg); o != nil {
		out.Kind, out.Name = msg[o[2]:o[3]], msg[o[6]:o[7]]
		if o[4] >= 0 {
			out.Group = msg[o[4]:o[5]]
		}
		rest = msg[o[1]:]
	}
	out.Fields = immutableFields(rest)
	return out, true
}

// immutableFields returns the fields whose own error entry says "field is immutable".
func immutableFields(s string) []string {
	idx := invalidField().FindAllStringSubmatchIndex(s, -1)
	var out []string
	for i, m := range idx {
		end := len(s)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		if strings.Contains(s[m[1]:end], fieldImmutable) {
			out = append(out, s[m[2]:m[3]])
		}
	}
	return out
}
