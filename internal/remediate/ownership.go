package remediate

import (
	"fmt"
	"slices"
	"strings"
)

// Helm v3 marks every object it manages with a label and two annotations (pkg/action/
// validate.go): an install, upgrade or rollback refuses an existing object that does not carry
// them with the release's own name and namespace ("exists and cannot be imported into the
// current release: invalid ownership metadata").
const (
	HelmManagedByLabel   = "app.kubernetes.io/managed-by"
	HelmReleaseNameAnn   = "meta.helm.sh/release-name"
	HelmReleaseNSAnn     = "meta.helm.sh/release-namespace"
	helmManagedByValueOK = "Helm"
)

// What a step that applies a stored manifest does to one of its objects.
const (
	OpCreate    = "create"
	OpChange    = "change"
	OpUnchanged = "unchanged"
	// OpRefused: the object is not the release's to write; the whole step is refused.
	OpRefused = "refused"
	// OpLeftAlone: Guard never lets unstick write the kind (a Namespace, a CRD, a Secret that
	// is not release storage); the step goes on without it, as it always has.
	OpLeftAlone = "left alone"
)

// ManifestObject is one object of a stored release manifest with what the API server says of
// it: its scope and, when it exists, its live ownership metadata.
type ManifestObject struct {
	Object
	// Namespaced is the kind's scope (discovery); Namespace is already defaulted to the
	// release's namespace for a namespaced object the manifest leaves without one.
	Namespaced bool
	Exists     bool
	// Labels and Annotations are the live object's.
	Labels, Annotations map[string]string
	// Doc is the manifest's document, read for pod-security fields.
	Doc map[string]any
}

// ObjectVerdict is what a step does to one manifest object, and why it may not.
type ObjectVerdict struct {
	Object Object `json:"object"`
	Op     string `json:"op"`
	// Refused says why the object is not the release's to write (or, left alone, why
	// unstick never writes it).
	Refused string `json:"refused,omitempty"`
	// HighRisk says how the object grants or intercepts (RBAC, admission, API aggregation,
	// CRDs, privileged pod specs): creating or changing it needs --max-risk high.
	HighRisk string `json:"highRisk,omitempty"`
}

func (v ObjectVerdict) String() string {
	s := v.Op + " " + v.Object.Ref()
	if v.Refused != "" {
		s += ": " + v.Refused
	}
	if v.HighRisk != "" {
		s += " [HIGH RISK: " + v.HighRisk + "]"
	}
	return s
}

// Writes reports whether the step would create or change the object.
func (v ObjectVerdict) Writes() bool { return v.Op == OpCreate || v.Op == OpChange }

// HelmOwner names the Helm release an object's metadata says owns it ("" when it carries no
// complete Helm ownership).
func HelmOwner(labels, annotations map[string]string) (namespace, name string, ok bool) {
	if labels[HelmManagedByLabel] != helmManagedByValueOK {
		return "", "", false
	}
	name, namespace = annotations[HelmReleaseNameAnn], annotations[HelmReleaseNSAnn]
	return namespace, name, name != "" && namespace != ""
}

// OwnershipRefusal says why a rollback or rewrite of release namespace/name may not write m,
// or "" when it may. An existing object must carry this release's Helm ownership, as helm
// rollback requires; an object that does not exist yet may be created only in the release's
// own namespace (a tenant who can write Secrets there can already create objects there).
// Cluster-scoped objects and objects in other namespaces are written only when they already
// belong to this release.
func OwnershipRefusal(namespace, name string, m ManifestObject) string {
	if !m.Exists {
		switch {
		case !m.Namespaced:
			return "cluster-scoped and does not exist: a fix never creates cluster-scoped objects"
		case m.Namespace != namespace:
			return fmt.Sprintf("in namespace %s, outside the release's namespace %s, and does not exist: a fix never creates objects outside the release's namespace", m.Namespace, namespace)
		}
		return ""
	}
	ns, rel, ok := HelmOwner(m.Labels, m.Annotations)
	switch {
	case ok && ns == namespace && rel == name:
		return ""
	case ok:
		return fmt.Sprintf("exists and belongs to Helm release %s/%s, not %s/%s", ns, rel, namespace, name)
	}
	return fmt.Sprintf("exists and carries no Helm ownership of release %s/%s (label %s=Helm, annotations %s and %s): helm rollback refuses to take it over, and so does unstick",
		namespace, name, HelmManagedByLabel, HelmReleaseNameAnn, HelmReleaseNSAnn)
}

