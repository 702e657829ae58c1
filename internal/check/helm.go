package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// helmReleases judges each Helm release by its stored history.
//
// Field reports' "Pending-Upgrade": an agent killed mid-upgrade leaves its own release
// pending-upgrade, after which every helm operation fails with "another operation
// (install/upgrade/rollback) is in progress" (helm pkg/action). Fleet answers that error with a
// rollback and a retry, each writing a new pending revision, so a release that stays pending
// is measured from the first revision of its unbroken pending run (helm_pending.go). With no
// deployed revision, or the one a rollback needs pruned (Fleet keeps 2), there is nothing to
// roll back to: "has no deployed releases" / "release has no <n> version".
//
// Every status Helm writes (pkg/release/status.go) is judged by the newest revision:
//   - pending-install, pending-upgrade, pending-rollback: helm/release-pending once the run is
//     older than helm.pendingAfter; with nothing to roll back to, also helm/no-deployed-release.
//   - failed: helm/release-failed; with no revision deployed now or before (superseded), also
//     helm/no-deployed-release.
//   - uninstalling: an uninstall that never finished (a pre-delete hook that fails leaves the
//     release so, helm#9241, longhorn#5187); with no earlier revision to roll back to,
//     helm/no-deployed-release: upgrades fail with "has no deployed releases".
//   - superseded, unknown: a newest revision that is not the deployed one is
//     helm/no-deployed-release, whatever the earlier ones are (the deployed record is gone).
//   - uninstalled (kept with --keep-history) while a Fleet BundleDeployment still deploys it:
//     helm/no-deployed-release — nothing is deployed, and an upgrade without --install fails
//     with "has no deployed releases". With nothing asking for it, it was removed on purpose.
//   - deployed: healthy.
var helmReleases = Check{
	Name:  "helm/releases",
	Emits: []string{"helm/release-pending", "helm/release-failed", "helm/no-deployed-release"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		pendingAfter := ctx.Thresholds.Duration("helm.pendingAfter")
		for _, c := range ctx.Snap.Clusters {
			for _, hist := range releaseHistories(c) {
				out = append(out, judgeRelease(ctx, c, hist, pendingAfter)...)
			}
		}
		return out, nil
	},
}

func judgeRelease(ctx *Context, c *snapshot.Cluster, hist []*helmrelease.Release, pendingAfter time.Duration) []finding.Finding {
	var out []finding.Finding
	newest := hist[len(hist)-1]
	deployed := lastWithStatus(hist, helmrelease.StatusDeployed)
	base := func(id, summary string) finding.Finding {
		f := ctx.New(id, c, ref("v1", "Secret", newest.Namespace, newest.SecretName), summary)
		f.Keys = releaseKeys(ctx.Snap, c, newest)
		f.Evidence = releaseEvidence(c, hist)
		f.Vars = map[string]string{"release": newest.Name, "rev": strconv.Itoa(newest.Revision)}
		if deployed != nil {
			f.Vars["last-deployed-revision"] = strconv.Itoa(deployed.Revision)
		}
		if fc := agentFleetCluster(ctx.Snap, c, newest); fc != nil {
			for k, v := range agentVars(fc) {
				f.Vars[k] = v
			}
			f.Vars["bundle"] = newest.Name
		}
		return f
	}
	// since is when the release entered the state it is stuck in.
	since := newest.Since()
	switch {
	case newest.IsPending():
		run := pendingRun(hist)
		since = runStart(run)
		if since.IsZero() || ctx.Age(since) < pendingAfter {
			return nil
		}
		f := base("helm/release-pending", pendingSummary(ctx, newest, run, since))
		f.Evidence = pendingEvidence(c, hist, run)
		f.Since = timePtr(since)
		f.Signature = "helm-pending|" + newest.Status + "|" + chartSignature(newest)
		out = append(out, f)
	case newest.Status == helmrelease.StatusFailed:
		f := base("helm/release-failed", fmt.Sprintf("Helm release %s/%s revision %d failed: %s", newest.Namespace, newest.Name, newest.Revision, orDash(newest.Description)))
		f.Since = timePtr(since)
		f.Signature = "helm-failed|" + chartSignature(newest)
		awaitWorkloads(&f, c, newest.Description)
		if b := bundleDeploymentFor(ctx, c, newest.Name); b != nil {
			f.Vars["bundle"] = fleet.BundleName(b)
			f.Vars["fleet-namespace"] = b.Labels.Get(fleet.LabelBundleNamespace)
		}
		if r, ok := parseRefusal(newest.Description); ok {
			refusedRelease(newest, r, &f)
		}
		out = append(out, f)
	}
	if why := nothingToRollBackTo(hist, deployed); why != "" && !since.IsZero() && ctx.Age(since) >= pendingAfter {
		g := base("helm/no-deployed-release", fmt.Sprintf("Helm release %s/%s has nothing to roll back to: %s (history: %s)", newest.Namespace, newest.Name, why, historyLine(hist)))
		g.Since = timePtr(since)
		if newest.Status != helmrelease.StatusUninstalled {
			out = append(out, g)
		} else if u := uninstalledFinding(ctx, c, g, newest.Name); u != nil {
			out = append(out, *u)
		}
	}
	return out
}

