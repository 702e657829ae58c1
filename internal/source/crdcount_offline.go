package source

import (
	"fmt"
	"sort"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

// maxCRDCounts bounds the counts one cluster's metadata may give: a cluster has hundreds of
// CRDs, not millions, and a bundle is untrusted.
const maxCRDCounts = 10_000

// crdObjects takes the object counts a bundle's metadata records for cluster. A count that
// cannot be one (negative, beyond MaxCRDObjects, a CRD without a name) is ignored and said.
func (l *loader) crdObjects(cluster string, counts map[string]int) {
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	bad := func(msg string) {
		l.b.Error(finding.ScanError{Cluster: cluster, File: BundleInfoFile, Message: "bundle metadata: " + msg})
	}
	if len(names) > maxCRDCounts {
		bad(fmt.Sprintf("crdObjects holds %d counts, more than the %d a cluster's CRDs can have: ignored", len(names), maxCRDCounts))
		return
	}
	for _, name := range names {
		n := counts[name]
		switch {
		case name == "" || len(name) > 253:
			bad(fmt.Sprintf("crdObjects: a count for %q, which is no CRD name: ignored", textsafe.ClipRunes(name, 64)))
		case n < 0 || n >= MaxCRDObjects:
			bad(fmt.Sprintf("crdObjects: %d objects of CRD %q is no count of objects: ignored", n, name))
		default:
			l.b.SetCRDObjects(cluster, name, n)
		}
	}
}
