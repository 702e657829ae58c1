// Package removedapi says which built-in group/version/kind a Kubernetes minor release
// deprecates and stops serving, and what replaces it. The table (table.go) is kept row by row
// with its source — the Kubernetes deprecated API migration guide and the generated
// prerelease-lifecycle methods of k8s.io/api, which a test checks every row against. It is
// pure: no I/O, no client.
package removedapi

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// APIModuleVersion is the k8s.io/api version the table is checked against. A test compares it
// with go.mod, so it cannot drift from the dependency.
const APIModuleVersion = "v0.37.2"

// LatestMinor is the newest Kubernetes minor release the table knows (k8s.io/api v0.N is
// Kubernetes 1.N): a removal after it is planned, not done.
func LatestMinor() int {
	_, m, _ := ParseVersion(APIModuleVersion) // v0.37.2 → 37
	return m
}

// Removal is one group/version/kind Kubernetes deprecated or stopped serving.
type Removal struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Introduced is the first Kubernetes minor that served it.
	Introduced string `json:"introduced,omitempty"`
	// DeprecatedIn is the first minor that deprecated it; empty when it was removed without a
	// deprecation period (alpha versions).
	DeprecatedIn string `json:"deprecatedIn,omitempty"`
	// RemovedIn is the first Kubernetes minor that does not serve it ("1.25"); empty for a
	// deprecated GA version no release removes (core/v1 Endpoints).
	RemovedIn string `json:"removedIn,omitempty"`
	// Replacement is the newest group/version/kind of its migration chain that the newest
	// known release serves (At gives it for another release); empty Kind when there is none
	// (PodSecurityPolicy).
	Replacement schema.GroupVersionKind `json:"replacement"`
	// Next is the immediate successor Kubernetes migrated it to, which may itself be removed.
	Next schema.GroupVersionKind `json:"-"`
	// Review, when set, says why rewriting only the apiVersion is not enough: the replacement
	// changes the schema (fields renamed, required fields added), so a manifest rewrite must be
	// reviewed by hand and is refused by the automatic fix.
	Review string `json:"review,omitempty"`
	// Source cites where the row comes from (the deprecation guide's section, the k8s.io/api
	// package whose lifecycle methods say it, or the release that deleted it).
	Source string `json:"source"`
}

// APIVersion is the group/version as a manifest writes it ("policy/v1beta1", "v1" for the
// core group).
func (r Removal) APIVersion() string { return apiVersion(r.Group, r.Version) }

// ReplacementAPIVersion is the replacement's apiVersion, or "" when there is none.
func (r Removal) ReplacementAPIVersion() string {
	if r.Replacement.Kind == "" {
		return ""
	}
	return apiVersion(r.Replacement.Group, r.Replacement.Version)
}

// ReplacementText names the replacement as a reader needs it: "policy/v1", the kind too when
// it differs ("discovery.k8s.io/v1 EndpointSlice"), or "".
func (r Removal) ReplacementText() string {
	rp := r.ReplacementAPIVersion()
	if rp != "" && r.Replacement.Kind != r.Kind {
		rp += " " + r.Replacement.Kind
	}
	return rp
}

// NeedsReview reports whether rewriting obj's apiVersion alone to the replacement would change
// the object or what it means, so the rewrite must be done by hand: whenever the row has a
// review note, except policy/v1beta1 PodDisruptionBudget, whose meaning changes only for an
// explicitly empty spec.selector (it matches no pod in v1beta1 and every pod of the namespace
// in v1; an unset selector matches none in both, per the deprecation guide v1.25). obj nil —
// content not read — asks about the kind alone, and the PodDisruptionBudget passes.
func (r Removal) NeedsReview(obj map[string]any) bool {
	if r.Review == "" {
		return false
	}
	if r.Group != "policy" || r.Kind != "PodDisruptionBudget" {
		return true
	}
	spec, _ := obj["spec"].(map[string]any)
	sel, set := spec["selector"].(map[string]any)
	if !set {
		return false
	}
	labels, _ := sel["matchLabels"].(map[string]any)
	exprs, _ := sel["matchExpressions"].([]any)
	return len(labels) == 0 && len(exprs) == 0
}

