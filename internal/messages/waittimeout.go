package messages

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// WaitTimeout is Helm giving up waiting for the release's resources to become ready.
type WaitTimeout struct {
	// NotReady are the resources Helm 4's status watcher still saw not ready, when it says;
	// Helm 3's legacy waiter names none.
	NotReady []NotReadyResource
}

// NotReadyResource is one resource a wait timed out on.
type NotReadyResource struct {
	// Namespace is empty when the message does not say it (Helm 4.0 and 4.1.0).
	Kind, Namespace, Name, Status string // "Deployment", "shop", "web", "InProgress"
}

var (
	// helm pkg/kube/statuswait.go waitForResources, one line per resource joined
	// (errors.Join) to the context's `context deadline exceeded`. Helm 4.0 to 4.1.0:
	// `resource not ready, name: %s, kind: %s, status: %s`; from Helm 4.1.1 (Fleet v0.16
	// builds on 4.2): `resource %s/%s/%s not ready. status: %s, message: %s` of kind,
	// namespace and name. Helm 3's legacy waiter (pkg/kube/wait.go) returns
	// wait.ErrWaitTimeout, `timed out waiting for the condition`.
	resourceNotReady   = lazyre.New(`resource not ready, name: ([a-z0-9.-]+), kind: ([A-Za-z0-9]+), status: ([A-Za-z]+)`)
	resourceNotReadyNS = lazyre.New(`resource ([A-Za-z0-9]+)/([a-z0-9.-]*)/([a-z0-9.-]+) not ready\. status: ([A-Za-z]+)`)
	waitTimedOut       = []string{"context deadline exceeded", "timed out waiting for the condition"}
)

// ParseWaitTimeout reads a Helm wait that ran out of time, or that gave up on a resource
// that failed (Helm 4.1.1 and later stop waiting then, naming it with status Failed).
func ParseWaitTimeout(msg string) (WaitTimeout, bool) {
	msg = unquote(msg)
	var out WaitTimeout
	for _, s := range resourceNotReady().FindAllStringSubmatch(msg, -1) {
		out.NotReady = append(out.NotReady, NotReadyResource{Kind: s[2], Name: s[1], Status: s[3]})
	}
	for _, s := range resourceNotReadyNS().FindAllStringSubmatch(msg, -1) {
		out.NotReady = append(out.NotReady, NotReadyResource{Kind: s[1], Namespace: s[2], Name: s[3], Status: s[4]})
	}
	if len(out.NotReady) > 0 {
		return out, true
	}
	for _, t := range waitTimedOut {
		if strings.Contains(msg, t) {
			return out, true
		}
	}
	return WaitTimeout{}, false
}