// nothingToRollBackTo says why a release has no revision to return to, or "" when it has one
// (or was uninstalled on purpose). Helm's Deployed() answers "has no deployed releases" when no
// revision is deployed, and a rollback without a version targets the newest revision minus
// one, answering "release has no <n> version" when that record was pruned — Fleet keeps 2
// revisions and Helm's pruning spares only the last deployed one. (Fleet v0.16 marks an
// orphaned pending revision failed itself; one that persists past helm.pendingAfter means that
// did not happen.)
func nothingToRollBackTo(hist []*helmrelease.Release, deployed *helmrelease.Release) string {
	newest := hist[len(hist)-1]
	if deployed != nil {
		prev := newest.Revision - 1
		if newest.IsPending() && prev > 0 && !hasRevision(hist, prev) {
			return fmt.Sprintf("revision %d, the target of a rollback from revision %d, is no longer stored", prev, newest.Revision)
		}
		return ""
	}
	if newest.Status == helmrelease.StatusUninstalled {
		return fmt.Sprintf("revision %d is uninstalled and its history kept (helm uninstall --keep-history): no revision is deployed, and `helm upgrade` without --install fails with \"has no deployed releases\"", newest.Revision)
	}
	if newest.Status == helmrelease.StatusFailed && onceDeployedBefore(hist) != nil {
		// A superseded revision was deployed once: `helm rollback <release> <rev>` returns to it
		// (a failed upgrade whose post-upgrade hook failed leaves the previous one superseded),
		// and Helm upgrades from a failed newest revision.
		return ""
	}
	switch newest.Status {
	case helmrelease.StatusUninstalling:
		return fmt.Sprintf("revision %d has been uninstalling since %s, an uninstall that never finished (a pre-delete hook that fails leaves a release so), and no revision is deployed: upgrades fail with \"has no deployed releases\"",
			newest.Revision, timeOrDash(newest.Since()))
	case helmrelease.StatusFailed:
		return fmt.Sprintf("revision %d failed and no revision is or was deployed", newest.Revision)
	case helmrelease.StatusDeployed:
		return ""
	}
	if newest.IsPending() {
		return "no revision is deployed"
	}
	return fmt.Sprintf("the newest revision %d is %s and no revision is deployed (the deployed revision's record is gone)", newest.Revision, orDash(newest.Status))
}

// fleetDeployer is a Fleet BundleDeployment that deploys a release: its bundle, the bundle's
// workspace and its correlation key.
type fleetDeployer struct{ bundle, fleetNamespace, key string }

// fleetDeployersOf lists the Fleet BundleDeployments targeting cluster c that deploy a release
// of this name (the bundle's helm.releaseName, else the bundle's name). A release uninstalled
// with --keep-history is then one Fleet keeps trying to upgrade, not one removed on purpose.
func fleetDeployersOf(s *snapshot.Snapshot, c *snapshot.Cluster, release string) []fleetDeployer {
	var out []fleetDeployer
	for _, m := range s.Management() {
		ix := newFleetIndex(m)
		for _, bd := range m.BundleDeployments {
			fc := ix.forBD(m, bd)
			if fc == nil || s.ClusterForFleet(fc.Namespace+"/"+fc.Name) != c {
				continue
			}
			bundle := fleet.BundleName(bd)
			if name, _ := releaseOf(s, bd, bundle); name == release {
				out = append(out, fleetDeployer{bundle, bd.Labels.Get(fleet.LabelBundleNamespace), BundleKey(fc.Namespace+"/"+fc.Name, bundle)})
			}
		}
	}
	return out
}

// uninstalledFinding ties an uninstalled release to the bundles that deploy it, or says it
// was removed on purpose (nil). A resync cannot help it — every retry fails the same way —
// so that rung is dropped; `helm rollback` to a kept revision or a fresh install can.
func uninstalledFinding(ctx *Context, c *snapshot.Cluster, g finding.Finding, release string) *finding.Finding {
	deployers := fleetDeployersOf(ctx.Snap, c, release)
	if len(deployers) == 0 {
		return nil
	}
	for _, d := range deployers {
		g.Keys = append(g.Keys, d.key)
	}
	g.Vars["bundle"], g.Vars["fleet-namespace"] = deployers[0].bundle, deployers[0].fleetNamespace
	var steps []finding.Step
	for _, st := range g.Remediation {
		if st.Rung != "resync" {
			steps = append(steps, st)
		}
	}
	g.Remediation = steps
	return &g
}

