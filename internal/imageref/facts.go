package imageref

import (
	"sort"
	"strings"
)

// Status is what a registry said about a reference.
type Status string

const (
	// OK: the manifest exists.
	OK Status = "ok"
	// Missing: the registry answered 404 (MANIFEST_UNKNOWN, NAME_UNKNOWN): the tag or digest
	// is not there, the condition behind the kubelet's "manifest unknown".
	Missing Status = "missing"
	// Unauthorized: 401/403 with the credentials unstick had; existence is unknown (Docker
	// Hub answers 401 for repositories that do not exist, too).
	Unauthorized Status = "unauthorized"
	// Unreachable: network error, timeout, or 429/5xx after retries; existence is unknown.
	Unreachable Status = "unreachable"
	// Invalid: the reference cannot be parsed; no runtime can pull it.
	Invalid Status = "invalid"
)

// Platform is one os/architecture[/variant] an image is built for.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Variant      string `json:"variant,omitempty"`
}

func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Facts is what the registry said about one image reference, gathered before the checks run
// (the load step) so the checks stay pure.
type Facts struct {
	// Ref is the reference as used by the workload; Canonical its normalised form.
	Ref       string `json:"ref"`
	Canonical string `json:"canonical"`
	Status    Status `json:"status"`
	// Digest and MediaType of the manifest (or index) the tag points to.
	Digest    string `json:"digest,omitempty"`
	MediaType string `json:"mediaType,omitempty"`
	// Index is true for a multi-platform image index / manifest list.
	Index bool `json:"index,omitempty"`
	// Platforms the image is built for: an index's entries, or a single image's config.
	// Empty when they could not be read.
	Platforms []Platform `json:"platforms,omitempty"`
	// Error is the registry's or the network's message for anything but OK.
	Error string `json:"error,omitempty"`
}

// Known reports whether the registry gave a definite answer about existence.
func (f Facts) Known() bool { return f.Status == OK || f.Status == Missing || f.Status == Invalid }

// Supports reports whether the image has a build for os/arch, and whether that is known.
// Variants are not compared: nodes do not label them and runtimes pick the best variant.
func (f Facts) Supports(os, arch string) (ok, known bool) {
	if f.Status != OK || len(f.Platforms) == 0 || arch == "" {
		return false, false
	}
	if os == "" {
		os = "linux"
	}
	for _, p := range f.Platforms {
		if strings.EqualFold(p.OS, os) && strings.EqualFold(p.Architecture, arch) {
			return true, true
		}
	}
	return false, true
}

// PlatformList renders the platforms as "linux/amd64, linux/arm64".
func (f Facts) PlatformList() string {
	var out []string
	for _, p := range f.Platforms {
		out = append(out, p.String())
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
