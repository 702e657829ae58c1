package remediate

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// helmRelease plans a release whose newest revision is pending or failed: let Fleet retry
// (resync), roll back to the last deployed revision as `helm rollback` does (repair), and —
// only where nothing can be rolled back to — mark the pending revision failed as Fleet does.
func (pl *planner) helmRelease(inc finding.Incident) []Attempt {
	root := inc.RootCause
	c := pl.snap.Cluster(root.Cluster)
	if c == nil {
		return nil
	}
	var rel *helmrelease.Release
	for _, r := range c.HelmReleases {
		if r.Namespace == root.Object.Namespace && r.SecretName == root.Object.Name {
			rel = r
		}
	}
	if rel == nil {
		return nil
	}
	hist := c.Releases(rel.Namespace, rel.Name)
	current := hist[len(hist)-1]
	if !current.IsPending() && current.Status != "failed" {
		return nil // moved on since it was judged
	}
	why := pl.reasonsAbout(inc, func(f finding.Finding) bool { return strings.HasPrefix(f.ID, "helm/") })
	var out []Attempt

	// resync: the agent's own release is redeployed from its Fleet Cluster, any other
	// release's bundle force-synced.
	if r, risk, ok := rung(root, RungResync, sigResync); ok {
		if fleet.IsAgentBundle(rel.Name) {
			if m, fc := pl.fleetClusterNamed(c, strings.TrimPrefix(rel.Name, fleet.AgentBundlePrefix)); fc != nil && containsCmd(r, sigRedeploy) {
				out = append(out, single(settles(pl.redeployStep(m, fc, RungResync, risk, r.Action, why), c.Name, rel.Namespace, rel.Name)))
			}
		} else if m, b := pl.bundleOfRelease(c, rel.Name); b != nil && containsCmd(r, sigForceSync) {
			out = append(out, single(settles(pl.forceSyncStep(m, b, RungResync, risk, r.Action, why), c.Name, rel.Namespace, rel.Name)))
		}
	}

	// repair: roll back. A pending or failed newest revision goes back to the last deployed
	// one; with none deployed, to the newest earlier revision still stored (Helm can roll
	// back to any stored revision, failed ones included).
	target := lastWithStatus(hist[:len(hist)-1], "deployed")
	if target == nil && current.IsPending() && len(hist) > 1 {
		target = hist[len(hist)-2]
	}
	if target != nil {
		if r, risk, ok := rung(root, RungRepair, sigHelmRollback); ok {
			out = append(out, single(pl.rollbackStep(c, hist, current, target, risk, r.Action, why)))
		}
	} else if current.IsPending() {
		if r, risk, ok := rung(root, RungRepair, sigMarkFailed); ok {
			out = append(out, single(pl.markFailedStep(c, current, risk, r.Action, why)))
		}
	}
	return out
}

func containsCmd(r finding.Step, match func(string) bool) bool {
	for _, c := range r.Commands {
		if !shellcmd.IsWithheld(c) && match(c) {
			return true
		}
	}
	return false
}

// reasonsAbout is the incident's findings that match, root cause first.
func (pl *planner) reasonsAbout(inc finding.Incident, keep func(finding.Finding) bool) []Reason {
	out := []Reason{reasonOf(inc.RootCause)}
	for _, s := range inc.Symptoms {
		if keep(s) {
			out = append(out, reasonOf(s))
		}
	}
	return out
}

func lastWithStatus(hist []*helmrelease.Release, status string) *helmrelease.Release {
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Status == status {
			return hist[i]
		}
	}
	return nil
}

func (pl *planner) releaseSecret(c *snapshot.Cluster, r *helmrelease.Release) Object {
	if s, ok := c.Get("Secret", r.Namespace, r.SecretName).(*corev1.Secret); ok {
		return metaObject(c.Name, "v1", "Secret", s)
	}
	return Object{Cluster: c.Name, APIVersion: "v1", Kind: "Secret", Namespace: r.Namespace, Name: r.SecretName}
}

func chartOf(r *helmrelease.Release) string {
	if r.Chart == "" {
		return "-"
	}
	if r.ChartVersion == "" {
		return r.Chart
	}
	return r.Chart + "-" + r.ChartVersion
}

