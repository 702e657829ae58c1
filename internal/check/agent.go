package check

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/messages"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// isAgentPod reports Fleet's agent and Rancher's cluster agent: the two agents an upgrade of
// Rancher replaces on every downstream cluster.
func isAgentPod(c *snapshot.Cluster, p *corev1.Pod) bool {
	_, owner := podOwner(c, p)
	if owner == "" {
		owner = p.Name
	}
	return isAgentWorkload(p.Namespace, owner) || (p.Namespace == "cattle-system" && strings.HasPrefix(owner, "cattle-cluster-agent"))
}

// fromAgentLogs says whether an agent's own log can establish id (the catalogue's agentLogs).
func fromAgentLogs(ctx *Context, id string) bool {
	e, ok := ctx.Catalog.Get(id)
	return ok && e.AgentLogs
}

// recentWindow is how many lines of a running container's log count as "now", and
// minRepeats how often an error must recur there to be more than a passing blip.
const (
	recentWindow = 200
	minRepeats   = 3
	// deathTail is how close to the end of a crashed container's log its last error must be
	// to count as what it died on: room for a Go panic's goroutine trace after the "panic:" line.
	deathTail = 60
)

// kubeletPodReasons are event reasons the kubelet and scheduler report about a pod's
// infrastructure (probes, sandbox, volumes, back-off). Their messages say nothing about what
// the agent itself failed at: a readiness probe's "connect: connection refused" is the probe
// failing, not the agent losing its API server.
var kubeletPodReasons = map[string]bool{
	"Unhealthy": true, "ProbeWarning": true, "BackOff": true, "Failed": true, "Pulling": true,
	"Pulled": true, "Created": true, "Started": true, "Killing": true, "Scheduled": true,
	"FailedScheduling": true, "FailedCreatePodSandBox": true, "FailedKillPod": true,
	"FailedMount": true, "FailedAttachVolume": true, "FailedSync": true, "NetworkNotReady": true,
	"SandboxChanged": true, "FailedPreStopHook": true, "FailedPostStartHook": true,
}

// agentLogs classifies what a crashing or stuck agent says: the log of the container that
// crashed (the error it died on, and errors it kept repeating), errors a running agent keeps
// repeating in its recent log, and its events. A healthy agent that once logged a transient
// error — a "connection refused" while the API server restarted — is not flagged, and
// neither is a crashed agent's one-off startup blip before the error it actually died on.
var agentLogs = Check{
	Name:  "agent/logs",
	Emits: []string{"agent/crd-missing", "agent/config-invalid", "agent/tls", "agent/rbac-forbidden", "agent/api-unreachable", "fleet/registration-broken", "cluster/clock-skew"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		minRestarts := int32(ctx.Thresholds.Int("pod.crashloopMinRestarts"))
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				if !isAgentPod(c, p) {
					continue
				}
				for _, cs := range allStatuses(p) {
					out = append(out, judgeAgentLog(ctx, c, p, cs, minRestarts)...)
				}
			}
		}
		return out, nil
	},
}

type logHit struct {
	id    string
	line  string
	file  string
	count int
	last  bool // the last classified line of a crashed container's log: what it died on
	skew  bool // a TLS failure the clock explains ("certificate has expired or is not yet valid: current time … is before …")
}

// skewedTLS reports a clock-skew line that is also a failed TLS verification: x509's "not yet
// valid" error, which the clock explains and the agent suffers as a TLS failure.
func skewedTLS(id, line string) bool {
	return id == "cluster/clock-skew" && strings.Contains(strings.ToLower(line), "certificate has expired or is not yet valid")
}