// RemovedAt reports whether a cluster at Kubernetes minor 1.minor no longer serves it.
func (r Removal) RemovedAt(minor int) bool { return atOrAfter(r.RemovedIn, minor) }

// DeprecatedAt reports whether a cluster at minor 1.minor serves it as deprecated.
func (r Removal) DeprecatedAt(minor int) bool {
	return atOrAfter(r.DeprecatedIn, minor) && !r.RemovedAt(minor)
}

// Planned reports whether its removal is after the newest release the table knows: a plan
// the Kubernetes project announced, not a release that happened.
func (r Removal) Planned() bool {
	_, m, ok := ParseVersion(r.RemovedIn)
	return ok && m > LatestMinor()
}

// RemovalText says when it goes: "removed in Kubernetes 1.25", "removal planned for
// Kubernetes 1.38", or "no removal planned".
func (r Removal) RemovalText() string {
	switch {
	case r.RemovedIn == "":
		return "no removal planned"
	case r.Planned():
		return "removal planned for Kubernetes " + r.RemovedIn
	}
	return "removed in Kubernetes " + r.RemovedIn
}

// servedAt reports whether a cluster at minor serves it.
func (r Removal) servedAt(minor int) bool {
	return (r.Introduced == "" || atOrAfter(r.Introduced, minor)) && !r.RemovedAt(minor)
}

// At is r with its Replacement for a cluster at minor 1.minor: the newest version along its
// migration chain that the cluster serves, or none (a chain whose every step that cluster no
// longer serves, or does not serve yet).
func (r Removal) At(minor int) Removal {
	r.Replacement = r.atWith(index(), minor)
	return r
}

func (r Removal) atWith(ix *tableIndex, minor int) schema.GroupVersionKind {
	var repl schema.GroupVersionKind = schema.GroupVersionKind{}
	next := r.Next
	for range 8 { // chains are at most five steps long
		if next.Kind == "" {
			break
		}
		step, ok := ix.byKey[key(next.Group, next.Version, next.Kind)]
		if !ok { // a GA version: served from its release on
			if since := gaSince()[gaKey(next)]; since == "" || atOrAfter(since, minor) {
				repl = next
			}
			break
		}
		if step.servedAt(minor) {
			repl = next
		}
		next = step.Next
	}
	return repl
}

func gaKey(g schema.GroupVersionKind) string {
	gv := apiVersion(g.Group, g.Version)
	if _, ok := gaSince()[gv+"|"+g.Kind]; ok {
		return gv + "|" + g.Kind
	}
	return gv
}

// atOrAfter reports whether release v ("1.25") is at or before minor 1.minor; false for "".
func atOrAfter(v string, minor int) bool {
	_, m, ok := ParseVersion(v)
	return ok && minor >= m
}

func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

func key(group, version, kind string) string { return group + "/" + version + "|" + kind }

type tableIndex struct {
	byKey map[string]Removal // every row, "group/version|Kind"
	all   []Removal          // sorted by group, version, kind
}

// index is built once from rows, before any caller reads it, and never changed.
var index = sync.OnceValue(buildIndex)

