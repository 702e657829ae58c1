package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/removedapi"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Fleet labels a GitRepo's Bundles with (rancher/fleet pkg/apis/fleet.cattle.io/v1alpha1).
const labelRepoName = "fleet.cattle.io/repo-name"

// apiUse is one document that uses a removed or deprecated built-in API: where it is and
// what removes it (its replacement resolved for the cluster version it is judged at).
type apiUse struct {
	doc        manifest.Doc
	removal    removedapi.Removal
	rev        *helmrelease.Release // the Helm revision holding it; nil for a bundle
	deprecated bool                 // served but deprecated at the target, not removed
}

// apiUses sorts a release's or bundle's documents by what the cluster's versions make of them.
type apiUses struct {
	now, target, deprecated []apiUse
}

// removedUses sorts documents into the uses the cluster no longer serves (now), those its next
// upgrade removes (target) and those the target still serves but deprecates, by the versions v
// says the cluster runs and will run.
func removedUses(v kubeVersions, docs []manifest.Doc, rev *helmrelease.Release) apiUses {
	var u apiUses
	for _, d := range docs {
		if r, ok := removedapi.Lookup(d.APIVersion, d.Kind); ok {
			switch {
			case v.Current != "" && r.RemovedAt(v.CurrentMinor):
				u.now = append(u.now, apiUse{doc: d, removal: r.At(v.CurrentMinor), rev: rev})
				continue
			case v.Target != "" && r.RemovedAt(v.TargetMinor):
				u.target = append(u.target, apiUse{doc: d, removal: r.At(v.TargetMinor), rev: rev})
				continue
			}
		}
		if v.Target == "" {
			continue
		}
		if r, ok := removedapi.Deprecated(d.APIVersion, d.Kind, v.TargetMinor); ok {
			u.deprecated = append(u.deprecated, apiUse{doc: d, removal: r, rev: rev, deprecated: true})
		}
	}
	return u
}

func (u *apiUses) add(o apiUses) {
	u.now, u.target, u.deprecated = append(u.now, o.now...), append(u.target, o.target...), append(u.deprecated, o.deprecated...)
}

// apiGroup is the uses one finding ID reports, and the minor they are judged at.
type apiGroup struct {
	id    string
	uses  []apiUse
	minor int
}

func (u apiUses) groups(v kubeVersions) []apiGroup {
	return []apiGroup{
		{"api/removed", u.now, v.CurrentMinor},
		{"api/removed-in-target", u.target, v.TargetMinor},
		{"api/deprecated-in-target", u.deprecated, v.TargetMinor},
	}
}

// groupKey keeps the three IDs of one release or bundle apart: each is its own finding.
func groupKey(id, key string) string {
	switch id {
	case "api/removed-in-target":
		return "target|" + key
	case "api/deprecated-in-target":
		return "deprecated|" + key
	}
	return key
}

// useText says what one use is: "revision 4 (deployed) app/templates/fs.yaml: FlowSchema
// app-fs uses flowcontrol.apiserver.k8s.io/v1beta3, removed in Kubernetes 1.32; replacement
// flowcontrol.apiserver.k8s.io/v1", or "… Endpoints default/web uses v1, deprecated in
// Kubernetes 1.33 (no removal planned); replacement discovery.k8s.io/v1 EndpointSlice".
func useText(u apiUse) string {
	var b strings.Builder
	if u.rev != nil {
		fmt.Fprintf(&b, "revision %d (%s) ", u.rev.Revision, u.rev.Status)
	}
	if u.doc.Source != "" {
		b.WriteString(u.doc.Source + ": ")
	}
	name := u.doc.Name
	if u.doc.Namespace != "" && name != "" {
		name = u.doc.Namespace + "/" + name
	}
	if name == "" {
		name = "(templated name)"
	}
	if u.deprecated {
		fmt.Fprintf(&b, "%s %s uses %s, deprecated in Kubernetes %s (%s)", u.doc.Kind, name, u.removal.APIVersion(), u.removal.DeprecatedIn, u.removal.RemovalText())
	} else {
		fmt.Fprintf(&b, "%s %s uses %s, %s", u.doc.Kind, name, u.removal.APIVersion(), u.removal.RemovalText())
	}
	if rp := u.removal.ReplacementText(); rp != "" {
		fmt.Fprintf(&b, "; replacement %s", rp)
	} else {
		b.WriteString("; no replacement")
	}
	if u.removal.Review != "" {
		b.WriteString(" (review by hand: " + u.removal.Review + ")")
	}
	return b.String()
}

