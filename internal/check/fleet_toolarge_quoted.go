package check

import (
	"fmt"
	"strings"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/fleet"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// quotedText is one message seen somewhere, with where it was read.
type quotedText struct {
	text, where, source string
}

// quotedTooLarge reports the refusals for size that Fleet's pipeline quotes: in a GitRepo's
// conditions, its gitjob Jobs' conditions, pods' logs and events (the Bundle could not be
// written), in a Bundle's conditions and in the fleet-controller's log (its status could not
// be written). A Secret's or ConfigMap's data limit is helm/release-too-large's.
func quotedTooLarge(ctx *Context, m *snapshot.Cluster) []finding.Finding {
	var out []finding.Finding
	for _, p := range fleet.Pipelines(m) {
		if q, tl, ok := firstTooLarge(pipelineTexts(m, p)); ok {
			b := heaviestBundle(m, p.Bundles)
			f := tooLargeFinding(ctx, m, b, gitRepoRef(p.Repo), fmt.Sprintf("GitRepo %s/%s cannot write its Bundles%s", p.Repo.Namespace, p.Repo.Name, pathsText(p.Repo)), tl)
			f.Keys = append(f.Keys, GitRepoKey(m.Name, p.Repo.Namespace, p.Repo.Name))
			setGitRepoVars(&f, m, p.Repo.Namespace, p.Repo.Name)
			f.Evidence = append([]finding.Evidence{ev(q.source, "%s: %s", q.where, firstLine(q.text))}, f.Evidence...)
			out = append(out, f)
		}
	}
	for _, b := range m.Bundles {
		if q, tl, ok := firstTooLarge(bundleTexts(m, b)); ok {
			f := tooLargeFinding(ctx, m, b, bundleObjRef(b), fmt.Sprintf("Bundle %s/%s cannot be stored", b.Namespace, b.Name), tl)
			f.Evidence = append([]finding.Evidence{ev(q.source, "%s: %s", q.where, firstLine(q.text))}, f.Evidence...)
			out = append(out, f)
		}
	}
	return out
}

// firstTooLarge is the first text quoting a refusal for size other than a Secret's data.
func firstTooLarge(texts []quotedText) (quotedText, messages.TooLarge, bool) {
	for _, q := range texts {
		if tl, ok := messages.ParseTooLarge(q.text); ok && tl.Limit != messages.LimitObjectData {
			return q, tl, true
		}
	}
	return quotedText{}, messages.TooLarge{}, false
}

// pipelineTexts are the messages of a GitRepo's stages before the Bundle: its conditions, its
// Jobs' conditions, its gitjob pods' logs and the warning events about it and its Jobs.
func pipelineTexts(m *snapshot.Cluster, p *fleet.RepoPipeline) []quotedText {
	var out []quotedText
	src := sourceOf(m, gitRepoRef(p.Repo))
	for _, c := range p.Repo.Status.Conditions {
		out = append(out, quotedText{c.Message, "GitRepo condition " + string(c.Type), src})
	}
	for _, j := range p.Jobs {
		for _, c := range j.Status.Conditions {
			out = append(out, quotedText{c.Message, "Job " + j.Name + " condition " + string(c.Type), sourceOf(m, jobRef(j))})
		}
	}
	for _, pod := range p.Pods {
		out = append(out, logTexts(m, pod.Namespace, pod.Name)...)
	}
	for _, e := range p.Events {
		out = append(out, quotedText{warningText(e), "event " + e.Reason + " on " + e.InvolvedObject.Kind + " " + e.InvolvedObject.Name, repoEventEvidence(m, e).Source})
	}
	return out
}

// bundleTexts are a Bundle's conditions and the fleet-controller's log lines naming it.
func bundleTexts(m *snapshot.Cluster, b *fleetv1.Bundle) []quotedText {
	var out []quotedText
	for _, c := range b.Status.Conditions {
		out = append(out, quotedText{c.Message, "Bundle condition " + string(c.Type), sourceOf(m, bundleObjRef(b))})
	}
	for _, q := range controllerLogTexts(m) {
		if bm := reconciledBundle().FindStringSubmatch(q.text); bm != nil && bm[1] == b.Name && bm[2] == b.Namespace {
			out = append(out, q)
		}
	}
	return out
}

// reconciledBundle is the Bundle a controller-runtime reconciler log line is about
// ("Bundle":{"name":"…","namespace":"…"}).
var reconciledBundle = lazyre.New(`"Bundle":\{"name":"([^"]+)","namespace":"([^"]+)"\}`)

// controllerLogTexts are the fleet-controller pods' log lines.
func controllerLogTexts(m *snapshot.Cluster) []quotedText {
	var out []quotedText
	for _, p := range m.Pods {
		if p.Namespace == fleet.DefaultAgentNamespace && p.Labels["app"] == controllerDeployment {
			out = append(out, logTexts(m, p.Namespace, p.Name)...)
		}
	}
	return out
}

// logTexts are a pod's log lines, current and previous container.
func logTexts(m *snapshot.Cluster, ns, pod string) []quotedText {
	var out []quotedText
	for _, l := range m.LogsFor(ns, pod) {
		where := "log of pod " + pod + " container " + l.Container
		for _, line := range l.Previous {
			out = append(out, quotedText{line, where + " (previous)", orDash(l.PreviousFile)})
		}
		for _, line := range l.Current {
			out = append(out, quotedText{line, where, orDash(l.CurrentFile)})
		}
	}
	return out
}

// pathsText names the paths a GitRepo builds Bundles from: where the weight is.
func pathsText(g *fleetv1.GitRepo) string {
	if len(g.Spec.Paths) == 0 {
		return " (from the repository's root)"
	}
	return " (paths " + strings.Join(g.Spec.Paths, ", ") + ")"
}

// heaviestBundle is the largest of bs by what was measured, when it weighs at least half
// the etcd limit (a Bundle that could not be written is not among them; a small one says
// nothing about it); nil otherwise.
func heaviestBundle(m *snapshot.Cluster, bs []*fleetv1.Bundle) *fleetv1.Bundle {
	var best *fleetv1.Bundle
	most := messages.EtcdRequestBytes / 2
	for _, b := range bs {
		if s, ok := m.BundleSizes[b.Namespace+"/"+b.Name]; ok && s.Bytes > most {
			best, most = b, s.Bytes
		}
	}
	return best
}
