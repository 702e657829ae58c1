package check

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/classify"
	"github.com/unstick-dev/unstick/internal/finding"
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

// agentLogIDs are the findings an agent's own log can establish.
var agentLogIDs = map[string]bool{
	"agent/crd-missing": true, "agent/config-invalid": true, "agent/tls": true, "agent/rbac-forbidden": true,
	"agent/api-unreachable": true, "fleet/registration-broken": true, "cluster/clock-skew": true,
}

// recentWindow is how many lines of a running container's log count as "now", and
// minRepeats how often an error must recur there to be more than a passing blip.
const (
	recentWindow = 200
	minRepeats   = 3
)

// agentLogs classifies what a crashing or stuck agent says: its previous (crashed)
// container's log, its current log when the same error recurs, and its events. A healthy agent
// that once logged a transient error is not flagged.
var agentLogs = Check{
	Name:  "agent/logs",
	Emits: []string{"agent/crd-missing", "agent/config-invalid", "agent/tls", "agent/rbac-forbidden", "agent/api-unreachable", "fleet/registration-broken", "cluster/clock-skew"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			for _, p := range c.Pods {
				if !isAgentPod(c, p) {
					continue
				}
				for _, cs := range p.Status.ContainerStatuses {
					out = append(out, judgeAgentLog(ctx, c, p, cs)...)
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
}

func judgeAgentLog(ctx *Context, c *snapshot.Cluster, p *corev1.Pod, cs corev1.ContainerStatus) []finding.Finding {
	l := c.Logs[snapshot.LogKey(p.Namespace, p.Name, cs.Name)]
	unhealthy := !cs.Ready || cs.State.Waiting != nil || cs.State.Terminated != nil
	hits := map[string]*logHit{}
	var order []string
	note := func(lines []string, file string, scope classify.Scope) {
		for _, line := range lines {
			m, ok := classify.Classify(line, scope)
			if !ok || !agentLogIDs[m.ID] {
				continue
			}
			h := hits[m.ID]
			if h == nil {
				h = &logHit{id: m.ID}
				hits[m.ID] = h
				order = append(order, m.ID)
			}
			h.line, h.file = line, file
			h.count++
		}
	}
	if l != nil {
		if unhealthy {
			note(l.Previous, l.PreviousFile, classify.Log)
			note(l.Current, l.CurrentFile, classify.Log)
		} else {
			cur := l.Current
			if len(cur) > recentWindow {
				cur = cur[len(cur)-recentWindow:]
			}
			note(cur, l.CurrentFile, classify.Log)
			for _, id := range order {
				if hits[id].count < minRepeats {
					delete(hits, id)
				}
			}
		}
	}
	if unhealthy {
		var msgs []string
		for _, e := range c.EventsFor("Pod", p.Namespace, p.Name) {
			msgs = append(msgs, e.Message)
		}
		note(msgs, "events of pod "+p.Name, classify.Event)
	}
	var out []finding.Finding
	for _, id := range order {
		h := hits[id]
		if h == nil {
			continue
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
	getResource = regexp.MustCompile(`\(get ([a-z0-9-]+(?:\.[a-z0-9-]+)+)\)`)
	noKindMatch = regexp.MustCompile(`no matches for kind \\?"([A-Za-z0-9]+)\\?" in version \\?"([a-z0-9.-]+)/([a-z0-9]+)\\?"`)
	listType    = regexp.MustCompile(`(?:list|watch) \*v[0-9a-z]+\.([A-Za-z]+):.*could not find the requested resource`)
)

// missingResource names the resource (plural.group) an error line says the server lacks.
func missingResource(line string) string {
	if m := getResource.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	if m := noKindMatch.FindStringSubmatch(line); m != nil {
		return strings.ToLower(m[1]) + "s." + m[2]
	}
	if m := listType.FindStringSubmatch(line); m != nil {
		return strings.ToLower(m[1]) + "s"
	}
	return ""
}
