// Package removedapi says which built-in group/version/kind a Kubernetes minor release stops
// serving, and what replaces it. The table is derived at start-up from the generated
// prerelease-lifecycle methods of the k8s.io/api types this binary is built with
// (APILifecycleRemoved, APILifecycleReplacement — the same methods kube-apiserver's
// RemoveDeletedKinds uses to decide what it no longer serves), plus a small cited table for
// kinds whose packages were deleted from k8s.io/api (PodSecurityPolicy, CustomResourceDefinition
// v1beta1, APIService v1beta1). It is pure: no I/O, no client.
package removedapi

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// APIModuleVersion is the k8s.io/api version the table is derived from. A test compares it with
// go.mod, so it cannot drift from the dependency.
const APIModuleVersion = "v0.37.2"

// Removal is one group/version/kind that a Kubernetes minor release stopped serving.
type Removal struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// RemovedIn is the first Kubernetes minor that does not serve it ("1.25").
	RemovedIn string `json:"removedIn"`
	// Replacement is the group/version/kind to use instead; empty Kind when there is none
	// (PodSecurityPolicy).
	Replacement schema.GroupVersionKind `json:"replacement"`
	// Review, when set, says why rewriting only the apiVersion is not enough: the replacement
	// changes the schema (fields renamed, required fields added), so a manifest rewrite must be
	// reviewed by hand and is refused by the automatic fix.
	Review string `json:"review,omitempty"`
	// Source is where the entry comes from: "k8s.io/api v0.37.2" or the citation of a filled-in
	// entry.
	Source string `json:"source"`
}

// APIVersion is the removed group/version as a manifest writes it ("policy/v1beta1", "v1beta1"
// for the core group).
func (r Removal) APIVersion() string { return apiVersion(r.Group, r.Version) }

// ReplacementAPIVersion is the replacement's apiVersion, or "" when there is none.
func (r Removal) ReplacementAPIVersion() string {
	if r.Replacement.Kind == "" {
		return ""
	}
	return apiVersion(r.Replacement.Group, r.Replacement.Version)
}

// RemovedAt reports whether a cluster at Kubernetes minor 1.minor no longer serves it.
func (r Removal) RemovedAt(minor int) bool {
	_, m, ok := ParseVersion(r.RemovedIn)
	return ok && minor >= m
}

func apiVersion(group, version string) string {
	if group == "" {
		return version
	}
	return group + "/" + version
}

type lifecycle interface {
	APILifecycleRemoved() (major, minor int)
}

type replaced interface {
	APILifecycleReplacement() schema.GroupVersionKind
}

var (
	once  sync.Once
	table map[string]Removal // "group/version|Kind"
	all   []Removal
)

func key(group, version, kind string) string { return group + "/" + version + "|" + kind }

func load() {
	table = map[string]Removal{}
	s := runtime.NewScheme()
	for _, add := range schemeBuilders {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("removedapi: registering k8s.io/api types: %v", err))
		}
	}
	src := "k8s.io/api " + APIModuleVersion
	for gvk, t := range s.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		obj := reflect.New(t).Interface()
		l, ok := obj.(lifecycle)
		if !ok {
			continue
		}
		major, minor := l.APILifecycleRemoved()
		if major == 0 {
			continue
		}
		r := Removal{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, RemovedIn: strconv.Itoa(major) + "." + strconv.Itoa(minor), Source: src}
		if rp, ok := obj.(replaced); ok {
			r.Replacement = rp.APILifecycleReplacement()
		}
		table[key(r.Group, r.Version, r.Kind)] = r
	}
	for _, r := range filled {
		if _, ok := table[key(r.Group, r.Version, r.Kind)]; !ok {
			table[key(r.Group, r.Version, r.Kind)] = r
		}
	}
	for k, r := range table {
		if why, ok := review[key(r.Group, r.Version, r.Kind)]; ok {
			r.Review = why
		} else if why, ok := review[key(r.Group, r.Version, "*")]; ok {
			r.Review = why
		}
		table[k] = r
	}
	for _, r := range table {
		all = append(all, r)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Group != all[j].Group {
			return all[i].Group < all[j].Group
		}
		if all[i].Version != all[j].Version {
			return all[i].Version < all[j].Version
		}
		return all[i].Kind < all[j].Kind
	})
}

// Lookup returns the removal of a kind at an apiVersion ("policy/v1beta1", "v1beta1"), if
// Kubernetes removed it.
func Lookup(apiVersion, kind string) (Removal, bool) {
	once.Do(load)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return Removal{}, false
	}
	r, ok := table[key(gv.Group, gv.Version, kind)]
	return r, ok
}

// All returns every removal, sorted by group, version and kind.
func All() []Removal {
	once.Do(load)
	return append([]Removal(nil), all...)
}

// Source names what the table is derived from, for `explain api/removed`.
func Source() string {
	return "k8s.io/api " + APIModuleVersion + " prerelease-lifecycle methods (APILifecycleRemoved, APILifecycleReplacement), with " +
		strconv.Itoa(len(filled)) + " cited entries for kinds deleted from k8s.io/api"
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
