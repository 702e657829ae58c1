package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// refusal is an apply Helm or the API server refused in a way no retry clears: an object
// that exists without the release's ownership metadata (Helm's "invalid ownership
// metadata"), one whose fields another field manager holds (Helm 4's server-side apply
// conflict), or an update of a field that cannot change ("field is immutable"). Fleet's
// resync replays the same apply, so the ladder replaces it with the steps that clear it.
type refusal struct {
	kind, group, name, namespace string   // the refused object
	owner                        string   // who holds it: another release, a field manager, or ""
	ownerRelease                 bool     // another Helm release's annotations name it
	release, releaseNS           string   // the release that wanted it, when the message says
	fields                       []string // the fields in question
	immutable                    bool
	msg                          string
}

// parseRefusal reads a refusal from a message, or says there is none.
func parseRefusal(msg string) (refusal, bool) {
	if o, ok := messages.ParseOwnership(msg); ok && o.Name != "" {
		r := refusal{kind: o.Kind, name: o.Name, namespace: o.Namespace, release: o.Release, releaseNS: o.ReleaseNamespace, msg: msg}
		if o.OwnerRelease != "" {
			r.owner, r.ownerRelease = "Helm release "+qualified(o.OwnerNamespace, o.OwnerRelease), true
		}
		return r, true
	}
	if c, ok := messages.ParseApplyConflict(msg); ok && c.Name != "" {
		g, _ := splitGV(c.APIVersion)
		r := refusal{kind: c.Kind, group: g, name: c.Name, namespace: c.Namespace, msg: msg}
		var owners []string
		for _, m := range c.Managers {
			owners = append(owners, fmt.Sprintf("field manager %q", m.Manager))
			r.fields = append(r.fields, m.Fields...)
		}
		r.owner = strings.Join(owners, ", ")
		return r, true
	}
	if im, ok := messages.ParseImmutable(msg); ok && im.Name != "" {
		return refusal{kind: im.Kind, group: im.Group, name: im.Name, fields: im.Fields, immutable: true, msg: msg}, true
	}
	return refusal{}, false
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func splitGV(gv string) (group, version string) {
	if g, v, ok := strings.Cut(gv, "/"); ok {
		return g, v
	}
	return "", gv
}

// what names the refused object and who holds it, for a summary.
func (r refusal) what() string {
	obj := fmt.Sprintf("%s %s", r.kind, qualified(r.namespace, r.name))
	switch {
	case r.immutable:
		return fmt.Sprintf("%s cannot be updated in place: %s immutable", obj, fieldList(r.fields, "a field is"))
	case r.owner != "" && len(r.fields) > 0:
		return fmt.Sprintf("%s has fields held by %s (%s)", obj, r.owner, strings.Join(r.fields, ", "))
	case r.owner != "":
		return fmt.Sprintf("%s belongs to %s", obj, r.owner)
	}
	return obj + " exists without this release's ownership metadata"
}

func fieldList(fields []string, none string) string {
	switch len(fields) {
	case 0:
		return none
	case 1:
		return fields[0] + " is"
	}
	return strings.Join(fields, ", ") + " are"
}

// kubectlKind is the resource argument kubectl takes for the object: kind.group, lower-case.
func (r refusal) kubectlKind() string {
	if r.group == "" {
		return strings.ToLower(r.kind)
	}
	return strings.ToLower(r.kind + "." + r.group)
}

// nsFlag is kubectl's -n for a namespaced object.
func (r refusal) nsFlag() string {
	if r.namespace == "" {
		return ""
	}
	return "-n " + r.namespace + " "
}

// steps are the ways out: save and delete the object, or adopt it into the release (first
// when another release holds it), each followed by forceSync (the command that makes Fleet apply again, or "" for a plain Helm
// release); for an immutable field, delete and re-create, or Fleet's helm.force.
func (r refusal) steps(forceSync string) []finding.Step {
	obj := r.kubectlKind() + " " + r.name
	saved := strings.ToLower(r.kind) + "-" + r.name + ".saved.yaml"
	save := []string{
		fmt.Sprintf("kubectl %sget %s -o yaml > %s", r.nsFlag(), obj, saved),
		fmt.Sprintf("kubectl %sdelete %s", r.nsFlag(), obj),
	}
	if r.immutable {
		return []finding.Step{
			{Rung: "realign", Risk: "high", Commands: withSync(save, forceSync), Action: fmt.Sprintf(
				"Delete %s %s (saved first to %s) and let the release create it again: the new revision changes %s, which cannot change in place. %s Alternatively set helm.force: true in the bundle's fleet.yaml, so that Helm replaces the object itself.",
				r.kind, qualified(r.namespace, r.name), saved, orDash(strings.Join(r.fields, ", ")), lostOnDelete(r.kind))},
		}
	}
	adopt := []string{
		fmt.Sprintf("kubectl %slabel %s app.kubernetes.io/managed-by=Helm --overwrite", r.nsFlag(), obj),
		fmt.Sprintf("kubectl %sannotate %s meta.helm.sh/release-name=<release> meta.helm.sh/release-namespace=<release-namespace> --overwrite", r.nsFlag(), obj),
	}
	adoptStep := finding.Step{Rung: "repair", Risk: "medium", Commands: withSync(adopt, forceSync), Action: fmt.Sprintf(
		"Adopt %s %s into the release: give it Helm's ownership label and annotations%s. %s",
		r.kind, qualified(r.namespace, r.name), thenSync(forceSync), r.adoptLimit())}
	saveStep := finding.Step{Rung: "realign", Risk: "high", Commands: withSync(save, forceSync), Action: fmt.Sprintf(
		"Save %s %s to %s and delete it, so the release creates it afresh with the chart's values%s; until then whatever reads it finds it gone. %s",
		r.kind, qualified(r.namespace, r.name), saved, thenSync(forceSync), lostOnDelete(r.kind))}
	if r.ownerRelease {
		return []finding.Step{adoptStep, saveStep}
	}
	return []finding.Step{saveStep, adoptStep}
}

// adoptLimit says when adopting is enough. Helm 4 applies server-side without forcing
// conflicts (Fleet sets no ForceConflicts), and a field another manager set keeps that
// manager as long as the value does not change hands: on the test bed with Fleet v0.16.0 the
// retry after the label and annotations failed with "conflict with \"kubectl-create\"" on
// every field whose value differed from the chart's (and, with metadata.managedFields
// cleared, "conflict with \"before-first-apply\""). An object another release applied with the
// same field manager (Helm 4 names it after the program: "fleetagent", "helm") moves over.
func (r refusal) adoptLimit() string {
	if r.ownerRelease {
		return "Its fields were applied by the other release's field manager: when that is this release's too (both deployed by Fleet's agent, or both by the Helm CLI), the next apply takes them over; otherwise delete it instead (the next step)."
	}
	return fmt.Sprintf("That is enough only where the live values already equal the chart's: a field %s set to another value stays in conflict, so delete the object instead (the step above) unless they match.", r.holder())
}

// holder names who holds the object's fields: the field managers of a conflict, the release
// named in its annotations, or whoever created it.
func (r refusal) holder() string {
	if r.owner != "" {
		return r.owner
	}
	return "whoever created it"
}

func withSync(cmds []string, forceSync string) []string {
	if forceSync == "" {
		return cmds
	}
	return append(slices.Clone(cmds), forceSync)
}

func thenSync(forceSync string) string {
	if forceSync == "" {
		return ""
	}
	return ", then force a new deployment of the bundle"
}

// withRefusal puts the ways out of r in f's ladder in place of the resync and rollback rungs,
// which replay the refused apply, and fills the release it belongs to.
func withRefusal(f *finding.Finding, r refusal, forceSync, release, releaseNS string) {
	if r.namespace == "" && !clusterScoped(r.kind) {
		// The API server's "is invalid" names no namespace: the release's own is where Helm
		// put what it does not place elsewhere.
		r.namespace = "<release-namespace>"
		if releaseNS != "" {
			r.namespace = releaseNS
		}
	}
	var kept []finding.Step
	for _, st := range f.Remediation {
		if st.Rung == "observe" {
			kept = append(kept, st)
		}
	}
	f.Remediation = append(kept, r.steps(forceSync)...)
	if f.Vars == nil {
		f.Vars = map[string]string{}
	}
	if release != "" {
		f.Vars["release"] = release
	}
	if releaseNS != "" {
		f.Vars["release-namespace"] = releaseNS
	}
}

// forceSyncBundle is the catalogue's command that makes Fleet deploy a bundle again; the
// finding's vars fill it.
const forceSyncBundle = `kubectl -n <fleet-namespace> patch bundles.fleet.cattle.io <bundle> --type merge -p '{"spec":{"forceSyncGeneration":<n+1>}}'`

// bdRefusal is the refusal a BundleDeployment's Installed or Deployed condition quotes.
func bdRefusal(bd *snapshot.BundleDeployment) (refusal, string, bool) {
	for _, typ := range []string{"Installed", "Deployed"} {
		c := fleet.Condition(bd.Status.Conditions, typ)
		if c == nil || string(c.Status) != "False" || c.Message == "" {
			continue
		}
		if r, ok := parseRefusal(c.Message); ok {
			return r, typ, true
		}
	}
	return refusal{}, "", false
}

// refusedBundle is a BundleDeployment whose apply was refused: an error from the moment the
// condition says so, naming the object and who holds it, with the steps that clear it.
func refusedBundle(ctx *Context, m *snapshot.Cluster, bd *snapshot.BundleDeployment, target string, r refusal, cond string,
	mk func(id, summary string, since time.Time) finding.Finding) finding.Finding {
	bundle := fleet.BundleName(bd)
	f := mk("fleet/bundle-err-applied", fmt.Sprintf("bundle %s cannot be applied on cluster %s, and a retry replays the same refusal: %s", bundle, target, r.what()),
		bdConditionTime(bd, cond))
	if !slices.ContainsFunc(f.Evidence, func(e finding.Evidence) bool { return e.Text == r.msg }) {
		f.Evidence = append(f.Evidence, ev(sourceOf(m, bdRef(bd))+" status.conditions["+cond+"]", "%s", r.msg))
	}
	f.Signature = "refused|" + genericBundle(bundle) + "|" + classify.Signature(r.msg)
	rel, relNS := r.release, r.releaseNS
	if rel == "" {
		rel = bundle
		if bd.Spec.Options.Helm != nil && bd.Spec.Options.Helm.ReleaseName != "" {
			rel = bd.Spec.Options.Helm.ReleaseName
		}
	}
	if relNS == "" {
		relNS = releaseNamespace(ctx.Snap.Cluster(target), rel)
	}
	if r.namespace == "" && !clusterScoped(r.kind) {
		if tc := ctx.Snap.Cluster(target); tc != nil {
			r.namespace = workloadNamespace(tc, r.kind, r.name)
		}
	}
	withRefusal(&f, r, forceSyncBundle, rel, relNS)
	return f
}

// releaseNamespace is the namespace of the release of that name on c, when c was collected
// and holds exactly one.
func releaseNamespace(c *snapshot.Cluster, name string) string {
	if c == nil {
		return ""
	}
	return onlyNamespace(c.HelmReleases, name, func(r *helmrelease.Release) (string, string) { return r.Name, r.Namespace })
}

// refusedRelease names, in a failed release's finding, the object its revision was refused
// on and who holds it, and gives the ways out in place of a retry or a rollback. A release
// Fleet deploys is applied again by forcing a new deployment of its bundle.
func refusedRelease(rel *helmrelease.Release, r refusal, f *finding.Finding) {
	f.Summary = fmt.Sprintf("Helm release %s/%s revision %d failed, and a retry replays the same refusal: %s", rel.Namespace, rel.Name, rel.Revision, r.what())
	forceSync := ""
	if f.Vars["bundle"] != "" && f.Vars["fleet-namespace"] != "" {
		forceSync = forceSyncBundle
	}
	withRefusal(f, r, forceSync, rel.Name, rel.Namespace)
}

// bundleDeploymentFor is the BundleDeployment that deploys the release of that name to c,
// when a management cluster holding it was collected.
func bundleDeploymentFor(ctx *Context, c *snapshot.Cluster, release string) *snapshot.BundleDeployment {
	for _, m := range ctx.Snap.Management() {
		ix := newFleetIndex(m)
		for _, bd := range m.BundleDeployments {
			name := fleet.BundleName(bd)
			if bd.Spec.Options.Helm != nil && bd.Spec.Options.Helm.ReleaseName != "" {
				name = bd.Spec.Options.Helm.ReleaseName
			}
			if name != release {
				continue
			}
			if target, _ := bdTarget(ctx, ix, m, bd); target == c.Name {
				return bd
			}
		}
	}
	return nil
}

// lostOnDelete says what deleting an object of that kind takes away until it is re-created.
func lostOnDelete(kind string) string {
	switch kind {
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		return "Its pods are deleted with it: what they serve is down until the new ones are ready (a StatefulSet's PersistentVolumeClaims stay)."
	case "Job", "CronJob":
		return "Its pods and their logs are deleted with it, and the new one runs again."
	case "Service":
		return "Its cluster IP (and a LoadBalancer's external address) may change."
	case "PersistentVolumeClaim":
		return "Its volume may be deleted with it, depending on the PersistentVolume's reclaim policy: back up the data first."
	}
	return "Until the release re-creates it, whatever uses it finds it gone."
}

// clusterScoped reports whether a kind has no namespace, for the kinds a chart commonly holds.
func clusterScoped(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
		"StorageClass", "PriorityClass", "IngressClass", "RuntimeClass", "CSIDriver",
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService":
		return true
	}
	return false
}