// crashing reports a container that keeps dying: restarted at least minRestarts times, or
// waiting in CrashLoopBackOff.
func crashing(cs corev1.ContainerStatus, minRestarts int32) bool {
	return cs.RestartCount >= minRestarts || (cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff")
}

func judgeAgentLog(ctx *Context, c *snapshot.Cluster, p *corev1.Pod, cs corev1.ContainerStatus, minRestarts int32) []finding.Finding {
	l := c.Logs[snapshot.LogKey(p.Namespace, p.Name, cs.Name)]
	crashed := crashing(cs, minRestarts)
	hits := map[string]*logHit{}
	var order []string
	hit := func(id, line, file string, n int) *logHit {
		h := hits[id]
		if h == nil {
			h = &logHit{id: id}
			hits[id] = h
			order = append(order, id)
		}
		h.line, h.file = line, file
		h.count += n
		return h
	}
	// note classifies lines; it returns the hit of the last classified line when that line
	// is among the final deathTail lines (what a crashed container died on), else nil.
	note := func(lines []string, file string) []*logHit {
		var lastHits []*logHit
		lastAt := -1
		for i, line := range lines {
			m, ok := classify.Classify(line, classify.Log)
			if !ok || !fromAgentLogs(ctx, m.ID) {
				continue
			}
			lastHits, lastAt = []*logHit{hit(m.ID, line, file, 1)}, i
			if skewedTLS(m.ID, line) {
				// The clock is the cause, the failed TLS verification what the agent suffers:
				// both are reported, the TLS failure linked under the skew.
				h := hit("agent/tls", line, file, 1)
				h.skew = true
				lastHits = append(lastHits, h)
			}
		}
		if len(lastHits) == 0 || len(lines)-1-lastAt > deathTail {
			return nil
		}
		return lastHits
	}
	markLast := func(hs []*logHit) {
		for _, h := range hs {
			h.last = true
		}
	}
	if l != nil {
		if crashed {
			// Each log of a crashed container ends with what it died on.
			markLast(note(l.Previous, l.PreviousFile))
			markLast(note(l.Current, l.CurrentFile))
		} else {
			cur := l.Current
			if len(cur) > recentWindow {
				cur = cur[len(cur)-recentWindow:]
			}
			note(cur, l.CurrentFile)
		}
	}
	if crashed {
		for _, e := range c.EventsFor("", "Pod", p.Namespace, p.Name) {
			if kubeletPodReasons[e.Reason] {
				continue
			}
			if m, ok := classify.Classify(e.Message, classify.Event); ok && fromAgentLogs(ctx, m.ID) {
				n := int(e.Count)
				if n < 1 {
					n = 1
				}
				hit(m.ID, e.Message, "event "+e.Reason+" of pod "+p.Name, n).last = true
				if skewedTLS(m.ID, e.Message) {
					h := hit("agent/tls", e.Message, "event "+e.Reason+" of pod "+p.Name, n)
					h.last, h.skew = true, true
				}
			}
		}
	}
	// The real Fleet v0.16.0 agent, restarted while a Fleet CRD is missing upstream, tests its
	// credential by listing BundleDeployments, gets the 404 ("Current credential failed,
	// falling back to reregistering: the server could not find the requested resource …") and
	// re-registers, which fails for want of the bootstrap Secret the first registration
	// consumed. That registration failure is the CRD's consequence, not a broken registration.
	if h := hits["agent/crd-missing"]; h != nil && hits["fleet/registration-broken"] != nil && strings.Contains(h.line, "falling back to reregistering") {
		order = slices.DeleteFunc(order, func(id string) bool { return id == "fleet/registration-broken" })
	}
	var out []finding.Finding
	for _, id := range order {
		h := hits[id]
		if !h.last && h.count < minRepeats {
			continue // a passing blip, not what keeps the agent down
		}
		f := podFinding(ctx, c, p, id, fmt.Sprintf("agent pod %s/%s: %s", p.Namespace, p.Name, agentCause(id)))
		f.Evidence = []finding.Evidence{ev(h.file, "%s", firstLine(h.line))}
		if h.count > 1 {
			f.Evidence[0].Source += fmt.Sprintf(" (%d matching lines)", h.count)
		}
		if id == "agent/crd-missing" {
			if res := missingResource(h.line); res != "" {
				f.Summary += " (" + res + ")"
				f.Keys = append(f.Keys, "crd:"+c.Name+"/"+res)
			}
		}
		if (id == "cluster/clock-skew" || h.skew) && p.Spec.NodeName != "" {
			// The clock that matters is the one of the node the agent runs on.
			f.Keys = append(f.Keys, NodeKey(c.Name, p.Spec.NodeName))
		}
		if h.skew {
			f.Summary = fmt.Sprintf("agent pod %s/%s: TLS verification fails because a certificate is not yet valid for this node's clock (see cluster/clock-skew)", p.Namespace, p.Name)
		}
		f.Signature = id + "|" + classify.Signature(h.line)
		out = append(out, f)
	}
	return out
}

func agentCause(id string) string {
	switch id {
	case "agent/crd-missing":
		return "a resource it needs is not served by the API server (CRD missing or outdated)"
	case "agent/config-invalid":
		return "it cannot parse its configuration or the objects it reads"
	case "agent/tls":
		return "TLS verification fails (CA or server certificate changed)"
	case "agent/rbac-forbidden":
		return "its service account is forbidden from what it needs"
	case "agent/api-unreachable":
		return "it cannot reach the API server"
	case "fleet/registration-broken":
		return "its registration with the Fleet controller fails"
	case "cluster/clock-skew":
		return "certificates look not-yet-valid: the clocks disagree"
	}
	return id
}

var (
	getResource = lazyre.New(`\(get ([a-z0-9-]+(?:\.[a-z0-9-]+)+)\)`)
	listType    = lazyre.New(`(?:list|watch) \*v[0-9a-z]+\.([A-Za-z]+):.*could not find the requested resource`)
)

// missingResource names the resource (plural.group) an error line says the server lacks.
func missingResource(line string) string {
	if m := getResource().FindStringSubmatch(line); m != nil {
		// Fleet's wrangler-generated clients label their 404 with meta.k8s.io, a group that
		// serves no resources (the real agent's "Current credential failed, falling back to
		// reregistering: the server could not find the requested resource (get
		// bundledeployments.meta.k8s.io)"): the resource is the Fleet one of that plural.
		if plural, ok := strings.CutSuffix(m[1], ".meta.k8s.io"); ok {
			for _, crd := range requiredFleetCRDs {
				if strings.HasPrefix(crd, plural+".") {
					return crd
				}
			}
			return plural
		}
		return m[1]
	}
	for _, mk := range messages.ParseMissingKind(line) {
		if mk.Group != "" {
			return guessPlural(mk.Kind) + "." + mk.Group
		}
	}
	if m := listType().FindStringSubmatch(line); m != nil {
		return strings.ToLower(m[1]) + "s"
	}
	return ""
}
