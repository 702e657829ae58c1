package classify

import (
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/removedapi"
)

// builtinGroups are the API groups Kubernetes itself serves (k8s.io/api and the aggregator's
// apiregistration.k8s.io; "" is the core group). A kind in one of them is never a CRD: when the
// server does not serve its version, a Kubernetes upgrade removed it (api/removed), and
// installing a CRD cannot help. Groups of CRDs that merely end in .k8s.io
// (snapshot.storage.k8s.io, gateway.networking.k8s.io, ...) are deliberately not listed.
var builtinGroups = []string{
	"", "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "apps",
	"authentication.k8s.io", "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
	"coordination.k8s.io", "discovery.k8s.io", "events.k8s.io", "extensions",
	"flowcontrol.apiserver.k8s.io", "internal.apiserver.k8s.io", "networking.k8s.io", "node.k8s.io",
	"policy", "rbac.authorization.k8s.io", "resource.k8s.io", "scheduling.k8s.io", "storage.k8s.io",
	"storagemigration.k8s.io",
}

// BuiltinGroup reports whether group is one Kubernetes itself serves.
func BuiltinGroup(group string) bool {
	for _, g := range builtinGroups {
		if g == group {
			return true
		}
	}
	return false
}

// The message families classify reads with internal/messages' parsers (one parser per family,
// wherever the message is quoted). They see the text lower-cased: a kind's case is lost,
// which only the facts need, not the match.

func webhookFamily(text string) bool { _, ok := messages.ParseWebhook(text); return ok }

func quotaFamily(text string) bool { _, ok := messages.ParseQuota(text); return ok }

func missingKindFamily(text string) bool { return len(messages.ParseMissingKind(text)) > 0 }

// removedAPIFamily: a kind of a group Kubernetes itself serves, in a version the server does
// not serve.
func removedAPIFamily(text string) bool {
	for _, mk := range messages.ParseMissingKind(text) {
		if BuiltinGroup(mk.Group) && mk.Version != "" {
			return true
		}
	}
	return false
}

// RemovedAPI finds, in a message, a kind whose built-in group/version the server does not
// serve (apimachinery's NoKindMatchError, as Helm and kubectl relay it). It returns the kind and
// the group/version ("policy/v1beta1", or "v1beta1" for the core group).
func RemovedAPI(text string) (kind, groupVersion string, ok bool) {
	for _, mk := range messages.ParseMissingKind(text) {
		if BuiltinGroup(mk.Group) && mk.Version != "" {
			return mk.Kind, mk.GroupVersion(), true
		}
	}
	return "", "", false
}

// RemovedIn names the Kubernetes release that removed a built-in kind's group/version, or ""
// when it was not removed (internal/removedapi).
func RemovedIn(kind, groupVersion string) string {
	if r, ok := removedapi.Lookup(groupVersion, kind); ok {
		return r.RemovedIn
	}
	return ""
}
