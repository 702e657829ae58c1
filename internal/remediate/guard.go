package remediate

import (
	"fmt"
	"strings"
)

// HelmSecretPrefix starts the name of every Helm v3 release storage Secret.
const HelmSecretPrefix = "sh.helm.release.v1."

// HelmSecretType is the type Helm gives its release storage Secrets.
const HelmSecretType = "helm.sh/release.v1"

// Guard refuses a write to an object unstick must never change (SPEC §4 and issue 5):
// Fleet ClusterRegistrations and registration secrets, CRDs, Namespaces, and every Secret
// that is not Helm release storage. secretType and labels are the live Secret's (empty when
// the Secret is to be created); the planner calls Guard with what the snapshot holds and the
// executor again, with what the API server returned, before every write.
func Guard(o Object, secretType string, labels map[string]string) error {
	switch {
	case o.Group() == "fleet.cattle.io" && o.Kind == "ClusterRegistration":
		return refuse(o, "Fleet registration objects are never changed: deleting or editing one re-registers or orphans the cluster")
	case o.Group() == "fleet.cattle.io" && o.Kind == "ClusterRegistrationToken":
		return refuse(o, "Fleet registration tokens are never changed")
	case o.Group() == "apiextensions.k8s.io" && o.Kind == "CustomResourceDefinition":
		return refuse(o, "CRDs are never changed: removing or editing one can delete every object of its kind")
	case o.Group() == "" && o.Kind == "Namespace":
		return refuse(o, "Namespaces are never changed: deleting one deletes everything in it")
	case o.Group() == "" && o.Kind == "Secret":
		if !strings.HasPrefix(o.Name, HelmSecretPrefix) {
			return refuse(o, "only Helm release storage Secrets (sh.helm.release.v1.*) are ever written; registration, credential and other Secrets are never changed")
		}
		if secretType != "" && secretType != HelmSecretType {
			return refuse(o, fmt.Sprintf("its type is %q, not Helm release storage (%s)", secretType, HelmSecretType))
		}
		if labels != nil && labels["owner"] != "helm" {
			return refuse(o, "it is not labelled owner=helm, so it is not Helm release storage")
		}
	}
	return nil
}

// GuardAction is Guard for a write of action a. The one exception to Guard's rule on CRDs:
// the stored-versions trim writes a CRD's status subresource (status.storedVersions), never
// its spec, after every object was migrated.
func GuardAction(a Action, o Object, secretType string, labels map[string]string) error {
	if a == TrimStoredVersions && o.Group() == "apiextensions.k8s.io" && o.Kind == "CustomResourceDefinition" {
		return nil
	}
	return Guard(o, secretType, labels)
}

// GuardError is a write Guard refused.
type GuardError struct {
	Object Object
	Reason string
}

func (e *GuardError) Error() string {
	return fmt.Sprintf("refusing to write %s on %s: %s", e.Object.Ref(), e.Object.Cluster, e.Reason)
}

func refuse(o Object, why string) error { return &GuardError{Object: o, Reason: why} }
