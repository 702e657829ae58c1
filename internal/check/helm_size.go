package check

import (
	"fmt"
	"strconv"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// helmReleaseSize reports Helm releases whose next revision cannot be stored: the API server
// refuses a release Secret (or ConfigMap) whose data exceeds 1 MiB, so every upgrade fails
// before a revision is written (helm/helm#7126, #9788; rancher/fleet#1650 for bundles deployed
// by Fleet). Seen as the refusal quoted by a Fleet BundleDeployment or a release description,
// or foreseen from the newest record's size. Only sizes are read, never the record.
var helmReleaseSize = Check{
	Name:  "helm/release-size",
	Emits: []string{"helm/release-too-large"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		refused := map[string]bool{}
		for _, m := range ctx.Snap.Management() {
			for _, f := range refusedReleases(ctx, m) {
				refused[f.Vars["release"]] = true
				out = append(out, f)
			}
		}
		for _, c := range ctx.Snap.Clusters {
			for _, hist := range releaseHistories(c) {
				newest := hist[len(hist)-1]
				if refused[newest.Name] {
					continue
				}
				if f, ok := heavyRelease(ctx, c, newest); ok {
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

// releaseSecretName splits the refused storage object's name, sh.helm.release.v1.<name>.v<rev>.
var releaseSecretName = lazyre.New(`^sh\.helm\.release\.v1\.(.+)\.v(\d+)$`)

// refusedReleases are the BundleDeployments whose condition quotes the API's refusal of a
// release record for size.
func refusedReleases(ctx *Context, m *snapshot.Cluster) []finding.Finding {
	var out []finding.Finding
	ix := newFleetIndex(m)
	for _, bd := range m.BundleDeployments {
		for _, c := range bd.Status.Conditions {
			tl, ok := messages.ParseTooLarge(c.Message)
			if !ok || tl.Limit != messages.LimitObjectData {
				continue
			}
			out = append(out, oversizedRelease(ctx, ix, m, bd, string(c.Type), c.Message, tl))
			break
		}
	}
	return out
}

func oversizedRelease(ctx *Context, ix fleetIndex, m *snapshot.Cluster, bd *snapshot.BundleDeployment, cond, msg string, tl messages.TooLarge) finding.Finding {
	target, fleetRef := bdTarget(ctx, ix, m, bd)
	bundle := fleet.BundleName(bd)
	release, rev := bundle, ""
	if mm := releaseSecretName().FindStringSubmatch(tl.Name); mm != nil {
		release, rev = mm[1], mm[2]
	}
	f := ctx.New("helm/release-too-large", m, bdRef(bd), fmt.Sprintf("Helm release %s on cluster %s cannot store revision %s: its %s %s is over the API's %s limit on a %s's data, so every upgrade of bundle %s fails before it is written",
		release, target, orDash(rev), orDash(tl.Kind), orDash(tl.Name), mib(tl.LimitBytes), orDash(tl.Kind), bundle))
	f.Affects = target
	f.Keys = []string{BundleKey(fleetRef, bundle)}
	f.Evidence = []finding.Evidence{ev(sourceOf(m, bdRef(bd)), "condition %s: %s", cond, firstLine(msg))}
	if c := ctx.Snap.Cluster(target); c != nil {
		f.Keys = append(f.Keys, releaseSizeKeys(ctx, c, release)...)
		f.Evidence = append(f.Evidence, releaseSizeEvidence(c, release)...)
	}
	f.Signature = "release-too-large|" + genericBundle(bundle)
	f.Vars = map[string]string{"release": release, "bundle": bundle, "namespace": bd.Spec.Options.ReleaseNamespace()}
	return f
}

// heavyRelease is a release whose newest record is within 10 % of the 1 MiB data limit.
func heavyRelease(ctx *Context, c *snapshot.Cluster, r *helmrelease.Release) (finding.Finding, bool) {
	if float64(r.StoredBytes) < nearLimit*messages.ObjectDataBytes {
		return finding.Finding{}, false
	}
	tl := messages.TooLarge{Limit: messages.LimitObjectData, LimitBytes: messages.ObjectDataBytes, SizeBytes: r.StoredBytes}
	obj := ref("v1", "Secret", r.Namespace, r.SecretName)
	f := ctx.New("helm/release-too-large", c, obj, fmt.Sprintf("Helm release %s/%s revision %d is stored in %s, %s: the next revision may not fit",
		r.Namespace, r.Name, r.Revision, mib(r.StoredBytes), limitText(tl)))
	f.Severity = sizeSeverity(tl)
	f.Keys = releaseKeys(ctx.Snap, c, r)
	f.Evidence = releaseSizeEvidence(c, r.Name)
	f.Signature = "release-too-large|size"
	f.Vars = map[string]string{"release": r.Name, "namespace": r.Namespace, "rev": strconv.Itoa(r.Revision)}
	return f, true
}

// releaseSizeKeys ties the refusal to the release's own keys on the downstream cluster.
func releaseSizeKeys(ctx *Context, c *snapshot.Cluster, release string) []string {
	for _, hist := range releaseHistories(c) {
		if r := hist[len(hist)-1]; r.Name == release {
			return releaseKeys(ctx.Snap, c, r)
		}
	}
	return nil
}

// releaseSizeEvidence lists the size of each stored revision of a release, newest last.
func releaseSizeEvidence(c *snapshot.Cluster, release string) []finding.Evidence {
	var out []finding.Evidence
	for _, hist := range releaseHistories(c) {
		if hist[0].Name != release {
			continue
		}
		for _, r := range hist[max(0, len(hist)-5):] {
			if r.StoredBytes > 0 {
				out = append(out, ev(sourceOf(c, ref("v1", "Secret", r.Namespace, r.SecretName)), "revision %d (%s): %d bytes stored of %d allowed", r.Revision, r.Status, r.StoredBytes, messages.ObjectDataBytes))
			}
		}
	}
	return out
}