func buildIndex() *tableIndex {
	ix := &tableIndex{byKey: map[string]Removal{}}
	for _, rw := range rows() {
		gv, _ := schema.ParseGroupVersion(rw.gv)
		for _, kind := range rw.kinds {
			r := Removal{Group: gv.Group, Version: gv.Version, Kind: kind, Introduced: rw.introduced,
				DeprecatedIn: rw.deprecated, RemovedIn: rw.removed, Review: rw.review, Source: rw.source}
			r.Next = nextOf(rw.next, kind)
			ix.byKey[key(r.Group, r.Version, r.Kind)] = r
		}
	}
	for k, r := range ix.byKey {
		r.Replacement = r.atWith(ix, LatestMinor())
		ix.byKey[k] = r
		ix.all = append(ix.all, r)
	}
	sort.Slice(ix.all, func(i, j int) bool {
		a, b := ix.all[i], ix.all[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.Kind < b.Kind
	})
	return ix
}

// nextOf reads a row's successor: "group/version", or "group/version|Kind" when the kind
// changes.
func nextOf(next, kind string) schema.GroupVersionKind {
	if next == "" {
		return schema.GroupVersionKind{}
	}
	gvs, k, ok := strings.Cut(next, "|")
	if ok {
		kind = k
	}
	gv, _ := schema.ParseGroupVersion(gvs)
	return gv.WithKind(kind)
}

// Lookup returns the removal of a kind at an apiVersion ("policy/v1beta1", "v1beta1"), if
// Kubernetes removed it or plans to.
func Lookup(apiVersion, kind string) (Removal, bool) {
	r, ok := find(apiVersion, kind)
	if !ok || r.RemovedIn == "" {
		return Removal{}, false
	}
	return r, true
}

// Deprecated returns the row of a kind at an apiVersion when a cluster at minor 1.minor serves
// it deprecated, with its replacement for that cluster.
func Deprecated(apiVersion, kind string, minor int) (Removal, bool) {
	r, ok := find(apiVersion, kind)
	if !ok || !r.DeprecatedAt(minor) {
		return Removal{}, false
	}
	return r.At(minor), true
}

// Listed reports whether the table has a row for a kind at an apiVersion (removed or
// deprecated at some release): most manifests use none.
func Listed(apiVersion, kind string) bool {
	_, ok := find(apiVersion, kind)
	return ok
}

func find(apiVersion, kind string) (Removal, bool) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Removal{}, false
	}
	r, ok := index().byKey[key(gv.Group, gv.Version, kind)]
	return r, ok
}

// Table returns every row, removed or deprecated, sorted by group, version and kind.
func Table() []Removal { return append([]Removal(nil), index().all...) }

// All returns every removal (removed or planned), sorted by group, version and kind.
func All() []Removal {
	var out []Removal
	for _, r := range index().all {
		if r.RemovedIn != "" {
			out = append(out, r)
		}
	}
	return out
}

// Deprecations returns every row with a deprecation release, sorted like All: what
// api/deprecated-in-target judges.
func Deprecations() []Removal {
	var out []Removal
	for _, r := range index().all {
		if r.DeprecatedIn != "" {
			out = append(out, r)
		}
	}
	return out
}

// Source names what the table comes from, for `explain api/`.
func Source() string {
	return "the Kubernetes deprecated API migration guide (" + guide + ") and the prerelease-lifecycle methods of k8s.io/api " +
		APIModuleVersion + ", cited row by row in internal/removedapi/table.go; " + strconv.Itoa(len(index().all)) + " group/version/kinds"
}

// ParseVersion reads the major and minor of a Kubernetes version as clusters and distributions
// write it: "v1.32.3+rke2r1", "v1.31.4-k3s1", "1.32", "v1.33".
func ParseVersion(v string) (major, minor int, ok bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	end := len(parts[1])
	for i, c := range parts[1] {
		if c < '0' || c > '9' {
			end = i
			break
		}
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1][:end])
	if err1 != nil || err2 != nil || end == 0 {
		return 0, 0, false
	}
	return maj, mnr, true
}

// RemovedBetween returns the removal of a kind at an apiVersion when a cluster at minor `from`
// still serves it and one at minor `to` does not (the upgrade from 1.from to 1.to removes it).
func RemovedBetween(apiVersion, kind string, from, to int) (Removal, bool) {
	r, ok := Lookup(apiVersion, kind)
	if !ok || r.RemovedAt(from) || !r.RemovedAt(to) {
		return Removal{}, false
	}
	return r, true
}
