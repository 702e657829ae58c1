package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A Bundle Modified on every cluster by the same patch of fields the API server defaults or
// Helm owns is not drift: the chart renders a field the server fills in or drops
// (`{"spec":{"strategy":{"rollingUpdate":null}}}`, rancher/fleet#4655, #4969), or Helm writes
// its own bookkeeping differently from the chart (`{"metadata":{"labels":
// {"app.kubernetes.io/managed-by":"helm"}}}`, rancher/fleet#2784). A force update re-applies
// the same difference and the bundle is Modified again; diff.comparePatches in fleet.yaml
// ends the loop.

// diffArtefact is what makes a BundleDeployment's Modified an artefact: the entries of
// fleet.yaml's diff.comparePatches that ignore it, and on how many of the bundle's clusters
// the same patch is.
type diffArtefact struct {
	entries     []fleetv1.ComparePatch
	same, total int
}

// helmOwnedLabels and helmOwnedAnnotationPrefix are the metadata Helm writes on every object
// of a release (helm pkg/action: managed-by on install and adoption, meta.helm.sh/release-*).
var helmOwnedLabels = map[string]bool{"app.kubernetes.io/managed-by": true, "helm.sh/chart": true, "heritage": true}

const helmOwnedAnnotationPrefix = "meta.helm.sh/"

// defaultedWhenNull are fields the API server fills in when a manifest leaves them out or
// sets them to null, so the patch asks to remove what the server put back.
var defaultedWhenNull = map[string]bool{"rollingUpdate": true, "creationTimestamp": true}

// modifiedIndex counts, per Bundle, its BundleDeployments and how many carry each set of
// modifications, so that each Modified one is judged against its siblings in constant time.
type modifiedIndex struct {
	total, same map[string]int
}

func newModifiedIndex(bds []*snapshot.BundleDeployment) modifiedIndex {
	ix := modifiedIndex{total: map[string]int{}, same: map[string]int{}}
	for _, bd := range bds {
		k := bundleOfBD(bd)
		ix.total[k]++
		if len(bd.Status.ModifiedStatus) > 0 {
			ix.same[k+"\x00"+modifiedSignature(bd)]++
		}
	}
	return ix
}

func bundleOfBD(bd *snapshot.BundleDeployment) string {
	return bd.Labels.Get(fleet.LabelBundleNamespace) + "/" + fleet.BundleName(bd)
}

// artefact judges bd's Modified against its siblings (the BundleDeployments of the same
// Bundle on other clusters): an artefact when at least two clusters, and most of them, carry
// the very same modifications, each a patch of defaulted or Helm-owned fields only.
func (ix modifiedIndex) artefact(bd *snapshot.BundleDeployment) (diffArtefact, bool) {
	if len(bd.Status.ModifiedStatus) == 0 {
		return diffArtefact{}, false
	}
	k := bundleOfBD(bd)
	a := diffArtefact{same: ix.same[k+"\x00"+modifiedSignature(bd)], total: ix.total[k]}
	if a.same < 2 || 2*a.same <= a.total {
		return diffArtefact{}, false
	}
	for _, ms := range bd.Status.ModifiedStatus {
		e, ok := artefactEntry(ms)
		if !ok {
			return diffArtefact{}, false
		}
		a.entries = append(a.entries, e)
	}
	return a, true
}

// modifiedSignature is bd's modifications as one comparable string; "" when it has none.
func modifiedSignature(bd *snapshot.BundleDeployment) string {
	var parts []string
	for _, ms := range bd.Status.ModifiedStatus {
		parts = append(parts, fmt.Sprintf("%s|%s|%s|%s|%t|%t|%s", ms.APIVersion, ms.Kind, ms.Namespace, ms.Name, ms.Create, ms.Delete, compactJSON(ms.Patch)))
	}
	sort.Strings(parts)
	return strings.Join(parts, "\n")
}

func compactJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// artefactEntry is the comparePatches entry ignoring one modification, when its patch
// touches only defaulted or Helm-owned fields; a missing or extra object is never one.
func artefactEntry(ms fleetv1.ModifiedStatus) (fleetv1.ComparePatch, bool) {
	if ms.Create || ms.Delete || ms.Exist || ms.Patch == "" {
		return fleetv1.ComparePatch{}, false
	}
	var patch map[string]any
	if json.Unmarshal([]byte(ms.Patch), &patch) != nil {
		return fleetv1.ComparePatch{}, false
	}
	var paths []string
	if !artefactLeaves(patch, nil, &paths) || len(paths) == 0 {
		return fleetv1.ComparePatch{}, false
	}
	e := fleetv1.ComparePatch{APIVersion: ms.APIVersion, Kind: ms.Kind, Name: ms.Name, Namespace: ms.Namespace}
	for _, p := range paths {
		e.Operations = append(e.Operations, fleetv1.Operation{Op: "remove", Path: p})
	}
	return e, true
}

// artefactLeaves walks a merge patch and collects the JSON pointer of each field it sets;
// false as soon as one is neither defaulted nor Helm-owned. Strategic-merge directives
// ($setElementOrder/…, $retainKeys, $patch) order or scope a change and set nothing.
func artefactLeaves(v map[string]any, at []string, paths *[]string) bool {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "$") {
			continue
		}
		path := append(append([]string(nil), at...), k)
		if sub, ok := v[k].(map[string]any); ok && !helmOwned(path) {
			if !artefactLeaves(sub, path, paths) {
				return false
			}
			continue
		}
		if !helmOwned(path) && !(v[k] == nil && defaultedWhenNull[k]) {
			return false
		}
		*paths = append(*paths, jsonPointer(path))
	}
	return true
}

// helmOwned reports metadata.labels and metadata.annotations that Helm writes itself.
func helmOwned(path []string) bool {
	if len(path) != 3 || path[0] != "metadata" {
		return false
	}
	switch path[1] {
	case "labels":
		return helmOwnedLabels[path[2]]
	case "annotations":
		return strings.HasPrefix(path[2], helmOwnedAnnotationPrefix)
	}
	return false
}

// jsonPointer renders a path as RFC 6901 (a "/" in a label key is "~1").
func jsonPointer(path []string) string {
	r := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + r.Replace(p))
	}
	return b.String()
}

// comparePatchesYAML is the fleet.yaml entry that ignores the artefact, filled in, as one
// line of YAML flow style (it pastes into fleet.yaml as it is).
func comparePatchesYAML(entries []fleetv1.ComparePatch) string {
	var items []string
	for _, e := range entries {
		var ops []string
		for _, op := range e.Operations {
			ops = append(ops, fmt.Sprintf(`{op: remove, path: "%s"}`, op.Path))
		}
		item := fmt.Sprintf("{apiVersion: %s, kind: %s, name: %s", e.APIVersion, e.Kind, e.Name)
		if e.Namespace != "" {
			item += ", namespace: " + e.Namespace
		}
		items = append(items, item+", operations: ["+strings.Join(ops, ", ")+"]}")
	}
	return "diff: {comparePatches: [" + strings.Join(items, ", ") + "]}"
}

// markArtefact rewrites a bundle-modified finding as a diff artefact: what it is, on how many
// clusters, and the comparePatches entry, which becomes the next step (a force update only
// re-applies the same difference).
func markArtefact(f *finding.Finding, src, bundle, target string, a diffArtefact) {
	snippet := comparePatchesYAML(a.entries)
	f.Summary = fmt.Sprintf("bundle %s on cluster %s is Modified by the same patch as on %d of its %d clusters, touching only fields the API server defaults or Helm owns: a chart or Helm diff artefact, not drift", bundle, target, a.same, a.total)
	f.Signature = "bundle-modified|artefact|" + genericBundle(bundle)
	for _, e := range a.entries {
		f.Evidence = append(f.Evidence, finding.Evidence{Source: src, Text: fmt.Sprintf("%s %s/%s: ignore %s", e.Kind, orDash(e.Namespace), e.Name, operationPaths(e))})
	}
	var steps []finding.Step
	for _, s := range f.Remediation {
		if s.Rung == "resync" {
			continue
		}
		if s.Rung == "realign" {
			s.Action = "Add to the bundle's fleet.yaml (the difference is expected; merge with an existing diff: section), then let Fleet redeploy: " + snippet
		}
		steps = append(steps, s)
	}
	f.Remediation = steps
}

func operationPaths(e fleetv1.ComparePatch) string {
	var ps []string
	for _, op := range e.Operations {
		ps = append(ps, op.Path)
	}
	return strings.Join(ps, ", ")
}
