package check

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// knownRegression is an upstream bug, fixed in a release, that stops upgrades: when the
// running version is in an affected range and a finding shows its signature, the finding
// cites it, so the fix is "upgrade Fleet", not a workaround repeated on every commit.
type knownRegression struct {
	Issue string // "rancher/fleet#3138"
	What  string // what the user sees, in a few words
	// Ranges are the affected fleet-controller versions, one per release line:
	// from From up to, not including, Fixed (the first release of that line with the fix).
	Ranges []versionRange
	// Signatures are finding signatures (or their prefixes) that show it; a finding without a
	// signature is matched by its ID.
	Signatures []string
}

type versionRange struct{ From, Fixed string }

// knownRegressions is the reviewed table; each entry's ranges are the release tags of
// rancher/fleet that hold (or lack) the fixing commit, named in the comment. Rancher ships
// Fleet as its fleet chart, so the fleet-controller image tag is the version compared.
func knownRegressions() []knownRegression {
	return []knownRegression{
		{
			// Reported after Fleet v0.10.4 (Rancher 2.9.3): GitRepos stop polling and no
			// gitjob is created until the GitRepo is edited. Fixed by "Always returns result
			// with RequeueAfter set": #3239 in v0.10.9, #3257 in v0.11.4, #3307 in v0.12.0.
			Issue:      "rancher/fleet#3138",
			What:       "GitRepos stop polling and no gitjob is created",
			Ranges:     []versionRange{{"0.10.4", "0.10.9"}, {"0.11.0", "0.11.4"}},
			Signatures: []string{"gitrepo-not-syncing|stale"},
		},
		{
			// A gitjob whose creation fails (a missing Helm secret, a quota, an admission
			// webhook) advances status.commit anyway, so the commit is never retried after
			// the cause is fixed. Introduced with the polling scheduler (#4257, v0.14.0);
			// fixed by "Restore status fields when gitjob creation fails" (#4949): v0.14.7,
			// v0.15.1, v0.16.0.
			Issue:  "rancher/fleet#4948",
			What:   "a commit whose gitjob could not be created is never retried",
			Ranges: []versionRange{{"0.14.0", "0.14.7"}, {"0.15.0", "0.15.1"}},
			Signatures: []string{"gitrepo-not-syncing|stale", "gitrepo-not-syncing|quota",
				"gitrepo-not-syncing|secret", "gitrepo-not-syncing|admission"},
		},
		{
			// Fleet v0.15.0's Helm v4 rollbacks use server-side apply, so drift correction
			// (correctDrift without force) leaves changes made by other field managers in
			// place. Fixed by #4879: v0.15.1 (and v0.16.0).
			Issue:      "rancher/fleet#4878",
			What:       "drift correction does not revert changes made outside Fleet",
			Ranges:     []versionRange{{"0.15.0", "0.15.1"}},
			Signatures: []string{"fleet/bundle-modified"},
		},
	}
}

// citeRegressions adds to each finding on a management cluster the known regressions its
// fleet-controller's version is affected by and its signature shows.
func citeRegressions(s *snapshot.Snapshot, fs []finding.Finding) {
	if s == nil {
		return
	}
	table := knownRegressions()
	for i := range fs {
		m := s.Cluster(fs[i].Cluster)
		if m == nil || m.Role != snapshot.Management {
			continue
		}
		key := fs[i].Signature
		if key == "" {
			key = fs[i].ID
		}
		image, src := controllerImage(m)
		v, ok := parseFleetVersion(image)
		if !ok {
			continue
		}
		for _, r := range table {
			if fixed, ok := r.affects(v, key); ok {
				fs[i].Evidence = append(fs[i].Evidence, ev(src, "known regression %s (%s): fleet-controller %s is affected, fixed in v%s: upgrade Fleet", r.Issue, r.What, v, fixed))
			}
		}
	}
}

// affects reports whether version v with a finding of signature sig matches the regression,
// and the release of v's line that fixes it.
func (r knownRegression) affects(v fleetVersion, sig string) (string, bool) {
	shown := false
	for _, s := range r.Signatures {
		shown = shown || sig == s || strings.HasPrefix(sig, s+"|")
	}
	if !shown {
		return "", false
	}
	for _, rg := range r.Ranges {
		from, okFrom := parseFleetVersion("fleet:" + rg.From)
		fixed, okFixed := parseFleetVersion("fleet:" + rg.Fixed)
		if okFrom && okFixed && !v.less(from) && v.less(fixed) {
			return rg.Fixed, true
		}
	}
	return "", false
}

// String names a range for the docs.
func (r versionRange) String() string { return fmt.Sprintf("v%s – before v%s", r.From, r.Fixed) }
