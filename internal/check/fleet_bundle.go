package check

import (
	"fmt"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/textsafe"
)

// bdMessage is the most telling message a BundleDeployment carries: a False Deployed or
// Ready condition's message, else the display message.
func bdMessage(bd *snapshot.BundleDeployment) string {
	for _, typ := range []string{"Deployed", "Installed", "Ready", "Monitored"} {
		if c := fleet.Condition(bd.Status.Conditions, typ); c != nil && string(c.Status) == "False" && c.Message != "" {
			return c.Message
		}
	}
	return ""
}

// fleetBundles reports BundleDeployments in the states that stall a rollout, using the order
// Fleet's own summary uses (ErrApplied, WaitApplied, NotReady, Modified).
var fleetBundles = Check{
	Name:  "fleet/bundle-deployments",
	Emits: []string{"fleet/bundle-err-applied", "fleet/bundle-wait-applied-stuck", "fleet/bundle-not-ready", "fleet/bundle-modified"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		waitAfter := ctx.Thresholds.Duration("fleet.bundleWaitAppliedAfter")
		notReadyAfter := ctx.Thresholds.Duration("fleet.bundleNotReadyAfter")
		for _, m := range ctx.Snap.Management() {
			ix := newFleetIndex(m)
			byNS := bdsByNamespace(m)
			mods := newModifiedIndex(m.BundleDeployments)
			for _, bd := range m.BundleDeployments {
				fc := ix.forBD(m, bd)
				target := bd.Namespace
				fleetRef := "ns:" + bd.Namespace
				if fc != nil {
					target = clusterName(ctx.Snap, fc)
					fleetRef = fc.Namespace + "/" + fc.Name
				}
				bundle := fleet.BundleName(bd)
				st := fleet.BDState(bd)
				msg := bdMessage(bd)
				mk := func(id, summary string, since time.Time) finding.Finding {
					f := ctx.New(id, m, bdRef(bd), summary)
					f.Affects = target
					f.Keys = []string{BundleKey(fleetRef, bundle)}
					if fleet.IsAgentBundle(bundle) {
						f.Keys = append(f.Keys, AgentKey(fleetRef))
					}
					f.Evidence = bdEvidence(m, bd, st, msg)
					awaitWorkloads(&f, ctx.Snap.Cluster(target), msg)
					f.Since = timePtr(since)
					f.Vars = map[string]string{"bundle": bundle, "fleet-namespace": bd.Labels.Get(fleet.LabelBundleNamespace)}
					if fc != nil && fleet.IsAgentBundle(bundle) {
						f.Vars = agentVars(fc)
						f.Vars["bundle"] = bundle
					}
					return f
				}
				if waitsForDependency(bd, byNS[bd.Namespace]) {
					continue // fleet/dependency-blocked: a symptom of the bundle it waits for
				}
				// A refused install or apply is an error at once: Fleet's retry replays it.
				if r, cond, ok := bdRefusal(bd); ok && st != fleet.StateReady && !bd.Spec.Paused {
					out = append(out, refusedBundle(ctx, m, bd, target, r, cond, mk))
					continue
				}
				switch st {
				case fleet.StateErrApplied:
					since := bdConditionTime(bd, "Deployed")
					f := mk("fleet/bundle-err-applied", fmt.Sprintf("bundle %s cannot be applied on cluster %s: %s", bundle, target, orDash(firstLine(msg))), since)
					f.Signature = "err-applied|" + genericBundle(bundle) + "|" + classify.Signature(msg)
					out = append(out, f)
				case fleet.StateWaitApplied:
					if bd.Spec.Paused || bd.Spec.OffSchedule {
						// The agent deliberately leaves paused and off-schedule
						// BundleDeployments alone (rancher/fleet agent bundledeployment
						// controller): waiting is what they are meant to do.
						continue
					}
					since := waitAppliedSince(m, bd, fc)
					if since.IsZero() || ctx.Age(since) < waitAfter {
						continue
					}
					f := mk("fleet/bundle-wait-applied-stuck", fmt.Sprintf("bundle %s has waited %s to be applied on cluster %s (the agent has not picked it up)", bundle, human(ctx.Age(since)), target), since)
					f.Signature = "wait-applied|" + genericBundle(bundle)
					out = append(out, f)
				case fleet.StateNotReady:
					since := bdConditionTime(bd, "Ready")
					if since.IsZero() || ctx.Age(since) < notReadyAfter {
						continue
					}
					f := mk("fleet/bundle-not-ready", fmt.Sprintf("bundle %s is applied on cluster %s but not ready for %s%s", bundle, target, human(ctx.Age(since)), suffix(": ", notReadySummary(bd))), since)
					f.Signature = "not-ready|" + genericBundle(bundle) + "|" + classify.Signature(notReadySummary(bd))
					out = append(out, f)
				case fleet.StateModified:
					f := mk("fleet/bundle-modified", fmt.Sprintf("bundle %s on cluster %s was modified outside Fleet%s", bundle, target, suffix(": ", modifiedSummary(bd))), time.Time{})
					if a, ok := mods.artefact(bd); ok {
						markArtefact(&f, sourceOf(m, bdRef(bd)), bundle, target, a)
					}
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

// waitAppliedSince is a moment by which a BundleDeployment was certainly already waiting for
// the agent to apply its revision. Its own conditions cannot tell: while it waits, nothing has touched
// them since the agent applied the previous revision (Deployed=True, often weeks old), so
// they would make every fresh rollout look stuck. What does change when the controller hands
// out a new deploymentID is the Ready condition of the Bundle ("WaitApplied(1) [Cluster …]")
// and of the target Cluster ("WaitApplied(1) [Bundle …]"): Fleet (wrangler) bumps their
// lastUpdateTime whenever the message changes, so each is at or after the moment the wait
// began. The earlier of the two is therefore still a safe lower bound of the wait. Zero when
// neither was collected: the wait cannot be timed and is not reported.
func waitAppliedSince(m *snapshot.Cluster, bd *snapshot.BundleDeployment, fc *fleetv1.Cluster) time.Time {
	var ts []time.Time
	if b := bundleOf(m, bd); b != nil {
		if c := fleet.Condition(b.Status.Conditions, "Ready"); c != nil && string(c.Status) == "False" {
			ts = append(ts, latest(snapshot.ParseTime(c.LastUpdateTime), snapshot.ParseTime(c.LastTransitionTime)))
		}
	}
	if fc != nil {
		if c := fleet.Condition(fc.Status.Conditions, "Ready"); c != nil && string(c.Status) == "False" {
			ts = append(ts, latest(snapshot.ParseTime(c.LastUpdateTime), snapshot.ParseTime(c.LastTransitionTime)))
		}
	}
	return earliest(ts...)
}

// bundleOf returns the Bundle a BundleDeployment was made from, if it was collected.
func bundleOf(m *snapshot.Cluster, bd *snapshot.BundleDeployment) *fleetv1.Bundle {
	name, ns := fleet.BundleName(bd), bd.Labels.Get(fleet.LabelBundleNamespace)
	for _, b := range m.Bundles {
		if b.Name == name && (ns == "" || b.Namespace == ns) {
			return b
		}
	}
	return nil
}

// contentRef matches Fleet's message for a BundleDeployment whose manifest Content is gone.
// Source: rancher/fleet agent deployer — contents.fleet.cattle.io "s-…" not found.
var contentRef = lazyre.New(`contents\.fleet\.cattle\.io "?(s-[0-9a-f]+)"? not found`)

// fleetContent reports BundleDeployments whose Content object (the manifest the agent
// downloads, named after the first half of the deployment ID) does not exist.
var fleetContent = Check{
	Name:  "fleet/content",
	Emits: []string{"fleet/content-missing"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, m := range ctx.Snap.Management() {
			ix := newFleetIndex(m)
			for _, bd := range m.BundleDeployments {
				content := ""
				var evidence []finding.Evidence
				for _, text := range bdTexts(bd) {
					if mm := contentRef().FindStringSubmatch(text); mm != nil {
						content = mm[1]
						evidence = append(evidence, ev(sourceOf(m, bdRef(bd)), "%s", firstLine(text)))
						break
					}
				}
				// Without an error message, judge by the Contents that were read — but only for a
				// revision the agent still has to download: once applied, the agent never reads
				// the Content again (Fleet garbage-collects old ones), and BundleDeployments with
				// OCI storage or from a HelmOp carry no Content at all.
				if content == "" && len(m.Contents) > 0 && needsContent(bd) {
					id, _, _ := strings.Cut(bd.Spec.DeploymentID, ":")
					if id != "" && !m.HasContent(id) {
						content = id
						evidence = append(evidence, ev(sourceOf(m, bdRef(bd)), "spec.deploymentID=%s but no Content %s among the %d read", shortID(bd.Spec.DeploymentID), id, len(m.Contents)))
					}
				}
				if content == "" {
					continue
				}
				target, fleetRef := bdTarget(ctx, ix, m, bd)
				bundle := fleet.BundleName(bd)
				f := ctx.New("fleet/content-missing", m, bdRef(bd), fmt.Sprintf("bundle %s cannot be deployed on cluster %s: its Content %s does not exist", bundle, target, content))
				f.Affects = target
				f.Keys = []string{BundleKey(fleetRef, bundle)}
				if fleet.IsAgentBundle(bundle) {
					f.Keys = append(f.Keys, AgentKey(fleetRef))
				}
				f.Evidence = evidence
				f.Signature = "content-missing|" + genericBundle(bundle)
				out = append(out, f)
			}
		}
		return out, nil
	},
}

// needsContent reports whether the agent must still fetch a Content object for the
// BundleDeployment's current deploymentID.
func needsContent(bd *snapshot.BundleDeployment) bool {
	if bd.Spec.OCIContents || bd.Spec.HelmChartOptions != nil {
		return false
	}
	return bd.Spec.DeploymentID != "" && bd.Status.AppliedDeploymentID != bd.Spec.DeploymentID
}

func bdTexts(bd *snapshot.BundleDeployment) []string {
	var out []string
	for _, c := range bd.Status.Conditions {
		if c.Message != "" {
			out = append(out, c.Message)
		}
	}
	return out
}

// genericBundle drops the cluster from an agent bundle's name, so that the same agent release
// problem on many clusters has one signature.
func genericBundle(name string) string {
	if fleet.IsAgentBundle(name) {
		return "fleet-agent"
	}
	return name
}

func bdEvidence(m *snapshot.Cluster, bd *snapshot.BundleDeployment, st, msg string) []finding.Evidence {
	src := sourceOf(m, bdRef(bd))
	out := []finding.Evidence{ev(src, "state=%s deploymentID=%s appliedDeploymentID=%s ready=%t nonModified=%t",
		st, shortID(bd.Spec.DeploymentID), orDash(shortID(bd.Status.AppliedDeploymentID)), bd.Status.Ready, bd.Status.NonModified)}
	if msg != "" {
		out = append(out, ev(src, "%s", msg))
	}
	return out
}

// notReadySummary and modifiedSummary use Fleet's own rendering of the first few resources.
func notReadySummary(bd *snapshot.BundleDeployment) string {
	var parts []string
	for i, st := range bd.Status.NonReadyStatus {
		if i == 3 {
			break
		}
		parts = append(parts, strings.TrimSpace(st.String()))
	}
	return strings.Join(parts, "; ")
}

func modifiedSummary(bd *snapshot.BundleDeployment) string {
	var parts []string
	for i, st := range bd.Status.ModifiedStatus {
		if i == 3 {
			break
		}
		parts = append(parts, st.String())
	}
	return strings.Join(parts, "; ")
}

func suffix(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return textsafe.ClipWords(s, 300)
}

// bdTarget names the downstream cluster a BundleDeployment is for, and the key of its Fleet
// Cluster ("ns:<namespace>" when no Fleet Cluster owns the namespace).
func bdTarget(ctx *Context, ix fleetIndex, m *snapshot.Cluster, bd *snapshot.BundleDeployment) (target, fleetRef string) {
	if fc := ix.forBD(m, bd); fc != nil {
		return clusterName(ctx.Snap, fc), fc.Namespace + "/" + fc.Name
	}
	return bd.Namespace, "ns:" + bd.Namespace
}