// usesSummary names the removed kinds: "FlowSchema flowcontrol.apiserver.k8s.io/v1beta3 (→
// flowcontrol.apiserver.k8s.io/v1)".
func usesSummary(uses []apiUse) string {
	seen := map[string]bool{}
	var parts []string
	for _, u := range uses {
		k := u.doc.Kind + " " + u.removal.APIVersion()
		if seen[k] {
			continue
		}
		seen[k] = true
		var note []string
		if u.deprecated {
			note = append(note, "deprecated in "+u.removal.DeprecatedIn, u.removal.RemovalText())
		}
		if rp := u.removal.ReplacementText(); rp != "" {
			note = append(note, "→ "+rp)
		} else {
			note = append(note, "no replacement")
		}
		parts = append(parts, k+" ("+strings.Join(note, "; ")+")")
	}
	return strings.Join(parts, ", ")
}

// firstUse is the use the fix aims at first: the newest revision's, else the first.
func firstUse(uses []apiUse) apiUse {
	best := uses[0]
	for _, u := range uses[1:] {
		if u.rev != nil && best.rev != nil && u.rev.Revision > best.rev.Revision {
			best = u
		}
	}
	return best
}

func revisionsOf(uses []apiUse) string {
	seen := map[int]bool{}
	var revs []int
	for _, u := range uses {
		if u.rev != nil && !seen[u.rev.Revision] {
			seen[u.rev.Revision] = true
			revs = append(revs, u.rev.Revision)
		}
	}
	sort.Ints(revs)
	s := make([]string, len(revs))
	for i, r := range revs {
		s[i] = strconv.Itoa(r)
	}
	if len(s) == 1 {
		return "revision " + s[0]
	}
	return "revisions " + strings.Join(s, ", ")
}

// releaseAPIFindings judges every revision of every Helm release of c by its manifest's
// documents: api/removed for APIs the cluster already lost (the release cannot be upgraded or
// rolled back now), api/removed-in-target for those its next upgrade removes,
// api/deprecated-in-target for those the target serves but deprecates. add merges with the
// findings api/removed builds from Helm's own error messages (same key).
func releaseAPIFindings(ctx *Context, tg *targets, c *snapshot.Cluster, fs *apiFindings) {
	v := tg.versionsOf(c)
	if v.Current == "" && v.Target == "" {
		return
	}
	for _, hist := range releaseHistories(c) {
		var uses apiUses
		// Helm builds the last deployed revision's manifest before an upgrade or rollback, and
		// the pending and failed ones after it are what Fleet's retries left: those count. An
		// older revision matters only to a rollback to it, and stays in history after the fix
		// (helm-mapkubeapis rewrites the latest revision only), so it is not judged.
		from := 0
		for i, r := range hist {
			if r.Status == helmrelease.StatusDeployed {
				from = i
			}
		}
		for _, r := range hist[from:] {
			uses.add(removedUses(v, r.Docs, r))
		}
		for _, g := range uses.groups(v) {
			if len(g.uses) > 0 {
				releaseAPIFinding(ctx, c, v, hist[len(hist)-1], g, fs)
			}
		}
	}
}

