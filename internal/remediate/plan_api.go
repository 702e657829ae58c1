package remediate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/removedapi"
	"github.com/unstick-dev/unstick/internal/shellcmd"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// Command signatures of the api/ and crd/ ladders.
var (
	sigRewrite = contains("mapkubeapis")
	sigMigrate = func(c string) bool {
		return strings.Contains(c, "replace -f -") || strings.Contains(c, "StorageVersionMigration")
	}
	sigTrim = contains("storedVersions")
)

// apiRemoved plans a Helm release whose stored manifest uses an API version the cluster (or
// the Kubernetes version its upgrade installs) does not serve: rewrite the manifest of the
// newest revision, and of the last deployed one when that is another, in place. A Bundle
// gets no step: its source is in Git, which unstick never edits; the plan names the file.
func (pl *planner) apiRemoved(inc finding.Incident) []Attempt {
	root := inc.RootCause
	v := root.Vars
	if root.Object.Kind != "Secret" || root.Object.APIVersion != "v1" {
		pl.hint(inc, bundleHint(pl.snap, root))
		return nil
	}
	c := pl.snap.Cluster(root.Cluster)
	if c == nil {
		return nil
	}
	ns, name := root.Object.Namespace, v["release"]
	if v["namespace"] != "" {
		ns = v["namespace"]
	}
	if name == "" {
		for _, r := range c.HelmReleases {
			if r.Namespace == ns && r.SecretName == root.Object.Name {
				name = r.Name
			}
		}
	}
	hist := c.Releases(ns, name)
	if len(hist) == 0 {
		return nil
	}
	// The API the finding names: refused here when the table says the replacement needs a
	// hand (the executor refuses again for every document of the live manifest).
	var apis []string
	if gv, kind := v["group-version"], v["kind"]; gv != "" && kind != "" {
		if rm, ok := removedapi.Lookup(gv, kind); ok {
			switch {
			case rm.ReplacementAPIVersion() == "":
				pl.hint(inc, fmt.Sprintf("%s %s has no replacement API (removed in Kubernetes %s): the release's chart must stop creating it; rewriting the stored manifest cannot help. Follow `unstick explain %s`.", gv, kind, rm.RemovedIn, root.ID))
				return nil
			case rm.NeedsReview(nil): // the executor judges each document's content again
				pl.hint(inc, fmt.Sprintf("%s %s → %s needs a manual review, not an apiVersion rewrite: %s. Follow `unstick explain %s`.", gv, kind, rm.ReplacementAPIVersion(), rm.Review, root.ID))
				return nil
			}
			apis = append(apis, fmt.Sprintf("%s %s -> %s", gv, kind, rm.ReplacementAPIVersion()))
		}
	} else if gv != "" && v["replacement"] != "" {
		apis = append(apis, fmt.Sprintf("%s %s -> %s", gv, kind, v["replacement"]))
	}
	r, risk, ok := rung(root, RungRepair, sigRewrite)
	if !ok {
		return nil
	}
	latest := hist[len(hist)-1]
	revs := []*helmrelease.Release{latest}
	if d := lastWithStatus(hist[:len(hist)-1], "deployed"); d != nil && latest.Status != "deployed" {
		revs = append(revs, d)
	}
	rw := &APIRewrite{Release: name, Namespace: ns, KubernetesVersion: v["kubernetes-version"], APIs: apis}
	var touches []Object
	var rvs, revText []string
	for _, rv := range revs {
		rw.Revisions = append(rw.Revisions, rv.Revision)
		o := pl.releaseSecret(c, rv)
		touches = append(touches, o)
		rvs = append(rvs, fmt.Sprintf("%s at resourceVersion %s", o.Name, orDash(o.ResourceVersion)))
		revText = append(revText, fmt.Sprintf("%d (%s)", rv.Revision, rv.Status))
	}
	against := "the cluster's Kubernetes version (read from the API server when the step runs)"
	if rw.KubernetesVersion != "" {
		against = "Kubernetes " + rw.KubernetesVersion
	}
	what := "every removed apiVersion"
	if len(apis) > 0 {
		what = strings.Join(apis, ", ") + " and any other removed apiVersion"
	}
	why := pl.reasonsAbout(inc, func(f finding.Finding) bool { return true })
	s := Step{
		ID:      stepID(HelmRewriteAPIs, c.Name, ns, name, revList(rw.Revisions), rw.KubernetesVersion),
		Action:  HelmRewriteAPIs,
		Rung:    RungRepair,
		Risk:    risk,
		Cluster: c.Name,
		Target:  touches[0],
		Touches: touches,
		Change: fmt.Sprintf("rewrite the stored manifest of Helm release %s/%s revision %s in place: %s not served by %s becomes its replacement (only each document's apiVersion line changes; the record is written back with Helm's storage driver)",
			ns, name, strings.Join(revText, " and "), what, against),
		Why:       why,
		Rationale: r.Action,
		Precondition: fmt.Sprintf("the release Secrets are unchanged since planning (%s); no rewritten document's API is one whose replacement needs a manual review or has none; every rewritten document passes a server-side dry-run on the cluster",
			strings.Join(rvs, ", ")),
		Verify: "Helm's storage reads each rewritten revision back, with its status unchanged and no apiVersion in its manifest that " + against + " does not serve",
		Commands: []string{
			shellcmd.Sprintf("%s mapkubeapis %s --namespace %s --dry-run", helmAt(c), releaseArg(name), namespaceArg(ns)),
			shellcmd.Sprintf("%s mapkubeapis %s --namespace %s", helmAt(c), releaseArg(name), namespaceArg(ns)),
		},
		Notes: []string{
			"The backup keeps each release Secret exactly, payload included (0600), so `unstick restore` puts the old record back.",
			"Unlike helm-mapkubeapis, no new revision is written and no document is dropped: the record keeps its revision and status, and a document whose API has no replacement refuses the step instead.",
			"The chart or Fleet bundle must also move to the served API, or its next upgrade renders the removed version again.",
		},
		Rewrite: rw,
	}
	return []Attempt{single(s)}
}