// highRiskKinds are the kinds that grant permissions or intercept requests, by API group.
var highRiskKinds = map[string]string{
	"rbac.authorization.k8s.io/Role":                                "grants permissions (RBAC)",
	"rbac.authorization.k8s.io/ClusterRole":                         "grants permissions (RBAC)",
	"rbac.authorization.k8s.io/RoleBinding":                         "grants permissions (RBAC)",
	"rbac.authorization.k8s.io/ClusterRoleBinding":                  "grants permissions (RBAC)",
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":     "intercepts API requests (admission webhook)",
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration":   "intercepts API requests (admission webhook)",
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy":        "intercepts API requests (admission policy)",
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": "intercepts API requests (admission policy)",
	"admissionregistration.k8s.io/MutatingAdmissionPolicy":          "intercepts API requests (admission policy)",
	"admissionregistration.k8s.io/MutatingAdmissionPolicyBinding":   "intercepts API requests (admission policy)",
	"apiregistration.k8s.io/APIService":                             "routes an API group to a service (API aggregation)",
	"apiextensions.k8s.io/CustomResourceDefinition":                 "defines an API (CRD)",
}

// HighRiskReason says how an object grants or intercepts, or "" when it does neither: the
// kinds above, and pod specs with PodSecurity-relevant fields.
func HighRiskReason(o Object, doc map[string]any) string {
	if why, ok := highRiskKinds[o.Group()+"/"+o.Kind]; ok {
		return why
	}
	if fields := PodSecurityFields(o.Kind, doc); len(fields) > 0 {
		return "privileged pod spec (" + strings.Join(fields, ", ") + ")"
	}
	return ""
}

// podSpecPaths is where each workload kind keeps its pod spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// PodSecurityFields lists the fields of a workload's pod spec that the Pod Security
// Standards' baseline profile forbids: host namespaces, hostPath volumes, privileged
// containers and added capabilities.
func PodSecurityFields(kind string, doc map[string]any) []string {
	path, ok := podSpecPaths[kind]
	if !ok {
		return nil
	}
	spec, ok := dig(doc, path...).(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for _, f := range []string{"hostPID", "hostNetwork", "hostIPC"} {
		if b, _ := spec[f].(bool); b {
			out = append(out, f)
		}
	}
	for _, v := range list(spec["volumes"]) {
		if m, ok := v.(map[string]any); ok && m["hostPath"] != nil {
			out = append(out, fmt.Sprintf("hostPath volume %v", m["name"]))
		}
	}
	for _, key := range []string{"initContainers", "containers", "ephemeralContainers"} {
		for _, c := range list(spec[key]) {
			out = append(out, containerFields(c)...)
		}
	}
	return slices.Compact(out)
}

func containerFields(c any) []string {
	m, ok := c.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	if b, _ := dig(m, "securityContext", "privileged").(bool); b {
		out = append(out, fmt.Sprintf("privileged container %v", m["name"]))
	}
	if add := list(dig(m, "securityContext", "capabilities", "add")); len(add) > 0 {
		out = append(out, fmt.Sprintf("container %v adds capabilities %v", m["name"], add))
	}
	return out
}

func dig(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

// OwnershipError refuses a whole step: some object of the manifest it would apply is not the
// release's to write, or is high risk above --max-risk. Nothing is written.
type OwnershipError struct {
	Step    string
	Release string // namespace/name
	Refused []ObjectVerdict
	// NeedsHigh lists high-risk objects the step would create or change below --max-risk high.
	NeedsHigh []ObjectVerdict
}

func (e *OwnershipError) Error() string {
	var parts []string
	for _, v := range e.Refused {
		parts = append(parts, v.Object.Ref()+" ("+v.Refused+")")
	}
	for _, v := range e.NeedsHigh {
		parts = append(parts, fmt.Sprintf("%s would be %s and %s: that needs --max-risk high", v.Object.Ref(), participle[v.Op], v.HighRisk))
	}
	return fmt.Sprintf("refusing the whole step for Helm release %s, nothing written: %s", e.Release, strings.Join(parts, "; "))
}

var participle = map[string]string{OpCreate: "created", OpChange: "changed"}

// GateManifest judges every object of a manifest before any is written: the objects the
// release does not own are refused, and so are high-risk objects the step would create or
// change when maxRisk is below High. It returns nil when the step may go on.
func GateManifest(step, namespace, name string, verdicts []ObjectVerdict, maxRisk Risk) *OwnershipError {
	e := &OwnershipError{Step: step, Release: namespace + "/" + name}
	for _, v := range verdicts {
		switch {
		case v.Op == OpRefused:
			e.Refused = append(e.Refused, v)
		case v.HighRisk != "" && v.Writes() && maxRisk < High:
			e.NeedsHigh = append(e.NeedsHigh, v)
		}
	}
	if len(e.Refused) == 0 && len(e.NeedsHigh) == 0 {
		return nil
	}
	return e
}