// releaseAPIFinding adds one api/ finding of a release, on its newest revision's Secret.
func releaseAPIFinding(ctx *Context, c *snapshot.Cluster, v kubeVersions, newest *helmrelease.Release, g apiGroup, fs *apiFindings) {
	first := firstUse(g.uses)
	key := groupKey(g.id, bundleKeyFor(c, newest.Name))
	vars := map[string]string{
		"namespace": newest.Namespace, "release": newest.Name, "revision": strconv.Itoa(newest.Revision),
		"group-version": first.removal.APIVersion(), "kind": first.doc.Kind, "replacement": first.removal.ReplacementAPIVersion(),
		"kubernetes-version": minorName(g.minor), "review": first.removal.Review,
		"uses": strconv.Itoa(len(g.uses)),
	}
	mk := func() finding.Finding {
		what := fmt.Sprintf("Helm release %s/%s on cluster %s", newest.Namespace, newest.Name, c.Name)
		f := ctx.New(g.id, c, ref("v1", "Secret", newest.Namespace, newest.SecretName), releaseAPISummary(g, what, v))
		f.Keys = releaseKeys(ctx.Snap, c, newest)
		if g.id == "api/deprecated-in-target" {
			// Its own incident: a deprecation causes nothing the release's other findings show.
			f.Keys = []string{"deprecated:" + bundleKeyFor(c, newest.Name)}
		}
		f.Since = timePtr(newest.Since())
		f.Signature = g.id + "|" + genericBundle(newest.Name) + "|" + first.doc.Kind + "|" + first.removal.APIVersion()
		f.Vars = vars
		fitSteps(&f, func(cmd string) bool {
			return !strings.Contains(cmd, "gitrepos.fleet.cattle.io") && !strings.Contains(cmd, "get bundles.fleet.cattle.io")
		}, "")
		return f
	}
	for _, u := range g.uses {
		fs.add(key, mk, ev(sourceOf(c, ref("v1", "Secret", u.rev.Namespace, u.rev.SecretName)), "%s", useText(u)))
	}
	// A finding built from Helm's error messages first gets the manifest's facts too.
	fs.add(key, mk, finding.Evidence{})
	fs.setVars(key, vars)
}

func releaseAPISummary(g apiGroup, what string, v kubeVersions) string {
	switch g.id {
	case "api/removed":
		return fmt.Sprintf("%s (%s) uses %s, which the cluster (%s) no longer serves: its upgrades and rollbacks fail until the stored manifest uses a served version",
			what, revisionsOf(g.uses), usesSummary(g.uses), v.Current)
	case "api/removed-in-target":
		return fmt.Sprintf("%s (%s) uses %s, which Kubernetes %s no longer serves: the cluster runs %s and %s is %s; after that upgrade the release can neither be upgraded nor rolled back until the stored manifest uses a served version",
			what, revisionsOf(g.uses), usesSummary(g.uses), minorName(g.minor), v.Current, v.TargetFrom, v.Target)
	}
	return fmt.Sprintf("%s (%s) uses %s, which Kubernetes %s still serves but deprecates: %s is %s; move the chart to the replacement before the release that removes it",
		what, revisionsOf(g.uses), usesSummary(g.uses), minorName(g.minor), v.TargetFrom, v.Target)
}

// bundleDocs returns the Bundle a BundleDeployment deploys and the identities of its
// documents: the Bundle's own resources, else the Content the BundleDeployment points at.
func bundleDocs(m *snapshot.Cluster, bd *snapshot.BundleDeployment) (*fleetv1.Bundle, []manifest.Doc) {
	b := bundleOf(m, bd)
	if b == nil {
		return nil, nil
	}
	docs := m.BundleDocs[b.Namespace+"/"+b.Name]
	if len(docs) == 0 {
		id, _, _ := strings.Cut(bd.Spec.DeploymentID, ":")
		docs = m.ContentDocs[id]
	}
	return b, docs
}

// bundleAPIFindings judges each Fleet Bundle's documents (its resources, else the Content its
// BundleDeployments point at) against every downstream cluster it is deployed to: the file to
// change is in the GitRepo the bundle comes from, named by the resource's path.
func bundleAPIFindings(ctx *Context, tg *targets, m *snapshot.Cluster, fs *apiFindings) {
	ix := newFleetIndex(m)
	for _, bd := range m.BundleDeployments {
		b, docs := bundleDocs(m, bd)
		if b == nil || !anyListed(docs) {
			continue
		}
		target, fleetRef := bdTarget(ctx, ix, m, bd)
		dc := ctx.Snap.ClusterForFleet(fleetRef)
		if dc == nil {
			dc = ctx.Snap.Cluster(target)
		}
		if dc == nil {
			continue
		}
		v := tg.versionsOf(dc)
		for _, g := range removedUses(v, docs, nil).groups(v) {
			if len(g.uses) > 0 {
				bundleAPIFinding(ctx, m, dc, v, b, fleetRef, g, fs)
			}
		}
	}
}

