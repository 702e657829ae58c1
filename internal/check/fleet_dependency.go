package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// dependencyWait is the agent's refusal to deploy a bundle whose dependsOn is not Ready
// (rancher/fleet internal/cmd/agent/deployer NotReadyDependenciesError): the names are the
// BundleDeployments it waits for, as Go prints a []string.
var dependencyWait = lazyre.New(`dependent bundle\(s\) are not ready: \[([^\]]*)\]`)

// fleetDependencies reports bundles held by a dependsOn on a bundle that is not Ready. Fleet
// shows every dependent as ErrApplied, an error of its own (rancher/fleet#3575, #3341); the
// one thing wrong is the upstream bundle, so the dependent is reported as a warning that
// carries the upstream's bundle key: the upstream's own finding on that cluster is the
// incident's root cause and the dependents its symptoms.
var fleetDependencies = Check{
	Name:  "fleet/dependencies",
	Emits: []string{"fleet/dependency-blocked"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		after := ctx.Thresholds.Duration("fleet.dependencyBlockedAfter")
		for _, m := range ctx.Snap.Management() {
			ix := newFleetIndex(m)
			byNS := bdsByNamespace(m)
			for _, bd := range m.BundleDeployments {
				deps, msg := blockingDependencies(m, bd, byNS[bd.Namespace])
				if len(deps) == 0 {
					continue
				}
				since := earliest(bdConditionTime(bd, "Deployed"), bdConditionTime(bd, "Ready"))
				if since.IsZero() || ctx.Age(since) < after {
					continue
				}
				out = append(out, dependencyFinding(ctx, ix, m, bd, deps, msg, since))
			}
		}
		return out, nil
	},
}

func bdsByNamespace(m *snapshot.Cluster) map[string][]*snapshot.BundleDeployment {
	out := make(map[string][]*snapshot.BundleDeployment, len(m.FleetClusters)) // a namespace per cluster
	for _, bd := range m.BundleDeployments {
		out[bd.Namespace] = append(out[bd.Namespace], bd)
	}
	return out
}

// blockingDependencies are the BundleDeployments, on the same cluster, that bd waits for: the
// ones the agent names in its refusal, else those of the Bundle's spec.dependsOn (by name)
// that are not Ready while bd has not applied its revision. msg is the agent's refusal, if any.
func blockingDependencies(m *snapshot.Cluster, bd *snapshot.BundleDeployment, peers []*snapshot.BundleDeployment) ([]*snapshot.BundleDeployment, string) {
	for _, text := range bdTexts(bd) {
		if mm := dependencyWait().FindStringSubmatch(text); mm != nil {
			return peersNamed(peers, strings.Fields(mm[1])), text
		}
	}
	b := bundleOf(m, bd)
	if b == nil || bd.Status.AppliedDeploymentID == bd.Spec.DeploymentID || bd.Spec.Paused {
		return nil, ""
	}
	var names []string
	for _, d := range b.Spec.DependsOn {
		if d.Name != "" {
			names = append(names, d.Name)
		}
	}
	var out []*snapshot.BundleDeployment
	for _, dep := range peersNamed(peers, names) {
		if fleet.BDState(dep) != fleet.StateReady {
			out = append(out, dep)
		}
	}
	return out, ""
}

// peersNamed finds BundleDeployments of one cluster namespace by their name or their bundle's.
func peersNamed(peers []*snapshot.BundleDeployment, names []string) []*snapshot.BundleDeployment {
	var out []*snapshot.BundleDeployment
	for _, n := range names {
		for _, p := range peers {
			if p.Name == n || fleet.BundleName(p) == n {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func dependencyFinding(ctx *Context, ix fleetIndex, m *snapshot.Cluster, bd *snapshot.BundleDeployment, deps []*snapshot.BundleDeployment, msg string, since time.Time) finding.Finding {
	target, fleetRef := bdTarget(ctx, ix, m, bd)
	bundle := fleet.BundleName(bd)
	var names []string
	for _, d := range deps {
		names = append(names, fmt.Sprintf("%s (%s)", fleet.BundleName(d), fleet.BDState(d)))
	}
	f := ctx.New("fleet/dependency-blocked", m, bdRef(bd), fmt.Sprintf("bundle %s on cluster %s waits for %s: not deployed until it is Ready", bundle, target, strings.Join(names, ", ")))
	f.Affects = target
	f.Keys = []string{BundleKey(fleetRef, bundle)}
	src := sourceOf(m, bdRef(bd))
	if msg != "" {
		f.Evidence = append(f.Evidence, ev(src, "%s", firstLine(msg)))
	} else {
		f.Evidence = append(f.Evidence, ev(src, "deploymentID=%s appliedDeploymentID=%s; its Bundle dependsOn %s", shortID(bd.Spec.DeploymentID), orDash(shortID(bd.Status.AppliedDeploymentID)), strings.Join(names, ", ")))
	}
	for _, d := range deps {
		// The upstream's key: its own finding on this cluster is the root cause.
		f.Keys = append(f.Keys, BundleKey(fleetRef, fleet.BundleName(d)))
		f.Evidence = append(f.Evidence, bdEvidence(m, d, fleet.BDState(d), bdMessage(d))...)
	}
	f.Since = timePtr(since)
	f.Signature = "dependency-blocked|" + genericBundle(fleet.BundleName(deps[0]))
	f.Vars = map[string]string{"bundle": bundle, "fleet-namespace": bd.Labels.Get(fleet.LabelBundleNamespace), "dependency": deps[0].Name}
	return f
}

// waitsForDependency reports a BundleDeployment the agent refuses only because a dependency
// that was read is not ready: fleet/dependency-blocked reports it, not fleet/bundle-err-applied.
// A refusal naming nothing that was read stays an error of its own.
func waitsForDependency(bd *snapshot.BundleDeployment, peers []*snapshot.BundleDeployment) bool {
	for _, text := range bdTexts(bd) {
		if mm := dependencyWait().FindStringSubmatch(text); mm != nil {
			return len(peersNamed(peers, strings.Fields(mm[1]))) > 0
		}
	}
	return false
}
