package check

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/plural"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// requiredFleetCRDs are the Fleet CRDs every management cluster serves (charts/fleet-crd).
var requiredFleetCRDs = []string{
	"bundledeployments.fleet.cattle.io", "bundles.fleet.cattle.io", "clustergroups.fleet.cattle.io",
	"clusterregistrations.fleet.cattle.io", "clusterregistrationtokens.fleet.cattle.io",
	"clusters.fleet.cattle.io", "contents.fleet.cattle.io", "gitrepos.fleet.cattle.io",
}

// crdMissing reports CRDs that are absent where they are needed: a Fleet CRD on a management
// cluster, or a resource that a pod's log says the server does not serve ("the server could
// not find the requested resource (get bundledeployments.fleet.cattle.io)", "no matches for
// kind ..."), when that cluster's CRDs were read and it is indeed not among them. A CRD that
// vanished after an upgrade makes every agent that lists it crash-loop.
var crdMissing = Check{
	Name:  "crd/missing",
	Emits: []string{"crd/missing"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		type miss struct {
			c        *snapshot.Cluster
			name     string
			evidence []finding.Evidence
			keys     []string
			affects  string
			why      string // what a quoted message says cannot go on without it
		}
		found := map[string]*miss{}
		upstreamOnly := map[string]bool{} // judged on a downstream cluster for want of its management cluster's CRDs
		var order []string
		// addAt records a CRD missing on cluster where, reported on c (where itself, or the
		// management cluster when where was not collected).
		addAt := func(c *snapshot.Cluster, where, name string, e finding.Evidence, keys ...string) *miss {
			k := where + "/" + name
			m := found[k]
			if m == nil {
				m = &miss{c: c, name: name}
				found[k] = m
				order = append(order, k)
			}
			if len(m.evidence) < 4 && !slices.ContainsFunc(m.evidence, func(x finding.Evidence) bool { return x.Source == e.Source }) {
				m.evidence = append(m.evidence, e) // one quote per file
			}
			m.keys = append(m.keys, keys...)
			return m
		}
		add := func(c *snapshot.Cluster, name string, e finding.Evidence, keys ...string) {
			addAt(c, c.Name, name, e, keys...)
		}
		// A kind quoted as not served by a BundleDeployment or a Helm release: the CRD is
		// missing on the cluster the release was applied to. When that cluster was not
		// collected, the finding stays on the management cluster and names it (Affects).
		for _, q := range quotedMessages(ctx) {
			for _, mk := range quotedMissingKinds(q) {
				name := guessPlural(mk.Kind) + "." + mk.Group
				on := q.target
				if on == nil {
					on = q.on
				}
				keys := append(slices.Clone(q.keys), "crd:"+q.affects+"/"+name)
				m := addAt(on, q.affects, name, q.evidence(), keys...)
				if m.why == "" {
					m.affects = q.affects
					m.why = fmt.Sprintf("kind %s (%s) is not served there, so %s cannot be applied", mk.Kind, mk.GroupVersion(), q.subject)
				}
			}
		}
		for _, m := range ctx.Snap.Management() {
			if !crdsListed(m) {
				continue
			}
			for _, name := range requiredFleetCRDs {
				if !m.HasCRD(name) {
					add(m, name, ev("CustomResourceDefinitions of "+m.Name, "%s is not among the %s read; the Fleet controller and every agent need it", name, plural.Of(len(m.CRDs), "CRD")))
				}
			}
		}
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				for _, l := range c.LogsFor(p.Namespace, p.Name) {
					for _, pair := range [][2]any{{l.Previous, l.PreviousFile}, {l.Current, l.CurrentFile}} {
						lines, file := pair[0].([]string), pair[1].(string)
						for _, line := range lines {
							if !strings.Contains(line, "requested resource") && !strings.Contains(line, "no matches for kind") {
								continue
							}
							if m, ok := classify.Classify(line, classify.Log); !ok || m.ID != "agent/crd-missing" {
								continue
							}
							res := missingResource(line)
							if res == "" || !strings.Contains(res, ".") {
								continue
							}
							keys := podKeys(c, p)
							keys = append(keys, "crd:"+c.Name+"/"+res)
							e := ev(file, "%s", firstLine(line))
							// A downstream Fleet agent reads fleet.cattle.io resources from its
							// management cluster, which is where the CRD is missing. Only when no
							// management cluster's CRDs were read is the agent's own cluster judged.
							upstream := strings.HasSuffix(res, ".fleet.cattle.io") && fleet.IsAgentNamespace(p.Namespace) && c.Role != snapshot.Management
							judged := false
							if upstream {
								for _, m := range ctx.Snap.Management() {
									if m == c || !crdsListed(m) {
										continue
									}
									judged = true
									if !m.HasCRD(res) {
										add(m, res, e, keys...)
									}
								}
							}
							// Judged by the agent's own 404 alone, a passing error (the CRD chart
							// being upgraded at that moment) is not enough: the agent must still fail.
							if !judged && crdsListed(c) && !c.HasCRD(res) && (!upstream || agentStillMisses(ctx, c, p, res)) {
								add(c, res, e, keys...)
								if upstream {
									upstreamOnly[c.Name+"/"+res] = true
								}
							}
						}
					}
				}
			}
		}
		sort.Strings(order)
		var out []finding.Finding
		for _, k := range order {
			m := found[k]
			where := m.c.Name
			if m.affects != "" {
				where = m.affects
			}
			summary := fmt.Sprintf("CRD %s does not exist on cluster %s", m.name, where)
			if m.why != "" {
				summary += ": " + m.why
			}
			if upstreamOnly[k] {
				summary += "; its Fleet agent gets 404 for it from the management cluster, whose CRDs are not in this scan"
			}
			f := ctx.New("crd/missing", m.c, ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", m.name), summary)
			f.Evidence = m.evidence
			f.Keys = append(dedup(m.keys), "crd:"+m.c.Name+"/"+m.name)
			if m.affects != "" && m.affects != m.c.Name {
				f.Affects = m.affects
			}
			f.Signature = "crd-missing|" + m.name
			if _, group, ok := strings.Cut(m.name, "."); ok {
				f.Vars = map[string]string{"group": group}
				if group == "fleet.cattle.io" {
					// Fleet's CRDs come from the fleet-crd chart, installed next to the fleet chart.
					f.Vars["namespace"], f.Vars["crd-release"] = "cattle-fleet-system", "fleet-crd"
				}
			}
			out = append(out, f)
		}
		return out, nil
	},
}

