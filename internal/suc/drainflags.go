package suc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// DrainFlag is one `kubectl drain` flag SUC may pass, with the kubectl minor versions that
// added, deprecated and removed it (0 = never). Added versions before 1.18 are upper bounds
// ("present by"): SUC itself needs kubectl 1.18+, so they only matter against that floor.
type DrainFlag struct {
	Name       string
	Added      int
	Deprecated int
	Removed    int
	// Replacement is the flag to use instead, for deprecated ones.
	Replacement string
	Source      string
}

// DrainFlags is the table the kubectl image is judged against.
var DrainFlags = []DrainFlag{
	{Name: "--ignore-daemonsets", Added: 5,
		Source: "kubectl 1.5 reference (kubernetes/website docs/user-guide/kubectl/1_5 drain flags)"},
	{Name: "--force", Added: 5,
		Source: "kubectl 1.5 reference (kubernetes/website docs/user-guide/kubectl/1_5 drain flags)"},
	{Name: "--grace-period", Added: 5,
		Source: "kubectl 1.5 reference (kubernetes/website docs/user-guide/kubectl/1_5 drain flags)"},
	{Name: "--delete-local-data", Added: 5, Deprecated: 20, Removed: 31, Replacement: "--delete-emptydir-data",
		Source: "deprecated by kubernetes/kubernetes#95076 (1.20, \"This option is deprecated and will be deleted. Use --delete-emptydir-data.\"); " +
			"rejected as \"unknown flag: --delete-local-data\" by kubectl 1.31 (lensapp/lens#7063, xunleii/terraform-module-k3s#196/#197)"},
	{Name: "--timeout", Added: 8,
		Source: "in use with kubectl drain by August 2017 (openshift/openshift-ansible#5080)"},
	{Name: "--pod-selector", Added: 10,
		Source: "kubernetes/kubernetes#56864 (merged December 2017, kubectl 1.10)"},
	{Name: "--disable-eviction", Added: 18,
		Source: "rancher/system-upgrade-controller pkg/upgrade/job/job.go (\"only available in kubectl version 1.18 or later\")"},
	{Name: "--skip-wait-for-delete-timeout", Added: 18,
		Source: "kubernetes/kubernetes#85577 (merged for 1.18); rancher/system-upgrade-controller job.go (\"only available in kubectl version 1.18 or later\")"},
	{Name: "--delete-emptydir-data", Added: 20,
		Source: "kubernetes/kubernetes#95076 (1.20); rancher/system-upgrade-controller job.go (\"only available in kubectl version 1.20 or later\")"},
}

// KubectlVersion is a kubectl image's major.minor.patch, read from its tag.
type KubectlVersion struct {
	Major, Minor, Patch int
	Tag                 string
}

func (v KubectlVersion) String() string { return fmt.Sprintf("v%d.%d.%d", v.Major, v.Minor, v.Patch) }

var versionTag = lazyre.New(`^v?(\d+)\.(\d+)(?:\.(\d+))?`)

// ParseKubectlTag reads "v1.30.3", "1.18.3", "v1.30.3-rancher1" style tags; false for
// anything else (latest, a digest-only reference, a name without a tag).
func ParseKubectlTag(tag string) (KubectlVersion, bool) {
	m := versionTag().FindStringSubmatch(tag)
	if m == nil {
		return KubectlVersion{}, false
	}
	v := KubectlVersion{Tag: tag}
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v, v.Major == 1
}

// FlagProblem is a drain flag the kubectl version cannot take (or warns about).
type FlagProblem struct {
	Flag DrainFlag
	// Why: "unknown" (added later), "removed", "deprecated".
	Why string
}

func (p FlagProblem) String() string {
	switch p.Why {
	case "unknown":
		return fmt.Sprintf("%s needs kubectl 1.%d or later", p.Flag.Name, p.Flag.Added)
	case "removed":
		return fmt.Sprintf("%s was removed in kubectl 1.%d (use %s)", p.Flag.Name, p.Flag.Removed, p.Flag.Replacement)
	}
	return fmt.Sprintf("%s is deprecated since kubectl 1.%d (use %s)", p.Flag.Name, p.Flag.Deprecated, p.Flag.Replacement)
}

// CheckDrainArgs judges drain arguments against a kubectl version.
func CheckDrainArgs(args []string, v KubectlVersion) []FlagProblem {
	var out []FlagProblem
	seen := map[string]bool{}
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") || seen[name] {
			continue
		}
		seen[name] = true
		for _, f := range DrainFlags {
			if f.Name != name {
				continue
			}
			switch {
			case v.Minor < f.Added:
				out = append(out, FlagProblem{f, "unknown"})
			case f.Removed > 0 && v.Minor >= f.Removed:
				out = append(out, FlagProblem{f, "removed"})
			case f.Deprecated > 0 && v.Minor >= f.Deprecated:
				out = append(out, FlagProblem{f, "deprecated"})
			}
		}
	}
	return out
}