// crdStorage plans a CRD whose status.storedVersions holds more than its storage version:
// rewrite every object in the storage version (migrate), then drop the other versions from
// storedVersions (trim). The migration prepares the trim: only the two together let a chart
// stop serving the old version.
func (pl *planner) crdStorage(inc finding.Incident) []Attempt {
	root := inc.RootCause
	c := pl.snap.Cluster(root.Cluster)
	if c == nil {
		return nil
	}
	var crd *snapshot.CRD
	for _, x := range c.CRDs {
		if x.Name == root.Object.Name {
			crd = x
		}
	}
	if crd == nil {
		return nil
	}
	storage := ""
	for _, v := range crd.Versions {
		if v.Storage {
			storage = v.Name
		}
	}
	if storage == "" || len(crd.StoredVersions) == 0 || slices.Equal(crd.StoredVersions, []string{storage}) {
		return nil
	}
	if !slices.Contains(crd.StoredVersions, storage) {
		// The API server adds the storage version to storedVersions when it becomes the
		// storage version; without it the CRD is not in a state a migration can reason about.
		pl.hint(inc, fmt.Sprintf("CRD %s stores %s but its storage version %s is not in status.storedVersions: inspect it by hand", crd.Name, strings.Join(crd.StoredVersions, ", "), storage))
		return nil
	}
	sm := &StorageMigration{CRD: crd.Name, Group: crd.Group, Plural: crd.Plural, Kind: crd.Kind, StorageVersion: storage, StoredVersions: slices.Clone(crd.StoredVersions)}
	counted := ""
	if n, ok, _ := c.CRDObjectCount(crd.Name); ok {
		sm.Objects = &n
		counted = fmt.Sprintf(", %d when the cluster was read", n)
	}
	obj := Object{Cluster: c.Name, APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: crd.Name, UID: crd.UID, ResourceVersion: crd.ResourceVersion}
	why := pl.reasonsAbout(inc, func(f finding.Finding) bool { return true })
	res := crd.Plural + "." + crd.Group
	k := kubectl(c)
	var old []string
	for _, v := range crd.StoredVersions {
		if v != storage {
			old = append(old, v)
		}
	}
	var out []Attempt
	migrateID := stepID(MigrateStorage, c.Name, crd.Name, storage)
	if r, risk, ok := rung(root, RungRepair, sigMigrate); ok {
		s := Step{
			ID:       migrateID,
			Action:   MigrateStorage,
			Rung:     RungRepair,
			Risk:     risk,
			Cluster:  c.Name,
			Target:   obj,
			Evidence: []Object{obj},
			Creates:  []Object{{Cluster: c.Name, APIVersion: SVMAPIVersion, Kind: "StorageVersionMigration", Name: SVMName(crd.Name), Create: true}},
			Change: fmt.Sprintf("rewrite every %s object (%s%s) so the API server stores it as %s, not %s: StorageVersionMigration %s when the cluster serves the API and a controller acts on it (deleted again if none does), otherwise each object read in pages of 500 and written back unchanged under its resourceVersion",
				crd.Kind, res, counted, storage, strings.Join(old, ", "), SVMName(crd.Name)),
			Why:       why,
			Rationale: r.Action,
			Precondition: fmt.Sprintf("CRD %s unchanged since planning (resourceVersion %s), storage version still %s; each object is written back with the resourceVersion it was read at, and one someone else wrote meanwhile is read again and written again, never overwritten",
				crd.Name, orDash(crd.ResourceVersion), storage),
			Verify:   fmt.Sprintf("every %s object was written back in %s and all of them can be listed", crd.Kind, storage),
			Commands: []string{shellcmd.Sprintf("%s get %s.%s -A -o json | %s replace -f -", k, shellcmd.Value(shellcmd.DNSLabel, "resource", crd.Plural), shellcmd.Value(shellcmd.Name, "API group", crd.Group), k)},
			Notes: []string{
				"An object written back unchanged keeps its content; the API server re-encodes it in the storage version. Each object is saved to the backup before its write; restore has nothing to undo for them.",
				"Progress (the list's continue token and the objects done) is journaled page by page: a killed run resumes where it stopped.",
			},
			Storage: sm,
		}
		out = append(out, Attempt{Rung: s.Rung, Risk: s.Risk, Steps: []Step{s}, Prepares: true})
	}
	if r, risk, ok := rung(root, RungRealign, sigTrim); ok {
		tm := *sm
		tm.MigrateStep = migrateID
		s := Step{
			ID:      stepID(TrimStoredVersions, c.Name, crd.Name, storage),
			Action:  TrimStoredVersions,
			Rung:    RungRealign,
			Risk:    risk,
			Cluster: c.Name,
			Target:  obj,
			Touches: []Object{obj},
			Change: fmt.Sprintf("set status.storedVersions of CRD %s from [%s] to [%s] (status subresource only; the CRD's spec is not touched)",
				crd.Name, strings.Join(crd.StoredVersions, ", "), storage),
			Why:       why,
			Rationale: r.Action,
			Precondition: fmt.Sprintf("the migration step (%s) verified, in this run or an earlier one with the same backup directory; CRD %s unchanged since planning (resourceVersion %s)",
				migrateID, crd.Name, orDash(crd.ResourceVersion)),
			Verify:   fmt.Sprintf("status.storedVersions of CRD %s is [%s] and every %s object can be listed", crd.Name, storage, crd.Kind),
			Commands: []string{shellcmd.Sprintf(`%s patch crd %s --subresource=status --type merge -p '{"status":{"storedVersions":["%s"]}}'`, k, nameArg(crd.Name), shellcmd.Value(shellcmd.DNSLabel, "storage version", storage))},
			Notes:    []string{"The backup keeps the CRD; `unstick restore` puts status.storedVersions back (and nothing else)."},
			Storage:  &tm,
		}
		out = append(out, single(s))
	}
	return out
}