// crdVersions reports CRDs whose stored versions are no longer served: objects stored in a
// version the API no longer offers cannot be read until they are migrated. It also judges the
// CRDs an upgrade is about to install — the CRD documents of a Fleet Bundle deployed to the
// cluster (the fleet-crd chart of a Fleet upgrade, a chart's crds/) — against the cluster's
// stored versions: the API server rejects a CRD whose spec.versions drops a stored version
// ("status.storedVersions[0]: Invalid value: ...: missing from spec.versions; ... must remain in
// spec.versions until a storage migration ensures no data remains persisted in ...";
// apiextensions-apiserver validation), so the upgrade fails half-way (kubernetes#87691).
var crdVersions = Check{
	Name:  "crd/versions",
	Emits: []string{"crd/version-not-served"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		// The CRDs being rolled out first: a stored version they drop blocks the rollout.
		var out []finding.Finding
		reported := map[string]bool{}
		for _, m := range ctx.Snap.Management() {
			out = append(out, targetCRDs(ctx, m, reported)...)
		}
		for _, c := range ctx.Snap.Clusters {
			for _, crd := range c.CRDs {
				served := map[string]bool{}
				for _, v := range crd.Versions {
					served[v.Name] = v.Served
				}
				var bad []string
				for _, sv := range crd.StoredVersions {
					if !served[sv] {
						bad = append(bad, sv)
					}
				}
				if len(bad) == 0 || reported[c.Name+"/"+crd.Name] {
					continue
				}
				obj := ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crd.Name)
				f := ctx.New("crd/version-not-served", c, obj, fmt.Sprintf("CRD %s has objects stored as %s, which the API no longer serves: migrate %s to %s and trim status.storedVersions",
					crd.Name, strings.Join(bad, ", "), migrateWhat(c, crd), orUnknown(storageVersion(crd))))
				f.Evidence = []finding.Evidence{ev(sourceOf(c, obj), "status.storedVersions=%v; served versions: %s; %s", crd.StoredVersions, servedList(crd), objectsToMigrate(c, crd))}
				f.Keys = []string{"crd:" + c.Name + "/" + crd.Name}
				f.Vars = crdVars(c, crd, bad)
				reported[c.Name+"/"+crd.Name] = true
				out = append(out, f)
			}
		}
		return out, nil
	},
}