func (pl *planner) rollbackStep(c *snapshot.Cluster, hist []*helmrelease.Release, current, target *helmrelease.Release, risk Risk, rationale string, why []Reason) Step {
	h := &HelmChange{Release: current.Name, Namespace: current.Namespace, Current: current.Revision, CurrentStatus: current.Status,
		Target: target.Revision, TargetStatus: target.Status, TargetChart: chartOf(target), NewRevision: current.Revision + 1}
	touches := []Object{pl.releaseSecret(c, current)}
	// Helm supersedes every deployed revision; the target is usually the only one.
	var deployed []string
	for _, r := range hist {
		if r != current && r.Status == "deployed" {
			touches = append(touches, pl.releaseSecret(c, r))
			deployed = append(deployed, itoa(r.Revision))
		}
	}
	var evidence []Object
	if target.Status != "deployed" {
		evidence = append(evidence, pl.releaseSecret(c, target))
	}
	supersede := fmt.Sprintf("mark revision %d superseded", current.Revision)
	if len(deployed) > 0 {
		supersede = fmt.Sprintf("mark revision(s) %s and %d superseded", strings.Join(deployed, ", "), current.Revision)
	}
	touches = append(touches, Object{Cluster: c.Name, APIVersion: "v1", Kind: "Secret", Namespace: current.Namespace, Name: h.SecretName(h.NewRevision), Create: true})
	var rvs []string
	for _, o := range touches {
		if !o.Create {
			rvs = append(rvs, fmt.Sprintf("%s at resourceVersion %s", o.Name, orDash(o.ResourceVersion)))
		}
	}
	s := Step{
		ID:      stepID(HelmRollback, c.Name, current.Namespace, current.Name, itoa(current.Revision), itoa(target.Revision)),
		Action:  HelmRollback,
		Rung:    RungRepair,
		Risk:    risk,
		Cluster: c.Name,
		Target:  touches[0],
		Touches: touches,
		Change: fmt.Sprintf("roll Helm release %s/%s back from revision %d (%s) to revision %d (%s, chart %s): write revision %d with revision %d's chart, values and manifest, %s, and re-apply revision %d's manifest objects server-side",
			current.Namespace, current.Name, current.Revision, current.Status, target.Revision, target.Status, chartOf(target),
			h.NewRevision, target.Revision, supersede, target.Revision),
		Evidence:  evidence,
		Why:       why,
		Rationale: rationale,
		Precondition: fmt.Sprintf("revision %d is still the newest and %s, revision %d does not exist yet, and the release Secrets are unchanged since planning (%s); the manifest objects are read again just before the write and applied with the resourceVersion read",
			current.Revision, current.Status, h.NewRevision, strings.Join(rvs, ", ")),
		Verify:   fmt.Sprintf("Helm's storage reads revision %d as deployed with chart %s and revision %d as superseded", h.NewRevision, chartOf(target), target.Revision),
		Commands: []string{shellcmd.Sprintf("%s -n %s rollback %s %s", helmAt(c), namespaceArg(current.Namespace), releaseArg(current.Name), shellcmd.Int(target.Revision))},
		Notes: []string{
			"Release records are written with Helm's own storage driver (helm.sh/helm/v3/pkg/storage, driver.Secrets); the backup keeps every revision Secret it touches, payload included, so `unstick restore` puts them back exactly.",
			fmt.Sprintf("Like `helm rollback --no-hooks`: rollback hooks are not run, and objects found only in revision %d's manifest are left in place (helm rollback would delete them).", current.Revision),
		},
		Helm: h,
	}
	if target.PayloadError == nil {
		s.ManifestObjects = plannedObjects(c, current.Namespace, current.Name, target.Docs)
		s.Notes = append(s.Notes, manifestNotes(target.Revision, s.ManifestObjects)...)
	}
	if fleet.IsAgentBundle(current.Name) {
		s.Notes = append(s.Notes, "This is the Fleet agent's own release: re-applying the older manifest restarts the agent on the older version, after which Fleet upgrades it again (what Fleet itself does when it meets \"another operation is in progress\").")
	}
	if current.PayloadError != nil || target.PayloadError != nil {
		s.Notes = append(s.Notes, "a revision's record could not be decoded when planning; the executor refuses to roll back to a record it cannot read")
	}
	return s
}