// bundleHint is the guided step for a Bundle whose resources use a removed API: the file to
// change in the GitRepo it comes from. unstick never edits Git.
func bundleHint(snap *snapshot.Snapshot, f finding.Finding) string {
	v := f.Vars
	gv, kind, repl := v["group-version"], v["kind"], v["replacement"]
	if repl == "" && gv != "" && kind != "" {
		if rm, ok := removedapi.Lookup(gv, kind); ok {
			repl = rm.ReplacementAPIVersion()
		}
	}
	what := "the removed apiVersion"
	if gv != "" {
		what = "apiVersion " + gv
		if kind != "" {
			what += " (" + kind + ")"
		}
	}
	change := "change " + what + " to its served replacement (or remove the object where Kubernetes removed the kind with none, such as PodSecurityPolicy)"
	if repl != "" {
		change = "change " + what + " to " + repl
	}
	if rm, ok := removedapi.Lookup(gv, kind); ok && kind != "" {
		switch {
		case rm.ReplacementAPIVersion() == "":
			change = fmt.Sprintf("remove the %s objects (%s): Kubernetes %s removed the kind with no replacement", kind, gv, rm.RemovedIn)
		case rm.Review != "":
			change += " and adapt the object to its schema: " + rm.Review
		}
	}
	repo, branch, path := v["repo"], "", v["path"]
	bundle, ns := v["bundle"], v["fleet-namespace"]
	if m := snap.Cluster(f.Cluster); m != nil {
		for _, b := range m.Bundles {
			if b.Name == bundle && (ns == "" || b.Namespace == ns) && repo == "" {
				repo = b.Labels["fleet.cattle.io/repo-name"]
			}
		}
		for _, g := range m.GitRepos {
			if g.Name == repo && (ns == "" || g.Namespace == ns) {
				if g.Spec.Branch != "" {
					branch = g.Spec.Branch
				}
				if g.Spec.Repo != "" {
					repo = fmt.Sprintf("%s (%s)", g.Name, g.Spec.Repo)
				}
			}
		}
	}
	where := "the bundle's source"
	if repo != "" {
		where = "GitRepo " + repo
		if branch != "" {
			where += ", branch " + branch
		}
		if path != "" {
			where += ", path " + path
		}
	} else if path != "" {
		where = "path " + path + " of the bundle's source"
	}
	b := bundle
	if b == "" {
		b = f.Object.Name
	}
	return fmt.Sprintf("guided — unstick never edits Git: in %s, %s in the manifests of bundle %s, commit, and let Fleet deploy it (then `unstick fix` again for any Helm release record still using the old version)", where, change, b)
}

// hint records the manual hint of an incident the rule gives no step.
func (pl *planner) hint(inc finding.Incident, h string) {
	if pl.hints == nil {
		pl.hints = map[string]string{}
	}
	pl.hints[inc.RootCause.ID+"|"+inc.RootCause.Cluster+"|"+inc.RootCause.Object.String()] = h
}

func revList(revs []int) string {
	var s []string
	for _, r := range revs {
		s = append(s, itoa(r))
	}
	return strings.Join(s, ",")
}

// SVMAPIVersion is the StorageVersionMigration API a plan names (GA, served by default, from
// Kubernetes v1.37; v1beta1 before). The executor creates it in the version the cluster serves.
const SVMAPIVersion = "storagemigration.k8s.io/v1"

// SVMName is the name of the StorageVersionMigration a storage migration of crd creates.
func SVMName(crd string) string {
	name := "unstick-" + strings.ReplaceAll(crd, ".", "-")
	if len(name) > 200 {
		name = name[:200]
	}
	return name
}
