package check

import (
	"fmt"
	"sort"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// fleetTargeting reports Bundles that the controller does not turn into BundleDeployments
// for the clusters they target: a "targeting error" on the Bundle, fewer BundleDeployments
// than the Bundle's summary says it targets, or BundleDeployments left on an older manifest
// than their siblings (rancher/fleet#4028, #4283). The commit reached the Bundle and goes no
// further, while every BundleDeployment that exists may be Ready.
var fleetTargeting = Check{
	Name:  "fleet/targeting",
	Emits: []string{"fleet/bundle-not-targeted"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("fleet.bundleTargetingAfter")
		for _, m := range ctx.Snap.Management() {
			bds := bdsByBundle(m)
			for _, b := range m.Bundles {
				if b.Spec.Paused {
					continue
				}
				mine := bds[b.Namespace+"/"+b.Name]
				for _, judge := range []func(*Context, *snapshot.Cluster, *fleetv1.Bundle, []*snapshot.BundleDeployment, time.Duration) (finding.Finding, bool){deletionHeld, targetingError, missingDeployments, staleManifests} {
					if f, ok := judge(ctx, m, b, mine, after); ok {
						out = append(out, f)
						break
					}
				}
			}
		}
		return out, nil
	},
}

func bdsByBundle(m *snapshot.Cluster) map[string][]*snapshot.BundleDeployment {
	out := map[string][]*snapshot.BundleDeployment{}
	for _, bd := range m.BundleDeployments {
		k := bd.Labels.Get(fleet.LabelBundleNamespace) + "/" + fleet.BundleName(bd)
		out[k] = append(out[k], bd)
	}
	return out
}

// deletionHeld is a Bundle deleted longer ago than the threshold and still there, held by
// its finalizers (rancher/fleet#3881, #2768): the controller neither finishes deleting it nor
// reconciles it, and the gitjob cannot write a Bundle of that name again until it is gone.
// Its BundleDeployments still being deleted are named: their finalizer is what usually holds.
func deletionHeld(ctx *Context, m *snapshot.Cluster, b *fleetv1.Bundle, bds []*snapshot.BundleDeployment, after time.Duration) (finding.Finding, bool) {
	if b.DeletionTimestamp == nil || ctx.Age(b.DeletionTimestamp.Time) < after {
		return finding.Finding{}, false
	}
	since := b.DeletionTimestamp.Time
	f := targetingFinding(ctx, m, b, fmt.Sprintf("bundle %s/%s was deleted %s ago and is still held by finalizer(s) %s: its clusters get neither its removal nor a new version", b.Namespace, b.Name, human(ctx.Age(since)), orNone(b.Finalizers)), since)
	f.Evidence = []finding.Evidence{ev(sourceOf(m, bundleObjRef(b)), "metadata.deletionTimestamp=%s finalizers=%s", since.UTC().Format(time.RFC3339), orNone(b.Finalizers))}
	held := 0
	for _, bd := range bds {
		if bd.DeletionTimestamp == nil {
			continue
		}
		if held++; held <= 5 {
			f.Evidence = append(f.Evidence, ev(sourceOf(m, bdRef(bd)), "BundleDeployment being deleted since %s", bd.DeletionTimestamp.UTC().Format(time.RFC3339)))
		}
	}
	if held > 5 {
		f.Evidence = append(f.Evidence, ev(sourceOf(m, bundleObjRef(b)), "%d more BundleDeployments of it being deleted", held-5))
	}
	f.Signature = "bundle-not-targeted|deletion-held"
	f.Remediation = deletionHeldSteps(f.Remediation, b, bds)
	return f, true
}

// deletionHeldSteps keeps the catalogue's look and restart rungs for a Bundle held by its
// finalizers (a force-sync of an object being deleted does nothing) and adds the manual way
// out Fleet's maintainers give, marked for what it skips.
func deletionHeldSteps(steps []finding.Step, b *fleetv1.Bundle, bds []*snapshot.BundleDeployment) []finding.Step {
	var out []finding.Step
	for _, st := range steps {
		switch st.Rung {
		case "resync":
			continue
		case "restart":
			st.Action = "Restart the controller: once a Bundle's BundleDeployments are gone its reconciler removes the Bundle's finalizer."
		}
		out = append(out, st)
	}
	const unfinalize = `--type merge -p '{"metadata":{"finalizers":[]}}'`
	var cmds []string
	var notes []string
	held := 0
	for _, bd := range bds {
		if bd.DeletionTimestamp == nil {
			continue
		}
		if held++; held <= 10 {
			cmds = append(cmds, fmt.Sprintf("kubectl -n %s patch bundledeployments.fleet.cattle.io %s %s", bd.Namespace, bd.Name, unfinalize))
		}
	}
	if held > 10 {
		notes = append(notes, fmt.Sprintf("%d more BundleDeployments of the Bundle are being deleted: list them with kubectl get bundledeployments.fleet.cattle.io -A -l fleet.cattle.io/bundle-name=%s,fleet.cattle.io/bundle-namespace=%s", held-10, b.Name, b.Namespace))
	}
	cmds = append(cmds, fmt.Sprintf("kubectl -n %s patch bundles.fleet.cattle.io %s %s", b.Namespace, b.Name, unfinalize))
	notes = append(notes, "Removing a finalizer skips what it guards: the BundleDeployment's finalizer is how the agent is told to uninstall the bundle's release downstream. Remove it only for clusters that are gone or where the release is to stay.")
	return append(out, finding.Step{
		Rung:     "repair",
		Action:   "If the restarted controller still leaves the Bundle and its BundleDeployments, remove their finalizers by hand, BundleDeployments first.",
		Risk:     "high",
		Commands: cmds,
		Notes:    notes,
	})
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// targetingError is the controller's "targeting error: …" on the Bundle's Ready condition
// (rancher/fleet internal/cmd/controller/reconciler/bundle_controller.go).
func targetingError(ctx *Context, m *snapshot.Cluster, b *fleetv1.Bundle, _ []*snapshot.BundleDeployment, after time.Duration) (finding.Finding, bool) {
	c := fleet.Condition(b.Status.Conditions, "Ready")
	if c == nil || !strings.Contains(c.Message, "targeting error") {
		return finding.Finding{}, false
	}
	since := earliest(snapshot.ParseTime(c.LastTransitionTime), snapshot.ParseTime(c.LastUpdateTime))
	if !since.IsZero() && ctx.Age(since) < after {
		return finding.Finding{}, false
	}
	f := targetingFinding(ctx, m, b, fmt.Sprintf("bundle %s/%s cannot compute the clusters it targets: %s", b.Namespace, b.Name, firstLine(c.Message)), since)
	f.Evidence = []finding.Evidence{ev(sourceOf(m, bundleObjRef(b)), "condition Ready=%s: %s", c.Status, firstLine(c.Message))}
	f.Signature = "bundle-not-targeted|targeting-error"
	return f, true
}

// missingDeployments is a Bundle whose summary counts more targets (desiredReady) than there
// are BundleDeployments made from it.
func missingDeployments(ctx *Context, m *snapshot.Cluster, b *fleetv1.Bundle, bds []*snapshot.BundleDeployment, after time.Duration) (finding.Finding, bool) {
	want := b.Status.Summary.DesiredReady
	if want <= len(bds) {
		return finding.Finding{}, false
	}
	since := bundleChanged(b)
	if since.IsZero() || ctx.Age(since) < after {
		return finding.Finding{}, false
	}
	f := targetingFinding(ctx, m, b, fmt.Sprintf("bundle %s/%s targets %d clusters but only %d BundleDeployments exist, %s after it last changed", b.Namespace, b.Name, want, len(bds), human(ctx.Age(since))), since)
	f.Evidence = []finding.Evidence{ev(sourceOf(m, bundleObjRef(b)), "status.summary.desiredReady=%d ready=%d; %d BundleDeployments labelled fleet.cattle.io/bundle-name=%s", want, b.Status.Summary.Ready, len(bds), b.Name)}
	f.Signature = "bundle-not-targeted|missing"
	return f, true
}

// staleManifests are BundleDeployments whose staged manifest (the part of the deployment ID
// before the colon, the same for every cluster of a Bundle) is not the one most of their
// siblings have: the controller updated the others and not them.
func staleManifests(ctx *Context, m *snapshot.Cluster, b *fleetv1.Bundle, bds []*snapshot.BundleDeployment, after time.Duration) (finding.Finding, bool) {
	current, stale := manifestMajority(bds)
	since := bundleChanged(b)
	if len(stale) == 0 || since.IsZero() || ctx.Age(since) < after {
		return finding.Finding{}, false
	}
	f := targetingFinding(ctx, m, b, fmt.Sprintf("bundle %s/%s: %d of its %d BundleDeployments are still on an older manifest than %s, %s after the Bundle last changed", b.Namespace, b.Name, len(stale), len(bds), current, human(ctx.Age(since))), since)
	for _, bd := range firstN(stale, 5) {
		f.Evidence = append(f.Evidence, ev(sourceOf(m, bdRef(bd)), "stagedDeploymentID=%s deploymentID=%s (siblings: %s)", shortID(staged(bd)), shortID(bd.Spec.DeploymentID), current))
	}
	f.Signature = "bundle-not-targeted|stale"
	return f, true
}

func staged(bd *snapshot.BundleDeployment) string {
	if bd.Spec.StagedDeploymentID != "" {
		return bd.Spec.StagedDeploymentID
	}
	return bd.Spec.DeploymentID
}

// manifestMajority is the staged manifest ID most BundleDeployments of a Bundle share (more
// than half of them), and those that have another. No majority, no verdict.
func manifestMajority(bds []*snapshot.BundleDeployment) (string, []*snapshot.BundleDeployment) {
	count := map[string]int{}
	for _, bd := range bds {
		id, _, _ := strings.Cut(staged(bd), ":")
		count[id]++
	}
	var ids []string
	for id := range count {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		return count[ids[i]] > count[ids[j]] || count[ids[i]] == count[ids[j]] && ids[i] < ids[j]
	})
	if len(ids) < 2 || 2*count[ids[0]] <= len(bds) || ids[0] == "" {
		return "", nil
	}
	var stale []*snapshot.BundleDeployment
	for _, bd := range bds {
		if id, _, _ := strings.Cut(staged(bd), ":"); id != ids[0] {
			stale = append(stale, bd)
		}
	}
	return ids[0], stale
}

// bundleChanged is the last time the Bundle's status says it changed: its Ready condition's
// last update, else its creation.
func bundleChanged(b *fleetv1.Bundle) time.Time {
	if c := fleet.Condition(b.Status.Conditions, "Ready"); c != nil {
		if t := latest(snapshot.ParseTime(c.LastUpdateTime), snapshot.ParseTime(c.LastTransitionTime)); !t.IsZero() {
			return t
		}
	}
	return b.CreationTimestamp.Time
}

func targetingFinding(ctx *Context, m *snapshot.Cluster, b *fleetv1.Bundle, summary string, since time.Time) finding.Finding {
	f := ctx.New("fleet/bundle-not-targeted", m, bundleObjRef(b), summary)
	f.Keys = []string{BundleObjectKey(m.Name, b.Namespace, b.Name)}
	f.Since = timePtr(since)
	f.Vars = map[string]string{"bundle": b.Name, "fleet-namespace": b.Namespace,
		"n+1@bundles.fleet.cattle.io": fmt.Sprint(b.Spec.ForceSyncGeneration + 1)}
	return f
}

// BundleObjectKey ties findings about one Bundle object on the management cluster (not one
// of its BundleDeployments, which BundleKey names per target cluster).
func BundleObjectKey(cluster, namespace, name string) string {
	return "fleetbundle:" + cluster + "/" + namespace + "/" + name
}