func (pl *planner) markFailedStep(c *snapshot.Cluster, current *helmrelease.Release, risk Risk, rationale string, why []Reason) Step {
	h := &HelmChange{Release: current.Name, Namespace: current.Namespace, Current: current.Revision, CurrentStatus: current.Status}
	sec := pl.releaseSecret(c, current)
	name := h.SecretName(current.Revision)
	k, ns, secret := kubectl(c), namespaceArg(current.Namespace), shellcmd.Value(shellcmd.Name, "Secret name", name)
	return Step{
		ID:      stepID(HelmMarkFailed, c.Name, current.Namespace, current.Name, itoa(current.Revision)),
		Action:  HelmMarkFailed,
		Rung:    RungRepair,
		Risk:    risk,
		Cluster: c.Name,
		Target:  sec,
		Touches: []Object{sec},
		Change: fmt.Sprintf("mark revision %d of Helm release %s/%s failed (it is %s and no earlier revision is stored to roll back to), in the record and in its status label, so the next install or upgrade can proceed",
			current.Revision, current.Namespace, current.Name, current.Status),
		Why:          why,
		Rationale:    rationale,
		Precondition: fmt.Sprintf("revision %d is still the newest and %s; Secret %s unchanged since planning (resourceVersion %s)", current.Revision, current.Status, name, orDash(sec.ResourceVersion)),
		Verify: fmt.Sprintf("Helm's storage reads revision %d as failed, and then a newer revision as deployed (the install or upgrade the mark lets through: the Fleet agent's for a bundle, else `helm upgrade --install` run by the operator)",
			current.Revision),
		Commands: []string{
			shellcmd.Sprintf("%s -n %s label secret %s status=failed --overwrite", k, ns, secret),
			shellcmd.Sprintf(`%s -n %s get secret %s -o jsonpath='{.data.release}' | base64 -d | base64 -d | gunzip | jq -c '.info.status="failed"' | gzip | base64 -w0 | base64 -w0 | jq -Rc '{data:{release:.},metadata:{labels:{status:"failed"}}}' > patch.json && %s -n %s patch secret %s --type merge --patch-file patch.json`,
				k, ns, secret, k, ns, secret),
		},
		Notes: []string{"The record is rewritten with Helm's own storage driver; the backup keeps the Secret, payload included, for `unstick restore`."},
		Helm:  h,
	}
}

// bundleOfRelease finds the management-side Bundle whose BundleDeployment for this
// downstream cluster produced the release (Fleet names a release after its bundle unless the
// bundle sets helm.releaseName).
func (pl *planner) bundleOfRelease(c *snapshot.Cluster, release string) (*snapshot.Cluster, *bundleRef) {
	for _, m := range pl.snap.Management() {
		for _, bd := range m.BundleDeployments {
			if c.FleetCluster != "" && bd.Labels.Get(fleet.LabelClusterNS)+"/"+bd.Labels.Get(fleet.LabelClusterName) != c.FleetCluster {
				continue
			}
			rn := fleet.BundleName(bd)
			if o := bd.Spec.Options.Helm; o != nil && o.ReleaseName != "" {
				rn = o.ReleaseName
			}
			if rn != release && fleet.BundleName(bd) != release {
				continue
			}
			if b := pl.bundleTarget(m, bd.Labels.Get(fleet.LabelBundleNamespace), fleet.BundleName(bd)); b != nil {
				return m, b
			}
		}
	}
	return nil, nil
}

func itoa(i int) string { return fmt.Sprintf("%d", i) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// kubectl starts a printed kubectl command aimed at the cluster: the kubeconfig file the live
// read named (so a pasted command reads the same file whatever $KUBECONFIG the shell has),
// its context, and the --server that goes with it when the cluster was reached through
// Rancher's proxy with a Rancher context's credentials.
func kubectl(c *snapshot.Cluster) shellcmd.Arg { return shellcmd.Program("kubectl", aimAt(c)) }

// helmAt starts a printed helm command aimed at the cluster, as kubectl does.
func helmAt(c *snapshot.Cluster) shellcmd.Arg { return shellcmd.Program("helm", aimAt(c)) }

func aimAt(c *snapshot.Cluster) shellcmd.Target {
	if c.ContextSource == snapshot.ContextUnknown {
		return shellcmd.Target{Kubeconfig: c.Kubeconfig, Placeholder: snapshot.ContextPlaceholder, Server: c.ContextServer}
	}
	ctx := c.Context
	if ctx == "" {
		ctx = c.Name
	}
	return shellcmd.Target{Kubeconfig: c.Kubeconfig, Context: ctx, Server: c.ContextServer}
}

func namespaceArg(ns string) shellcmd.Arg { return shellcmd.Value(shellcmd.Namespace, "namespace", ns) }

func releaseArg(name string) shellcmd.Arg {
	return shellcmd.Value(shellcmd.Release, "release name", name)
}

func nameArg(name string) shellcmd.Arg { return shellcmd.Value(shellcmd.Name, "", name) }

// settles makes a resync step for a stuck release verify only once the release has moved on to
// a deployed revision, not merely once the Fleet controller reconciled the bump.
func settles(s Step, cluster, namespace, release string) Step {
	s.Settles = &ReleaseRef{Cluster: cluster, Namespace: namespace, Release: release}
	s.Verify += fmt.Sprintf("; and Helm release %s/%s on %s reaches a deployed revision (the agent deployed it again)", namespace, release, cluster)
	return s
}
