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

// apiUse is one document that uses a removed built-in API: where it is and what removes it.
type apiUse struct {
	doc     manifest.Doc
	removal removedapi.Removal
	rev     *helmrelease.Release // the Helm revision holding it; nil for a bundle
}

// removedUses sorts documents into the uses the cluster no longer serves (now) and those its
// next upgrade removes (target), by the versions v says the cluster runs and will run.
func removedUses(v kubeVersions, docs []manifest.Doc, rev *helmrelease.Release) (now, target []apiUse) {
	for _, d := range docs {
		r, ok := removedapi.Lookup(d.APIVersion, d.Kind)
		if !ok {
			continue
		}
		switch {
		case v.Current != "" && r.RemovedAt(v.CurrentMinor):
			now = append(now, apiUse{d, r, rev})
		case v.Target != "" && r.RemovedAt(v.TargetMinor):
			target = append(target, apiUse{d, r, rev})
		}
	}
	return now, target
}

// useText says what one use is: "revision 4 (deployed) app/templates/fs.yaml: FlowSchema
// app-fs uses flowcontrol.apiserver.k8s.io/v1beta3, removed in Kubernetes 1.32; replacement
// flowcontrol.apiserver.k8s.io/v1".
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
	fmt.Fprintf(&b, "%s %s uses %s, removed in Kubernetes %s", u.doc.Kind, name, u.removal.APIVersion(), u.removal.RemovedIn)
	if rp := u.removal.ReplacementAPIVersion(); rp != "" {
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
		if rp := u.removal.ReplacementAPIVersion(); rp != "" {
			k += " (→ " + rp + ")"
		} else {
			k += " (no replacement)"
		}
		parts = append(parts, k)
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
// rolled back now), api/removed-in-target for those its next upgrade removes. add merges with
// the findings api/removed builds from Helm's own error messages (same key).
func releaseAPIFindings(ctx *Context, tg *targets, c *snapshot.Cluster, fs *apiFindings) {
	v := tg.versionsOf(c)
	if v.Current == "" && v.Target == "" {
		return
	}
	for _, hist := range releaseHistories(c) {
		var now, target []apiUse
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
			n, t := removedUses(v, r.Docs, r)
			now, target = append(now, n...), append(target, t...)
		}
		newest := hist[len(hist)-1]
		for _, g := range []struct {
			id   string
			uses []apiUse
		}{{"api/removed", now}, {"api/removed-in-target", target}} {
			if len(g.uses) == 0 {
				continue
			}
			id, uses := g.id, g.uses
			first := firstUse(uses)
			minor := v.CurrentMinor
			if id == "api/removed-in-target" {
				minor = v.TargetMinor
			}
			key := bundleKeyFor(c, newest.Name)
			if id == "api/removed-in-target" {
				key = "target|" + key
			}
			what := fmt.Sprintf("Helm release %s/%s on cluster %s", newest.Namespace, newest.Name, c.Name)
			secret := ref("v1", "Secret", newest.Namespace, newest.SecretName)
			vars := map[string]string{
				"namespace": newest.Namespace, "release": newest.Name, "revision": strconv.Itoa(newest.Revision),
				"group-version": first.removal.APIVersion(), "kind": first.doc.Kind, "replacement": first.removal.ReplacementAPIVersion(),
				"kubernetes-version": minorName(minor), "review": first.removal.Review,
				"uses": strconv.Itoa(len(uses)),
			}
			mk := func() finding.Finding {
				var f finding.Finding
				if id == "api/removed" {
					f = ctx.New(id, c, secret, fmt.Sprintf("%s (%s) uses %s, which the cluster (%s) no longer serves: its upgrades and rollbacks fail until the stored manifest uses a served version",
						what, revisionsOf(uses), usesSummary(uses), v.Current))
				} else {
					f = ctx.New(id, c, secret, fmt.Sprintf("%s (%s) uses %s, which Kubernetes %s no longer serves: the cluster runs %s and %s is %s; after that upgrade the release can neither be upgraded nor rolled back until the stored manifest uses a served version",
						what, revisionsOf(uses), usesSummary(uses), minorName(minor), v.Current, v.TargetFrom, v.Target))
				}
				f.Keys = releaseKeys(ctx.Snap, c, newest)
				f.Since = timePtr(newest.Since())
				f.Signature = id + "|" + genericBundle(newest.Name) + "|" + first.doc.Kind + "|" + first.removal.APIVersion()
				f.Vars = vars
				fitSteps(&f, func(cmd string) bool {
					return !strings.Contains(cmd, "gitrepos.fleet.cattle.io") && !strings.Contains(cmd, "get bundles.fleet.cattle.io")
				}, "")
				return f
			}
			for _, u := range uses {
				fs.add(key, mk, ev(sourceOf(c, ref("v1", "Secret", u.rev.Namespace, u.rev.SecretName)), "%s", useText(u)))
			}
			// A finding built from Helm's error messages first gets the manifest's facts too.
			fs.add(key, mk, finding.Evidence{})
			fs.setVars(key, vars)
		}
	}
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
		if b == nil {
			continue
		}
		if !anyRemoved(docs) {
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
		now, later := removedUses(v, docs, nil)
		repo := b.Labels[labelRepoName]
		for _, g := range []struct {
			id   string
			uses []apiUse
		}{{"api/removed", now}, {"api/removed-in-target", later}} {
			if len(g.uses) == 0 {
				continue
			}
			id, uses := g.id, g.uses
			first := uses[0]
			// Its own finding, apart from the release's (same bundle key): the release is fixed
			// in its storage, the bundle in Git.
			key := "docs|" + BundleKey(fleetRef, b.Name)
			if id == "api/removed-in-target" {
				key = "target|" + key
			}
			where := "bundle " + b.Namespace + "/" + b.Name
			if repo != "" {
				where += " (GitRepo " + repo + ")"
			}
			vars := map[string]string{
				"bundle": b.Name, "fleet-namespace": b.Namespace, "repo": repo, "path": first.doc.Source,
				"group-version": first.removal.APIVersion(), "kind": first.doc.Kind, "replacement": first.removal.ReplacementAPIVersion(),
				"kubernetes-version": minorName(v.CurrentMinor), "uses": strconv.Itoa(len(uses)),
			}
			if id == "api/removed-in-target" {
				vars["kubernetes-version"] = minorName(v.TargetMinor)
			}
			if repo == "" {
				vars[noGitRepo] = b.Name
			}
			mk := func() finding.Finding {
				var f finding.Finding
				if id == "api/removed" {
					f = ctx.New(id, m, bundleRef(b.Namespace, b.Name), fmt.Sprintf("%s uses %s, which cluster %s (%s) no longer serves: change %s in the repository",
						where, usesSummary(uses), dc.Name, v.Current, first.doc.Source))
				} else {
					f = ctx.New(id, m, bundleRef(b.Namespace, b.Name), fmt.Sprintf("%s uses %s, which Kubernetes %s no longer serves: cluster %s runs %s and %s is %s; change %s in the repository before that upgrade",
						where, usesSummary(uses), minorName(v.TargetMinor), dc.Name, v.Current, v.TargetFrom, v.Target, first.doc.Source))
				}
				f.Affects = dc.Name
				// An incident of its own, not a symptom of the release's: the release is fixed in
				// its storage (unstick fix), the bundle in Git (by hand).
				f.Keys = []string{"git:" + BundleKey(fleetRef, b.Name)}
				f.Signature = id + "|" + genericBundle(b.Name) + "|" + first.doc.Kind + "|" + first.removal.APIVersion()
				f.Vars = vars
				// A bundle is fixed in Git: the release rewrite is not for it.
				fitSteps(&f, func(cmd string) bool { return !strings.HasPrefix(cmd, "helm ") }, "repair")
				return f
			}
			for _, u := range uses {
				fs.add(key, mk, ev(sourceOf(m, bundleRef(b.Namespace, b.Name)), "%s", useText(u)))
			}
			fs.add(key, mk, finding.Evidence{})
			fs.setVars(key, vars)
		}
	}
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

// anyRemoved reports whether some document uses an API some Kubernetes version removed: most
// bundles use none, and need no cluster's versions read.
func anyRemoved(docs []manifest.Doc) bool {
	for _, d := range docs {
		if _, ok := removedapi.Lookup(d.APIVersion, d.Kind); ok {
			return true
		}
	}
	return false
}
