package messages

import (
	"strconv"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// ApplyConflict is a server-side apply that other field managers' ownership refused.
type ApplyConflict struct {
	// The object, from Helm 4's wrapper (empty when only the API server's text is quoted).
	Namespace, Name, APIVersion, Kind string
	Count                             int // conflicts the API server counted
	Managers                          []ConflictManager
}

// ConflictManager is one field manager holding conflicting fields.
type ConflictManager struct {
	Manager    string   // "kubectl-create", "kubectl-client-side-apply", "argocd-controller"
	APIVersion string   // the version it wrote with, when the message says
	Fields     []string // ".data.KEY"
}

var (
	// helm pkg/kube/client.go (v4) patchResourceServerSide: `conflict occurred while applying
	// object %s %s: %w` with "namespace/name" and the GroupVersionKind ("/v1, Kind=ConfigMap").
	conflictObject = lazyre.New(`conflict occurred while applying object ([a-z0-9.-]*)/([a-z0-9.:-]+) ([a-z0-9.-]*/[a-z0-9]+), Kind=([A-Za-z0-9]+)`)
	// k8s.io/apiserver pkg/endpoints/handlers/fieldmanager (k8s.io/apimachinery
	// pkg/util/managedfields/internal/conflict.go) NewConflictError: `Apply failed with %d
	// conflict%s: %s`; sigs.k8s.io/structured-merge-diff merge.Conflicts.Error: `conflict with
	// %v: %v` for one, `conflicts with %v:` and "\n- path" lines for several; printManager adds
	// ` using APIVERSION` and ` at TIME` for Update managers.
	conflictCount   = lazyre.New(`Apply failed with ([0-9]+) conflicts?`)
	conflictManager = lazyre.New(`conflicts? with "([^"]+)"(?: with subresource "[^"]*")?(?: using ([a-z0-9.-]*/?[a-z0-9]+))?(?: at [0-9TZ:.+-]+)?:`)
)

// ParseApplyConflict reads a server-side apply conflict.
func ParseApplyConflict(msg string) (ApplyConflict, bool) {
	msg = unquote(msg)
	c := conflictCount().FindStringSubmatchIndex(msg)
	if c == nil {
		return ApplyConflict{}, false
	}
	var out ApplyConflict
	out.Count, _ = strconv.Atoi(msg[c[2]:c[3]])
	if o := conflictObject().FindStringSubmatch(msg); o != nil {
		out.Namespace, out.Name, out.Kind = o[1], o[2], o[4]
		out.APIVersion = strings.TrimPrefix(o[3], "/")
	}
	out.Managers = conflictManagers(msg[c[1]:])
	return out, true
}

// conflictManagers reads each manager and the fields listed after it: on the same line for a
// single conflict, as "- path" lines for several.
func conflictManagers(s string) []ConflictManager {
	idx := conflictManager().FindAllStringSubmatchIndex(s, -1)
	var out []ConflictManager
	for i, m := range idx {
		end := len(s)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		cm := ConflictManager{Manager: s[m[2]:m[3]]}
		if m[4] >= 0 {
			cm.APIVersion = s[m[4]:m[5]]
		}
		cm.Fields = conflictFields(s[m[1]:end])
		out = append(out, cm)
	}
	return out
}

func conflictFields(s string) []string {
	var out []string
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if i > 0 && !strings.HasPrefix(line, "- ") {
			break
		}
		line = strings.TrimSpace(strings.TrimPrefix(line, "- "))
		if strings.HasPrefix(line, ".") {
			out = append(out, trimQuoted(line))
		}
	}
	return out
}

// trimQuoted drops what follows a text quoted at the end of a JSON string (`.data.key"}`,
// `service "x" not found"}`): the text's own quotes come in pairs ([name="x"]).
func trimQuoted(path string) string {
	if strings.Count(path, `"`)%2 == 1 {
		path = path[:strings.LastIndex(path, `"`)]
	}
	return path
}
