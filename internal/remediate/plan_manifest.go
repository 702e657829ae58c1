package remediate

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// PlannedObject is one object of the manifest a rollback re-applies, as the plan sees it: the
// executor reads it again and judges it (OwnershipRefusal, HighRiskReason) before the first
// write, and lists create, change or unchanged for each before asking.
type PlannedObject struct {
	Object Object `json:"object"`
	// Rule says what the executor lets the step do to it.
	Rule string `json:"rule"`
	// HighRisk says how the kind grants or intercepts ("" for other kinds).
	HighRisk string `json:"highRisk,omitempty"`
	// Refused is set when the snapshot already shows the object is not the release's.
	Refused string `json:"refused,omitempty"`
}

func (p PlannedObject) String() string {
	s := p.Object.Ref() + " (" + p.Rule + ")"
	if p.Refused != "" {
		s += "; REFUSED: " + p.Refused
	}
	if p.HighRisk != "" {
		s += " [HIGH RISK: " + p.HighRisk + "]"
	}
	return s
}

// clusterScoped are the built-in kinds without a namespace, by API group (discovery decides
// when the step runs; the plan only needs to say which rule applies).
var clusterScoped = map[string]bool{
	"/Namespace": true, "/Node": true, "/PersistentVolume": true,
	"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
	"storage.k8s.io/StorageClass": true, "storage.k8s.io/CSIDriver": true, "storage.k8s.io/CSINode": true, "storage.k8s.io/VolumeAttachment": true,
	"scheduling.k8s.io/PriorityClass": true, "node.k8s.io/RuntimeClass": true, "networking.k8s.io/IngressClass": true,
	"apiextensions.k8s.io/CustomResourceDefinition": true, "apiregistration.k8s.io/APIService": true,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration": true, "admissionregistration.k8s.io/ValidatingWebhookConfiguration": true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy": true, "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": true,
	"admissionregistration.k8s.io/MutatingAdmissionPolicy": true, "admissionregistration.k8s.io/MutatingAdmissionPolicyBinding": true,
	"certificates.k8s.io/CertificateSigningRequest": true,
	"flowcontrol.apiserver.k8s.io/FlowSchema":       true, "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration": true,
}

const (
	ruleOwnedOnly = "must already exist as this release's"
	ruleInRelease = "created if absent, else must be this release's"
)

// plannedObjects lists the objects of a revision's manifest with the rule each falls under,
// judging those the snapshot holds: an object it shows without this release's ownership is
// marked refused (the executor reads every object again and refuses the step with all of
// them named).
func plannedObjects(c *snapshot.Cluster, ns, release string, docs []manifest.Doc) []PlannedObject {
	out := make([]PlannedObject, 0, len(docs))
	for _, d := range docs {
		o := Object{Cluster: c.Name, APIVersion: d.APIVersion, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}
		p := PlannedObject{Object: o, HighRisk: HighRiskReason(o, nil)}
		switch {
		case clusterScoped[o.Group()+"/"+o.Kind]:
			p.Object.Namespace = ""
			p.Rule = "cluster-scoped: " + ruleOwnedOnly
		case o.Namespace != "" && o.Namespace != ns:
			p.Rule = "outside the release's namespace " + ns + ": " + ruleOwnedOnly
		default:
			if p.Object.Namespace == "" {
				p.Object.Namespace = ns
			}
			p.Rule = ruleInRelease
			p.Refused = refusedInSnapshot(c, ns, release, p.Object)
		}
		out = append(out, p)
	}
	return out
}

// refusedInSnapshot judges an object the snapshot holds (a namespaced object read with the
// release's own namespace): one that exists without this release's ownership is refused.
func refusedInSnapshot(c *snapshot.Cluster, ns, release string, o Object) string {
	live, ok := c.GetRef(o.APIVersion, o.Kind, o.Namespace, o.Name).(labelled)
	if !ok || Guard(o, "", nil) != nil {
		return ""
	}
	return OwnershipRefusal(ns, release, ManifestObject{Object: o, Namespaced: true, Exists: true, Labels: live.GetLabels(), Annotations: live.GetAnnotations()})
}

type labelled interface {
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}

// manifestNotes are what the plan says of the objects a rollback re-applies.
func manifestNotes(target int, objs []PlannedObject) []string {
	if len(objs) == 0 {
		return []string{fmt.Sprintf("Revision %d's manifest holds no object: the rollback writes the release records only.", target)}
	}
	var notes []string
	lines := make([]string, len(objs))
	var refused, high []string
	for i, p := range objs {
		lines[i] = p.String()
		if p.Refused != "" {
			refused = append(refused, p.Object.Ref()+" ("+p.Refused+")")
		}
		if p.HighRisk != "" {
			high = append(high, p.Object.Ref())
		}
	}
	notes = append(notes, fmt.Sprintf("Revision %d's manifest holds %d objects, each read and judged before the first write; if one is not this release's (label %s=Helm, annotations %s and %s naming it), the step is refused whole and nothing is written: %s.",
		target, len(objs), HelmManagedByLabel, HelmReleaseNameAnn, HelmReleaseNSAnn, strings.Join(lines, "; ")))
	if len(high) > 0 {
		notes = append(notes, fmt.Sprintf("HIGH RISK: %s grant permissions or intercept requests. At this risk the step only re-applies them unchanged: it is refused unless run with --max-risk high if it would create or change one (or a pod spec with privileged containers, host namespaces, hostPath volumes or added capabilities, found when the step reads the manifest).", strings.Join(high, ", ")))
	}
	if len(refused) > 0 {
		notes = append(notes, "REFUSED when applied, with nothing written: the cluster as read shows objects that are not this release's: "+strings.Join(refused, "; "))
	}
	return notes
}