// onceDeployedBefore is the newest revision before the newest that was deployed once
// (superseded), or nil.
func onceDeployedBefore(hist []*helmrelease.Release) *helmrelease.Release {
	return lastWithStatus(hist[:len(hist)-1], helmrelease.StatusSuperseded)
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// chartSignature is the cluster-independent part of a release's chart for fleet-wide
// grouping. Fleet renders a bundle without a chart of its own into a chart named after the
// BundleDeployment with version v0.0.0+<manifest ID> (fleet helmdeployer/render); for the
// agent that name carries the cluster (fleet-agent-<cluster>) and the manifest ID differs
// with per-cluster agent settings (tolerations, resources, env), so the agent's own release
// is reduced to "fleet-agent". Other charts keep name and version: the same bundle content
// has the same manifest ID on every cluster.
func chartSignature(r *helmrelease.Release) string {
	if fleet.IsAgentBundle(r.Chart) || fleet.IsAgentBundle(r.Name) {
		return "fleet-agent"
	}
	return r.Chart + "|" + r.ChartVersion
}

func hasRevision(hist []*helmrelease.Release, rev int) bool {
	for _, r := range hist {
		if r.Revision == rev {
			return true
		}
	}
	return false
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// releaseHistories groups a cluster's release revisions by namespace/name, oldest first.
func releaseHistories(c *snapshot.Cluster) [][]*helmrelease.Release {
	by := map[string][]*helmrelease.Release{}
	var keys []string
	for _, r := range c.HelmReleases {
		k := r.Namespace + "/" + r.Name
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	sort.Strings(keys)
	out := make([][]*helmrelease.Release, 0, len(keys))
	for _, k := range keys {
		h := by[k]
		sort.SliceStable(h, func(i, j int) bool { return h[i].Revision < h[j].Revision })
		out = append(out, h)
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

// releaseKeys ties a release to its Fleet BundleDeployment and, for an agent's own release, to
// the agent. Fleet names a release after its bundle, and the agent's bundle after the Fleet
// Cluster (fleet-agent-<cluster>), so the agent is found by name even when the bundle's
// downstream cluster could not be matched to its Fleet Cluster.
func releaseKeys(s *snapshot.Snapshot, c *snapshot.Cluster, r *helmrelease.Release) []string {
	keys := []string{"helm:" + c.Name + "/" + r.Namespace + "/" + r.Name, bundleKeyFor(c, r.Name)}
	if !fleet.IsAgentNamespace(r.Namespace) || !strings.HasPrefix(r.Name, "fleet-agent") {
		return keys
	}
	keys = append(keys, agentKeyFor(c))
	name := strings.TrimPrefix(r.Name, fleet.AgentBundlePrefix)
	for _, m := range s.Management() {
		for _, fc := range m.FleetClusters {
			if fc.Name == name {
				ref := fc.Namespace + "/" + fc.Name
				keys = append(keys, AgentKey(ref), BundleKey(ref, r.Name))
			}
		}
	}
	return keys
}

// agentFleetCluster is the Fleet Cluster whose agent a release is: the one matched to the
// release's cluster, or the one the release is named after (fleet-agent-<cluster>).
func agentFleetCluster(s *snapshot.Snapshot, c *snapshot.Cluster, r *helmrelease.Release) *fleetv1.Cluster {
	if !fleet.IsAgentNamespace(r.Namespace) || !strings.HasPrefix(r.Name, fleet.AgentBundlePrefix) {
		return nil
	}
	name := strings.TrimPrefix(r.Name, fleet.AgentBundlePrefix)
	for _, m := range s.Management() {
		for _, fc := range m.FleetClusters {
			if fc.Name == name || fc.Namespace+"/"+fc.Name == c.FleetCluster {
				return fc
			}
		}
	}
	return nil
}

func historyLine(hist []*helmrelease.Release) string {
	parts := make([]string, 0, len(hist))
	for _, r := range hist {
		parts = append(parts, fmt.Sprintf("v%d %s", r.Revision, r.Status))
	}
	return strings.Join(parts, ", ")
}

func releaseEvidence(c *snapshot.Cluster, hist []*helmrelease.Release) []finding.Evidence {
	var out []finding.Evidence
	for i := len(hist) - 1; i >= 0 && len(out) < 4; i-- {
		r := hist[i]
		out = append(out, finding.Evidence{Source: sourceOf(c, ref("v1", "Secret", r.Namespace, r.SecretName)), Text: revisionText(r)})
	}
	return out
}

// revisionText is one revision as evidence: status, chart, time and Helm's description.
func revisionText(r *helmrelease.Release) string {
	chart := r.Chart
	if r.ChartVersion != "" {
		chart += "-" + r.ChartVersion
	}
	text := fmt.Sprintf("revision %d: status=%s chart=%s", r.Revision, r.Status, orDash(chart))
	if r.AppVersion != "" {
		text += " appVersion=" + r.AppVersion
	}
	if !r.Since().IsZero() {
		text += " updated=" + r.Since().UTC().Format("2006-01-02T15:04:05Z")
	}
	if r.Description != "" {
		text += fmt.Sprintf(" description=%q", r.Description)
	}
	if r.PayloadError != nil {
		text += " (record unreadable; from Secret labels)"
	}
	return text
}
