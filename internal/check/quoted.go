package check

import (
	"fmt"
	"strings"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// quoted is one error message an object quotes from another controller — a BundleDeployment's
// condition quoting Helm, a Helm release's description quoting the API server — with the
// cluster the error happened on and the keys of the object that quotes it, so that the
// finding read from the message joins that object's incident.
type quoted struct {
	on      *snapshot.Cluster // the cluster the message was read on
	target  *snapshot.Cluster // the cluster the quoted error happened on, when it was collected
	affects string            // that cluster's name
	subject string            // what quotes it: "bundle shop on cluster c1", "Helm release shop/app"
	source  string
	msg     string
	keys    []string
	// ns is the namespace of the object the quote is about, when the quote says it: Fleet
	// names the resource it summarises ("deployment.apps shop/storefront [progressing,error] …").
	ns string
	// bundle and fleetNS name the Fleet bundle that deploys what failed, when one does: the
	// bundle must be deployed again once the cause is gone.
	bundle, fleetNS string
	// releaseNS is the namespace of the Helm release whose apply failed, when known.
	releaseNS string
}

// evidence is the quote as a finding shows it: the message, where it was read.
func (q quoted) evidence() finding.Evidence {
	return finding.Evidence{Source: q.source, Text: oneLine(q.msg)}
}

// quotedMessages gathers the messages that quote another controller's error: every
// BundleDeployment's conditions and non-ready resources' summaries, each Bundle's summary of
// them, the description of each Helm release's newest revision when that revision failed or
// waits, and the SUC Plans' and Jobs' failure conditions.
func quotedMessages(ctx *Context) []quoted {
	var out []quoted
	for _, m := range ctx.Snap.Management() {
		ix := newFleetIndex(m)
		for _, bd := range m.BundleDeployments {
			out = append(out, bdQuotes(ctx, ix, m, bd)...)
		}
		for _, b := range m.Bundles {
			out = append(out, bundleQuotes(ctx, ix, m, b)...)
		}
	}
	for _, c := range ctx.Snap.Clusters {
		out = append(out, sucQuotes(c)...)
		for _, hist := range releaseHistories(c) {
			if q, ok := releaseQuote(ctx, c, hist[len(hist)-1]); ok {
				out = append(out, q)
			}
		}
	}
	return out
}

func bdQuotes(ctx *Context, ix fleetIndex, m *snapshot.Cluster, bd *snapshot.BundleDeployment) []quoted {
	if !quotesSomething(bd) {
		return nil // most of a fleet's BundleDeployments: nothing to name a target for
	}
	target, fleetRef := bdTarget(ctx, ix, m, bd)
	bundle := fleet.BundleName(bd)
	base := quoted{on: m, target: ctx.Snap.Cluster(target), affects: target,
		subject: fmt.Sprintf("bundle %s on cluster %s", bundle, target), keys: []string{BundleKey(fleetRef, bundle)},
		bundle: bundle, fleetNS: bd.Labels.Get(fleet.LabelBundleNamespace)}
	base.releaseNS = releaseNamespace(base.target, bdRelease(bd))
	if fleet.IsAgentBundle(bundle) {
		base.keys = append(base.keys, AgentKey(fleetRef))
	}
	src := sourceOf(m, bdRef(bd))
	var out []quoted
	seen := map[string]bool{}
	add := func(where, msg, ns string) {
		if msg == "" || seen[msg] {
			return
		}
		seen[msg] = true
		q := base
		q.source, q.msg, q.ns = src+" "+where, msg, ns
		out = append(out, q)
	}
	for _, c := range bd.Status.Conditions {
		if string(c.Status) != "True" {
			add("status.conditions["+string(c.Type)+"]", c.Message, fleetSummaryNamespace(c.Message))
		}
	}
	for _, st := range bd.Status.NonReadyStatus {
		if st.Summary.Error {
			add("status.nonReadyStatus["+st.Kind+"/"+st.Name+"]", strings.Join(st.Summary.Message, "; "), st.Namespace)
		}
	}
	return out
}

// fleetSummaryRE is the resource a Fleet agent's Ready condition message starts with: the
// non-ready resources' summaries as "<kind>.<group> <namespace>/<name> [<states>] <messages>"
// (fleet pkg/apis/fleet.cattle.io/v1alpha1: NonReadyStatus.String()).
var fleetSummaryRE = lazyre.New(`^[a-z0-9.-]+ ([a-z0-9]([-a-z0-9]*[a-z0-9])?)/[a-z0-9][-a-z0-9.]* \[`)

// fleetSummaryNamespace is the namespace a Fleet Ready message names first, "" if none.
func fleetSummaryNamespace(msg string) string {
	if m := fleetSummaryRE().FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// quotesSomething reports whether bdQuotes finds a message in bd: a condition not True with
// a message, or a resource summary in error.
func quotesSomething(bd *snapshot.BundleDeployment) bool {
	for _, c := range bd.Status.Conditions {
		if string(c.Status) != "True" && c.Message != "" {
			return true
		}
	}
	for _, st := range bd.Status.NonReadyStatus {
		if st.Summary.Error {
			return true
		}
	}
	return false
}

// releaseQuote is the description of a release revision that failed or still waits: Helm
// writes the error that stopped it there ("Upgrade \"x\" failed: ...").
func releaseQuote(ctx *Context, c *snapshot.Cluster, r *helmrelease.Release) (quoted, bool) {
	if r.Description == "" || !(r.Status == helmrelease.StatusFailed || r.IsPending()) {
		return quoted{}, false
	}
	q := quoted{
		on: c, target: c, affects: c.Name,
		subject:   fmt.Sprintf("Helm release %s/%s revision %d", r.Namespace, r.Name, r.Revision),
		source:    sourceOf(c, ref("v1", "Secret", r.Namespace, r.SecretName)) + " info.description",
		msg:       r.Description,
		keys:      releaseKeys(ctx.Snap, c, r),
		releaseNS: r.Namespace,
	}
	if bd := bundleDeploymentFor(ctx, c, r.Name); bd != nil {
		q.bundle, q.fleetNS = fleet.BundleName(bd), bd.Labels.Get(fleet.LabelBundleNamespace)
	}
	return q, true
}

// quotedMissingKinds are the kinds a quoted message says are not served, of groups a CRD
// serves (a built-in group's kind is a removed API, not a missing CRD), on a cluster whose
// CRDs, when they were read, have none of that kind: a message written before the CRD was
// installed is not evidence once it is.
func quotedMissingKinds(q quoted) []messages.MissingKind {
	var out []messages.MissingKind
	for _, mk := range messages.ParseMissingKind(q.msg) {
		if mk.Group == "" || classify.BuiltinGroup(mk.Group) {
			continue
		}
		if q.target != nil && crdsListed(q.target) && hasCRDForKind(q.target, mk.Group, mk.Kind) {
			continue
		}
		out = append(out, mk)
	}
	return out
}

func hasCRDForKind(c *snapshot.Cluster, group, kind string) bool {
	for _, crd := range c.CRDs {
		if crd.Group == group && crd.Kind == kind {
			return true
		}
	}
	return c.HasCRD(guessPlural(kind) + "." + group)
}

// guessPlural is the resource name the API server's RESTMapper guesses for a kind
// (k8s.io/apimachinery meta.UnsafeGuessKindToResource): lower case, "s" → "ses", "y" → "ies".
func guessPlural(kind string) string {
	s := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(s, "s"):
		return s + "es"
	case strings.HasSuffix(s, "y"):
		return strings.TrimSuffix(s, "y") + "ies"
	}
	return s + "s"
}

// bdRelease is the name of the Helm release a BundleDeployment deploys.
func bdRelease(bd *snapshot.BundleDeployment) string {
	if bd.Spec.Options.Helm != nil && bd.Spec.Options.Helm.ReleaseName != "" {
		return bd.Spec.Options.Helm.ReleaseName
	}
	return fleet.BundleName(bd)
}
