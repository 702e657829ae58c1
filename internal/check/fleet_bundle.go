package check

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// bdMessage is the most telling message a BundleDeployment carries: a False Deployed or
// Ready condition's message, else the display message.
func bdMessage(bd *fleetv1.BundleDeployment) string {
	for _, typ := range []string{"Deployed", "Ready", "Monitored"} {
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
					f.Since = timePtr(since)
					return f
				}
				switch st {
				case fleet.StateErrApplied:
					since := bdConditionTime(bd, "Deployed")
					f := mk("fleet/bundle-err-applied", fmt.Sprintf("bundle %s cannot be applied on cluster %s: %s", bundle, target, orDash(firstLine(msg))), since)
					f.Signature = "err-applied|" + genericBundle(bundle) + "|" + classify.Signature(msg)
					out = append(out, f)
				case fleet.StateWaitApplied:
					since := earliest(bdConditionTime(bd, "Deployed"), bdConditionTime(bd, "Ready"))
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
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

// contentRef matches Fleet's message for a BundleDeployment whose manifest Content is gone.
// Source: rancher/fleet agent deployer — contents.fleet.cattle.io "s-…" not found.
var contentRef = regexp.MustCompile(`contents\.fleet\.cattle\.io "?(s-[0-9a-f]+)"? not found`)

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
					if mm := contentRef.FindStringSubmatch(text); mm != nil {
						content = mm[1]
						evidence = append(evidence, ev(sourceOf(m, bdRef(bd)), "%s", firstLine(text)))
						break
					}
				}
				if content == "" && len(m.Contents) > 0 {
					id, _, _ := strings.Cut(bd.Spec.DeploymentID, ":")
					if id != "" && !m.HasContent(id) {
						content = id
						evidence = append(evidence, ev(sourceOf(m, bdRef(bd)), "spec.deploymentID=%s but no Content %s among the %d read", shortID(bd.Spec.DeploymentID), id, len(m.Contents)))
					}
				}
				if content == "" {
					continue
				}
				fc := ix.forBD(m, bd)
				target, fleetRef := bd.Namespace, "ns:"+bd.Namespace
				if fc != nil {
					target, fleetRef = clusterName(ctx.Snap, fc), fc.Namespace+"/"+fc.Name
				}
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

func bdTexts(bd *fleetv1.BundleDeployment) []string {
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

func bdEvidence(m *snapshot.Cluster, bd *fleetv1.BundleDeployment, st, msg string) []finding.Evidence {
	src := sourceOf(m, bdRef(bd))
	out := []finding.Evidence{ev(src, "state=%s deploymentID=%s appliedDeploymentID=%s ready=%t nonModified=%t",
		st, shortID(bd.Spec.DeploymentID), orDash(shortID(bd.Status.AppliedDeploymentID)), bd.Status.Ready, bd.Status.NonModified)}
	if msg != "" {
		out = append(out, ev(src, "%s", msg))
	}
	return out
}

// notReadySummary and modifiedSummary use Fleet's own rendering of the first few resources.
func notReadySummary(bd *fleetv1.BundleDeployment) string {
	var parts []string
	for i, st := range bd.Status.NonReadyStatus {
		if i == 3 {
			break
		}
		parts = append(parts, strings.TrimSpace(st.String()))
	}
	return strings.Join(parts, "; ")
}

func modifiedSummary(bd *fleetv1.BundleDeployment) string {
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
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
