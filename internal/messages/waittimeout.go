package messages

import (
	"regexp"
	"strings"
)

// WaitTimeout is Helm giving up waiting for the release's resources to become ready.
type WaitTimeout struct {
	// NotReady are the resources Helm 4's status watcher still saw not ready, when it says;
	// Helm 3's legacy waiter names none.
	NotReady []NotReadyResource
}

// NotReadyResource is one resource a wait timed out on.
type NotReadyResource struct {
	Kind, Name, Status string // "Deployment", "web", "InProgress"
}

var (
	// helm pkg/kube/statuswait.go (v4) waitForResources: `resource not ready, name: %s, kind:
	// %s, status: %s` joined to the context's `context deadline exceeded`; Helm 3's legacy
	// waiter (pkg/kube/wait.go) returns wait.ErrWaitTimeout, `timed out waiting for the condition`.
	resourceNotReady = regexp.MustCompile(`resource not ready, name: ([a-z0-9.-]+), kind: ([A-Za-z0-9]+), status: ([A-Za-z]+)`)
	waitTimedOut     = []string{"context deadline exceeded", "timed out waiting for the condition"}
)

// ParseWaitTimeout reads a Helm wait that ran out of time.
func ParseWaitTimeout(msg string) (WaitTimeout, bool) {
	msg = unquote(msg)
	var out WaitTimeout
	for _, s := range resourceNotReady.FindAllStringSubmatch(msg, -1) {
		out.NotReady = append(out.NotReady, NotReadyResource{Kind: s[2], Name: s[1], Status: s[3]})
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