// crdVars are the values the fix ladder's commands take (and the storage migration reads).
// "objects" is the number of objects the migration rewrites, when the source counted them.
func crdVars(c *snapshot.Cluster, crd *snapshot.CRD, drop []string) map[string]string {
	objects := ""
	if n, ok, _ := c.CRDObjectCount(crd.Name); ok {
		objects = strconv.Itoa(n)
	}
	return map[string]string{
		"crd": crd.Name, "stored-versions": strings.Join(drop, ","), "storage-version": storageVersion(crd),
		"group": crd.Group, "plural": crd.Plural, "objects": objects,
	}
}

// migrateWhat names what a migration of crd rewrites: "its 37 objects" when they were
// counted, else "them".
func migrateWhat(c *snapshot.Cluster, crd *snapshot.CRD) string {
	if n, ok, _ := c.CRDObjectCount(crd.Name); ok {
		return "its " + plural.Of(n, "object")
	}
	return "them"
}

// migratedWhat is migrateWhat as the subject of "are migrated".
func migratedWhat(c *snapshot.Cluster, crd *snapshot.CRD) string {
	if n, ok, _ := c.CRDObjectCount(crd.Name); ok {
		if n == 1 {
			return "its 1 object is"
		}
		return "its " + plural.Of(n, "object") + " are"
	}
	return "the objects are"
}

// objectsToMigrate is the evidence of how many objects a migration of crd rewrites: the
// count a live list gave, or why there is none.
func objectsToMigrate(c *snapshot.Cluster, crd *snapshot.CRD) string {
	n, ok, unknown := c.CRDObjectCount(crd.Name)
	switch {
	case ok:
		return plural.Of(n, "object") + " to migrate"
	case unknown:
		return "objects to migrate: unknown (the API server's list gave no remainingItemCount)"
	}
	return "objects to migrate: count not read"
}

func storageVersion(crd *snapshot.CRD) string {
	for _, v := range crd.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "the storage version"
	}
	return s
}