// bundleAPIFinding adds one api/ finding of a bundle on one downstream cluster. It is its own
// finding, apart from the release's (same bundle key): the release is fixed in its storage,
// the bundle in Git.
func bundleAPIFinding(ctx *Context, m, dc *snapshot.Cluster, v kubeVersions, b *fleetv1.Bundle, fleetRef string, g apiGroup, fs *apiFindings) {
	first := g.uses[0]
	repo := b.Labels[labelRepoName]
	key := groupKey(g.id, "docs|"+BundleKey(fleetRef, b.Name))
	vars := map[string]string{
		"bundle": b.Name, "fleet-namespace": b.Namespace, "repo": repo, "path": first.doc.Source,
		"group-version": first.removal.APIVersion(), "kind": first.doc.Kind, "replacement": first.removal.ReplacementAPIVersion(),
		"kubernetes-version": minorName(g.minor), "uses": strconv.Itoa(len(g.uses)),
	}
	if repo == "" {
		vars[noGitRepo] = b.Name
	}
	mk := func() finding.Finding {
		where := "bundle " + b.Namespace + "/" + b.Name
		if repo != "" {
			where += " (GitRepo " + repo + ")"
		}
		f := ctx.New(g.id, m, bundleRef(b.Namespace, b.Name), bundleAPISummary(g, where, dc.Name, first.doc.Source, v))
		f.Affects = dc.Name
		// An incident of its own, not a symptom of the release's: the release is fixed in its
		// storage (unstick fix), the bundle in Git (by hand).
		f.Keys = []string{"git:" + BundleKey(fleetRef, b.Name)}
		if g.id == "api/deprecated-in-target" {
			f.Keys = []string{"deprecated:git:" + BundleKey(fleetRef, b.Name)}
		}
		f.Signature = g.id + "|" + genericBundle(b.Name) + "|" + first.doc.Kind + "|" + first.removal.APIVersion()
		f.Vars = vars
		// A bundle is fixed in Git: the release rewrite is not for it.
		fitSteps(&f, func(cmd string) bool { return !strings.HasPrefix(cmd, "helm ") }, "repair")
		return f
	}
	for _, u := range g.uses {
		fs.add(key, mk, ev(sourceOf(m, bundleRef(b.Namespace, b.Name)), "%s", useText(u)))
	}
	fs.add(key, mk, finding.Evidence{})
	fs.setVars(key, vars)
}

func bundleAPISummary(g apiGroup, where, cluster, path string, v kubeVersions) string {
	switch g.id {
	case "api/removed":
		return fmt.Sprintf("%s uses %s, which cluster %s (%s) no longer serves: change %s in the repository",
			where, usesSummary(g.uses), cluster, v.Current, path)
	case "api/removed-in-target":
		return fmt.Sprintf("%s uses %s, which Kubernetes %s no longer serves: cluster %s runs %s and %s is %s; change %s in the repository before that upgrade",
			where, usesSummary(g.uses), minorName(g.minor), cluster, v.Current, v.TargetFrom, v.Target, path)
	}
	return fmt.Sprintf("%s uses %s, which Kubernetes %s still serves but deprecates: cluster %s runs %s and %s is %s; change %s in the repository before the release that removes it",
		where, usesSummary(g.uses), minorName(g.minor), cluster, v.Current, v.TargetFrom, v.Target, path)
}

func bundleRef(ns, name string) finding.ObjectRef {
	return ref("fleet.cattle.io/v1alpha1", "Bundle", ns, name)
}

// fitSteps keeps the ladder's commands that fit this finding (the catalogue's ladder serves
// Helm releases and Fleet bundles alike), and drops the rung named drop.
func fitSteps(f *finding.Finding, keep func(cmd string) bool, drop string) {
	steps := f.Remediation[:0:0]
	for _, st := range f.Remediation {
		if st.Rung == drop {
			continue
		}
		var cmds []string
		for _, c := range st.Commands {
			if keep(c) {
				cmds = append(cmds, c)
			}
		}
		st.Commands = cmds
		steps = append(steps, st)
	}
	f.Remediation = steps
}

// anyListed reports whether some document uses an API some Kubernetes version deprecated or
// removed: most bundles use none, and need no cluster's versions read.
func anyListed(docs []manifest.Doc) bool {
	for _, d := range docs {
		if removedapi.Listed(d.APIVersion, d.Kind) {
			return true
		}
	}
	return false
}
