package messages

import (
	"github.com/unstick-dev/unstick/internal/lazyre"
)

// k8s.io/apiserver pkg/admission/plugin/namespace/lifecycle/admission.go Admit:
// `unable to create new content in namespace %s because it is being terminated`
// (a Forbidden error; the status cause carries NamespaceTerminatingCause).
var namespaceTerminating = lazyre.New(`unable to create new content in namespace ([a-z0-9-]+) because it is being terminated`)

// TerminatingNamespace returns the namespace a message says is being terminated: the one a
// create was refused in. Findings about a stuck namespace key on this name.
func TerminatingNamespace(msg string) (string, bool) {
	s := namespaceTerminating().FindStringSubmatch(unquote(msg))
	if s == nil {
		return "", false
	}
	return s[1], true
}
