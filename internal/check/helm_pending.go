package check

import (
	"fmt"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A pending release is measured across Fleet's rollback-and-retry loop. On "another operation
// (install/upgrade/rollback) is in progress" the agent rolls the release back without a
// version and upgrades again. Helm's Rollback writes revision N+1 pending-rollback ("Rollback
// to N-1", last_deployed now) before it builds the current manifest, and returns without
// marking it failed when that fails; its MaxHistory is 0, so nothing is pruned. Each retry,
// spaced by controller-runtime's backoff, adds one young pending revision while the release has
// been stuck since the first one (fleet#637, helm#12516).

// pendingRun is the unbroken run of pending-* revisions that ends with the newest, oldest
// first; empty when the newest is not pending.
func pendingRun(hist []*helmrelease.Release) []*helmrelease.Release {
	i := len(hist)
	for i > 0 && hist[i-1].IsPending() {
		i--
	}
	return hist[i:]
}

// runStart is when the run began: the earliest time recorded by any of its revisions (the
// first one's, unless its record was unreadable and it has no storage label time).
func runStart(run []*helmrelease.Release) time.Time {
	var t time.Time
	for _, r := range run {
		t = earliest(t, r.Since())
	}
	return t
}

func pendingSummary(ctx *Context, newest *helmrelease.Release, run []*helmrelease.Release, since time.Time) string {
	const refuses = "Helm refuses every other operation on it (\"another operation (install/upgrade/rollback) is in progress\")"
	if len(run) == 1 {
		return fmt.Sprintf("Helm release %s/%s revision %d has been %s for %s; %s",
			newest.Namespace, newest.Name, newest.Revision, newest.Status, human(ctx.Age(since)), refuses)
	}
	first := run[0]
	return fmt.Sprintf("Helm release %s/%s has been pending for %s, since revision %d (%s, %s): %d retries since, each a new pending revision, the newest revision %d (%s) %s old; %s",
		newest.Namespace, newest.Name, human(ctx.Age(since)), first.Revision, first.Status, timeOrDash(first.Since()),
		len(run)-1, newest.Revision, newest.Status, human(ctx.Age(newest.Since())), refuses)
}

// pendingEvidence quotes the start of the run first, then the newest revisions and the last
// one that was deployed.
func pendingEvidence(c *snapshot.Cluster, hist, run []*helmrelease.Release) []finding.Evidence {
	if len(run) < 2 {
		return releaseEvidence(c, hist)
	}
	first := run[0]
	out := []finding.Evidence{{
		Source: sourceOf(c, ref("v1", "Secret", first.Namespace, first.SecretName)),
		Text:   fmt.Sprintf("first pending revision of an unbroken run of %d (Secret %s): %s", len(run), first.SecretName, revisionText(first)),
	}}
	for _, e := range releaseEvidence(c, hist) {
		if len(out) == 4 {
			break
		}
		if e.Source != out[0].Source {
			out = append(out, e)
		}
	}
	if d := lastWithStatus(hist, helmrelease.StatusDeployed); d != nil {
		out = append(out, finding.Evidence{Source: sourceOf(c, ref("v1", "Secret", d.Namespace, d.SecretName)), Text: "last deployed " + revisionText(d)})
	}
	return out
}