// targetCRDs judges the CRD documents of the Bundles on management cluster m against the
// stored versions of the CRDs on each cluster the Bundle is deployed to.
func targetCRDs(ctx *Context, m *snapshot.Cluster, reported map[string]bool) []finding.Finding {
	var out []finding.Finding
	ix := newFleetIndex(m)
	for _, bd := range m.BundleDeployments {
		b, docs := bundleDocs(m, bd)
		if b == nil {
			continue
		}
		if !slices.ContainsFunc(docs, func(d manifest.Doc) bool { return d.CRD != nil }) {
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
		for _, d := range docs {
			if d.CRD == nil || len(d.CRD.Versions) == 0 {
				continue
			}
			crd := crdNamed(dc, d.Name)
			if crd == nil || reported[dc.Name+"/"+crd.Name] {
				continue
			}
			var drop []string
			for _, sv := range crd.StoredVersions {
				if !servedIn(d.CRD, sv) {
					drop = append(drop, sv)
				}
			}
			if len(drop) == 0 {
				continue
			}
			reported[dc.Name+"/"+crd.Name] = true
			obj := ref("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", crd.Name)
			f := ctx.New("crd/version-not-served", dc, obj, fmt.Sprintf("CRD %s on cluster %s has objects stored as %s, which the CRD that bundle %s/%s rolls out no longer serves (%s): the API server rejects that CRD until %s migrated to %s and status.storedVersions is trimmed",
				crd.Name, dc.Name, strings.Join(drop, ", "), b.Namespace, b.Name, servedDocList(d.CRD), migratedWhat(dc, crd), orUnknown(storageVersion(crd))))
			// Not a risk for later but a rollout that fails half-way: a blocker, as
			// api/removed-in-target is.
			f.Severity = finding.Error
			f.Evidence = []finding.Evidence{
				ev(sourceOf(dc, obj), "status.storedVersions=%v; served now: %s; %s", crd.StoredVersions, servedList(crd), objectsToMigrate(dc, crd)),
				ev(sourceOf(m, bundleRef(b.Namespace, b.Name)), "%s: CustomResourceDefinition %s serves %s", d.Source, d.Name, servedDocList(d.CRD)),
			}
			f.Keys = []string{"crd:" + dc.Name + "/" + crd.Name, BundleKey(fleetRef, b.Name)}
			f.Vars = crdVars(dc, crd, drop)
			out = append(out, f)
		}
	}
	return out
}

func crdNamed(c *snapshot.Cluster, name string) *snapshot.CRD {
	for _, crd := range c.CRDs {
		if crd.Name == name {
			return crd
		}
	}
	return nil
}

func servedIn(c *manifest.CRD, v string) bool {
	for _, x := range c.Versions {
		if x.Name == v {
			return x.Served
		}
	}
	return false
}

func servedDocList(c *manifest.CRD) string {
	var s []string
	for _, v := range c.Versions {
		if v.Served {
			s = append(s, v.Name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// agentStillMisses reports whether the agent pod's logs, judged as agent/logs judges them
// (the error a crash-looping container died on, or one a running agent keeps repeating), say
// the resource res is not served.
func agentStillMisses(ctx *Context, c *snapshot.Cluster, p *corev1.Pod, res string) bool {
	minRestarts := int32(ctx.Thresholds.Int("pod.crashloopMinRestarts"))
	for _, cs := range allStatuses(p) {
		for _, f := range judgeAgentLog(ctx, c, p, cs, minRestarts) {
			if f.ID == "agent/crd-missing" && slices.Contains(f.Keys, "crd:"+c.Name+"/"+res) {
				return true
			}
		}
	}
	return false
}

// crdsListed reports whether a cluster's CRDs were read as a whole, so that an absent CRD is
// a missing one: some were read, and none is absent whose objects were read too (a bundle
// holding Fleet Clusters but not clusters.fleet.cattle.io holds a partial CRD dump, such as
// one `kubectl get crd <name> -o yaml`, not the cluster's list).
func crdsListed(c *snapshot.Cluster) bool {
	if !c.CRDsCollected {
		return false
	}
	inUse := map[string]bool{
		"clusters.fleet.cattle.io":             len(c.FleetClusters) > 0,
		"bundles.fleet.cattle.io":              len(c.Bundles) > 0,
		"bundledeployments.fleet.cattle.io":    len(c.BundleDeployments) > 0,
		"clusterregistrations.fleet.cattle.io": len(c.ClusterRegistrations) > 0,
		"contents.fleet.cattle.io":             len(c.Contents) > 0,
	}
	for name, used := range inUse {
		if used && !c.HasCRD(name) {
			return false
		}
	}
	return true
}

func servedList(crd *snapshot.CRD) string {
	var s []string
	for _, v := range crd.Versions {
		if v.Served {
			s = append(s, v.Name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func dedup(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
