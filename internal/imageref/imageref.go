// Package imageref parses container image references the way the container runtimes do and
// holds what a registry said about one (Facts). It is pure: the checks read it, and only
// internal/registry talks to registries.
package imageref

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// DefaultRegistry is where a reference without a registry host points. Runtimes normalise
// "rancher/kubectl" to "docker.io/rancher/kubectl" and "busybox" to
// "docker.io/library/busybox" (distribution/reference ParseNormalizedNamed).
const DefaultRegistry = "docker.io"

// Ref is a parsed image reference.
type Ref struct {
	// Original is the reference as written.
	Original string
	// Registry is the host[:port] the image is pulled from (DefaultRegistry when none given).
	Registry string
	// Repository is the path within the registry, "library/" added for official images.
	Repository string
	Tag        string
	Digest     string
}

// distribution/reference grammar, simplified: lower-case path components separated by
// "/", a tag of at most 128 word characters, a digest algorithm:hex.
var (
	componentRE = lazyre.New(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
	tagRE       = lazyre.New(`^[\w][\w.-]{0,127}$`)
	digestRE    = lazyre.New(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$`)
	hostRE      = lazyre.New(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?$|^\[[0-9a-fA-F:]+\](?::[0-9]+)?$`)
)

// Parse reads an image reference such as "rancher/kubectl:v1.30.3",
// "registry.example.com:5000/team/app@sha256:…" or "busybox".
func Parse(s string) (Ref, error) {
	r := Ref{Original: s}
	s = strings.TrimSpace(s)
	if s == "" {
		return r, fmt.Errorf("empty image reference")
	}
	name := s
	if i := strings.Index(name, "@"); i >= 0 {
		r.Digest = name[i+1:]
		name = name[:i]
		if !digestRE().MatchString(r.Digest) {
			return r, fmt.Errorf("image reference %q: invalid digest %q", s, r.Digest)
		}
	}
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i+1:], "/") {
		r.Tag = name[i+1:]
		name = name[:i]
		if !tagRE().MatchString(r.Tag) {
			return r, fmt.Errorf("image reference %q: invalid tag %q", s, r.Tag)
		}
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.HasPrefix(first, "[")) {
		if !hostRE().MatchString(first) {
			return r, fmt.Errorf("image reference %q: invalid registry host %q", s, first)
		}
		r.Registry, r.Repository = first, rest
	} else {
		r.Registry, r.Repository = DefaultRegistry, name
	}
	if r.Registry == "index.docker.io" || r.Registry == "registry-1.docker.io" {
		r.Registry = DefaultRegistry
	}
	if r.Registry == DefaultRegistry && !strings.Contains(r.Repository, "/") {
		r.Repository = "library/" + r.Repository
	}
	if r.Repository == "" {
		return r, fmt.Errorf("image reference %q: no repository", s)
	}
	for _, c := range strings.Split(r.Repository, "/") {
		if !componentRE().MatchString(c) {
			return r, fmt.Errorf("image reference %q: invalid repository path component %q (lower case letters, digits and separators only)", s, c)
		}
	}
	return r, nil
}

// Name is the canonical repository: registry/repository.
func (r Ref) Name() string { return r.Registry + "/" + r.Repository }

// String is the canonical form: docker.io/rancher/kubectl:v1.30.3, with the digest if given.
func (r Ref) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// NameOnly reports a reference with neither tag nor digest (SUC then appends the Plan's
// resolved version; a runtime would pull :latest).
func (r Ref) NameOnly() bool { return r.Tag == "" && r.Digest == "" }

// floatingTags are tags that are moved on purpose by their publishers.
var floatingTags = map[string]bool{"latest": true, "stable": true, "main": true, "master": true, "edge": true, "nightly": true, "dev": true}

// Floating reports a reference that is not pinned: a well-known moving tag without a digest.
// A name-only reference floats too when it is pulled as is (the runtime adds :latest).
func (r Ref) Floating() bool {
	if r.Digest != "" {
		return false
	}
	return r.Tag == "" || floatingTags[strings.ToLower(r.Tag)]
}

// Familiar is the short form a user writes: rancher/kubectl:v1.30.3 for Docker Hub images.
func (r Ref) Familiar() string {
	name := r.Name()
	if r.Registry == DefaultRegistry {
		name = r.Repository
		// "library/" goes only from an official image: docker.io/library/a/b is not a/b.
		if rest, ok := strings.CutPrefix(name, "library/"); ok && !strings.Contains(rest, "/") {
			name = rest
		}
	}
	if r.Tag != "" {
		name += ":" + r.Tag
	}
	if r.Digest != "" {
		name += "@" + r.Digest
	}
	return name
}

// PublicRegistry reports the registries anyone can pull from anonymously (for most images):
// a private registry or mirror needs credentials the nodes or the pod must supply.
func PublicRegistry(host string) bool {
	switch host {
	case DefaultRegistry, "registry.k8s.io", "quay.io", "ghcr.io", "gcr.io", "registry.suse.com", "registry.rancher.com",
		"public.ecr.aws", "mcr.microsoft.com": // the catalogue's list (config/private-registry-no-pull-secret)
		return true
	}
	return false
}
