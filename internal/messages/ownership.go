package messages

import (
	"github.com/unstick-dev/unstick/internal/lazyre"
)

// Ownership is Helm's refusal to take over an object that exists without this release's
// ownership metadata.
type Ownership struct {
	Kind, Name, Namespace string // the object
	// Release and ReleaseNamespace are the release that wanted the object (the values Helm
	// said the annotations must have), when the message says.
	Release, ReleaseNamespace string
	// OwnerRelease and OwnerNamespace are the release the object's annotations name today
	// ("current value is ..."); empty when the object carries none (created by hand or by
	// another tool).
	OwnerRelease, OwnerNamespace string
	ManagedByMissing             bool // the app.kubernetes.io/managed-by=Helm label is absent or different
	Install                      bool // Helm's "rendered manifests contain a resource that already exists"
}

var (
	// helm pkg/action/validate.go existingResourceConflict: `%s exists and cannot be imported
	// into the current release: %s` with resourceString `%s %q in namespace %q`;
	// checkOwnership: `invalid ownership metadata; ` + `label validation error: `/
	// `annotation validation error: ` + requireValue's `missing key %q: must be set to %q` or
	// `key %q must equal %q: current value is %q`. pkg/action/install.go: `rendered manifests
	// contain a resource that already exists. Unable to continue with install: %w`.
	ownershipObject = lazyre.New(`([A-Za-z0-9]+) "([^"]+)" in namespace "([^"]*)" exists and cannot be imported into the current release`)
	ownershipKey    = lazyre.New(`(?:missing key "([^"]+)": must be set to "([^"]*)"|key "([^"]+)" must equal "([^"]*)": current value is "([^"]*)")`)
	installExists   = lazyre.New(`rendered manifests contain a resource that already exists`)
	invalidOwner    = lazyre.New(`invalid ownership metadata`)
)

// ParseOwnership reads Helm's ownership refusal.
func ParseOwnership(msg string) (Ownership, bool) {
	msg = unquote(msg)
	o := ownershipObject().FindStringSubmatch(msg)
	if o == nil && !invalidOwner().MatchString(msg) {
		return Ownership{}, false
	}
	var out Ownership
	if o != nil {
		out.Kind, out.Name, out.Namespace = o[1], o[2], o[3]
	}
	out.Install = installExists().MatchString(msg)
	for _, k := range ownershipKey().FindAllStringSubmatch(msg, -1) {
		out.key(k)
	}
	return out, true
}

// key records one requireValue failure: the key, the value Helm wants, and the value found.
func (o *Ownership) key(k []string) {
	key, want, current := k[1], k[2], ""
	if key == "" {
		key, want, current = k[3], k[4], k[5]
	}
	switch key {
	case "app.kubernetes.io/managed-by":
		o.ManagedByMissing = true
	case "meta.helm.sh/release-name":
		o.Release, o.OwnerRelease = want, current
	case "meta.helm.sh/release-namespace":
		o.ReleaseNamespace, o.OwnerNamespace = want, current
	}
}
