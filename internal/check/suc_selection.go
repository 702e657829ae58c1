package check

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// roleLabelPrefix starts the node-role labels distributions set (node-role.kubernetes.io/<role>).
const roleLabelPrefix = "node-role.kubernetes.io/"

// sucPlanSelection reports Plans whose selector matches no node. SUC then sets Complete=True
// (reason Complete, event "Jobs complete for version <v>. Hash: <h>", handle_upgrade.go) while
// upgrading nothing, and an agent Plan whose prepare step waits for the server Plan goes ahead.
// The classic case is a server Plan selecting node-role.kubernetes.io/master, which k3s and
// Kubernetes stopped setting in favour of node-role.kubernetes.io/control-plane
// (vitobotta/hetzner-k3s#706, rancher/rke2#1387): the agents are upgraded, the servers are
// not. An empty selection alone is not a fault (a pool scaled to zero), so it is reported only
// when a sibling Plan for the same version did upgrade nodes, or when the selector requires a
// role label that no node carries.
var sucPlanSelection = Check{
	Name:  "suc/plan-selection",
	Emits: []string{"suc/plan-selects-no-nodes"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, c := range ctx.Snap.Clusters {
			if len(c.Nodes) == 0 {
				continue // nodes not collected: no verdict on a selection
			}
			for _, p := range c.Plans {
				if f, ok := planSelectsNoNodes(ctx, c, p); ok {
					out = append(out, f)
				}
			}
		}
		return out, nil
	},
}

func planSelectsNoNodes(ctx *Context, c *snapshot.Cluster, p *suc.Plan) (finding.Finding, bool) {
	if p.IsFalse(suc.CondValidated) || p.IsFalse(suc.CondLatestResolved) {
		return finding.Finding{}, false // not running at all: suc/plan-stuck says why
	}
	selected, err := p.SelectedNodes(c.Nodes)
	if err != nil || len(selected) > 0 {
		return finding.Finding{}, false
	}
	missing := missingRoleLabels(p, c.Nodes)
	siblings, upgraded := upgradingSiblings(c, p)
	if len(missing) == 0 && len(siblings) == 0 {
		return finding.Finding{}, false
	}
	src := sourceOf(c, planRef(p))
	why := "its nodeSelector matches none of the cluster's nodes"
	if len(missing) > 0 {
		why = fmt.Sprintf("its nodeSelector requires %s, which no node carries", strings.Join(missing, ", "))
	}
	summary := fmt.Sprintf("Plan %s/%s selects no node, so it reports Complete while upgrading nothing: %s", p.Namespace, p.Name, why)
	picture := clusterPicture(c, p, siblings, upgraded)
	if picture != "" {
		summary += "; " + picture
	}
	f := ctx.New("suc/plan-selects-no-nodes", c, planRef(p), summary)
	f.Evidence = []finding.Evidence{ev(src, "spec.nodeSelector: %s", selectorText(p))}
	if cond := p.Condition(suc.CondComplete); cond != nil {
		f.Evidence = append(f.Evidence, ev(src, "condition Complete=%s reason=%s; status.applying=%v", cond.Status, orDash(cond.Reason), p.Status.Applying))
		if t := suc.ConditionUpdated(cond); !t.IsZero() {
			f.Since = timePtr(t)
		}
	}
	for _, s := range siblings {
		f.Evidence = append(f.Evidence, ev(sourceOf(c, planRef(s)), "sibling Plan %s for %s upgraded %s", s.Name, orDash(s.Status.LatestVersion), nodeList(upgraded[s.Name], 4)))
	}
	f.Evidence = append(f.Evidence, ev(sourceOf(c, nodeRef(c.Nodes[0].Name)), "node roles: %s", nodeRoles(c.Nodes, 6)))
	f.Keys = []string{PlanKey(c.Name, p.Namespace, p.Name)}
	f.Signature = "suc-selects-no-nodes|" + selectorText(p)
	return f, true
}

// missingRoleLabels are the node-role labels the selector requires (matchLabels, In, Exists)
// that no node has at all.
func missingRoleLabels(p *suc.Plan, nodes []*corev1.Node) []string {
	sel := p.Spec.NodeSelector
	if sel == nil {
		return nil
	}
	var keys []string
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	for _, e := range sel.MatchExpressions {
		if e.Operator == "In" || e.Operator == "Exists" {
			keys = append(keys, e.Key)
		}
	}
	var out []string
	for _, k := range keys {
		if !strings.HasPrefix(k, roleLabelPrefix) {
			continue
		}
		found := false
		for _, n := range nodes {
			if _, ok := n.Labels[k]; ok {
				found = true
				break
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// upgradingSiblings are the other Plans of the namespace for the same version (resolved
// version, spec.version or channel) that moved at least one node, with the nodes they moved.
func upgradingSiblings(c *snapshot.Cluster, p *suc.Plan) ([]*suc.Plan, map[string][]string) {
	var out []*suc.Plan
	upgraded := map[string][]string{}
	for _, s := range c.Plans {
		if s == p || s.Namespace != p.Namespace || !sameTarget(p, s) {
			continue
		}
		nodes, err := s.SelectedNodes(c.Nodes)
		if err != nil {
			continue
		}
		for _, n := range nodes {
			if s.StateOf(n) == suc.NodeDone {
				upgraded[s.Name] = append(upgraded[s.Name], n.Name)
			}
		}
		if len(upgraded[s.Name]) > 0 {
			out = append(out, s)
		}
	}
	return out, upgraded
}

func sameTarget(a, b *suc.Plan) bool {
	switch {
	case a.Status.LatestVersion != "" && a.Status.LatestVersion == b.Status.LatestVersion:
		return true
	case a.Spec.Version != "" && a.Spec.Version == b.Spec.Version:
		return true
	}
	return a.Spec.Channel != "" && a.Spec.Channel == b.Spec.Channel
}

// clusterPicture says what the cluster looks like after the siblings ran: for Kubernetes
// upgrades, the nodes they moved against the control-plane nodes no Plan moved. Kubelets newer
// than the API server are outside Kubernetes' version skew policy.
func clusterPicture(c *snapshot.Cluster, p *suc.Plan, siblings []*suc.Plan, upgraded map[string][]string) string {
	if len(siblings) == 0 {
		return ""
	}
	moved := map[string]bool{}
	var movedNames []string
	for _, s := range siblings {
		for _, n := range upgraded[s.Name] {
			if !moved[n] {
				moved[n] = true
				movedNames = append(movedNames, n)
			}
		}
	}
	sort.Strings(movedNames)
	var left []*corev1.Node
	for _, n := range c.Nodes {
		if !moved[n.Name] {
			left = append(left, n)
		}
	}
	text := fmt.Sprintf("sibling Plans moved %d node(s) to %s", len(movedNames), orDash(siblings[0].Status.LatestVersion))
	if !p.UpgradesKubernetes() || len(left) == 0 {
		return text + fmt.Sprintf(" and %d node(s) were left out", len(left))
	}
	newVer, oldVer := kubeletVersions(c, movedNames), kubeletVersionsOf(left)
	var leftCP []string
	for _, n := range left {
		if isControlPlane(n) {
			leftCP = append(leftCP, n.Name)
		}
	}
	text += fmt.Sprintf(" (kubelet %s) while %s still run %s", strings.Join(newVer, ", "), nodeList(nodeNamesOf(left), 4), strings.Join(oldVer, ", "))
	if len(leftCP) > 0 && newer(newVer, oldVer) {
		text += ": the agents are now newer than the servers, which Kubernetes' version skew policy does not allow (a kubelet must not be newer than its kube-apiserver)"
	}
	return text
}

func isControlPlane(n *corev1.Node) bool {
	for _, k := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master", "node-role.kubernetes.io/etcd"} {
		if _, ok := n.Labels[k]; ok {
			return true
		}
	}
	return false
}

func kubeletVersions(c *snapshot.Cluster, names []string) []string {
	var nodes []*corev1.Node
	for _, n := range c.Nodes {
		for _, name := range names {
			if n.Name == name {
				nodes = append(nodes, n)
			}
		}
	}
	return kubeletVersionsOf(nodes)
}

func kubeletVersionsOf(nodes []*corev1.Node) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range nodes {
		v := n.Status.NodeInfo.KubeletVersion
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"-"}
	}
	return out
}

// newer reports that every version in a is newer than every version in b.
func newer(a, b []string) bool {
	for _, x := range a {
		vx, err := version.ParseGeneric(x)
		if err != nil {
			return false
		}
		for _, y := range b {
			vy, err := version.ParseGeneric(y)
			if err != nil || !vy.LessThan(vx) {
				return false
			}
		}
	}
	return len(a) > 0 && len(b) > 0
}

func nodeNamesOf(nodes []*corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}

// nodeRoles lists nodes with their node-role labels ("cp-1: control-plane,etcd").
func nodeRoles(nodes []*corev1.Node, n int) string {
	var parts []string
	for _, node := range nodes {
		var roles []string
		for k := range node.Labels {
			if r, ok := strings.CutPrefix(k, roleLabelPrefix); ok {
				roles = append(roles, r)
			}
		}
		sort.Strings(roles)
		if len(roles) == 0 {
			roles = []string{"<none>"}
		}
		parts = append(parts, node.Name+": "+strings.Join(roles, ","))
	}
	sort.Strings(parts)
	return nodeList(parts, n)
}

// selectorText renders the Plan's nodeSelector as kubectl would print a label selector.
func selectorText(p *suc.Plan) string {
	if p.Spec.NodeSelector == nil {
		return "<none>"
	}
	var parts []string
	keys := make([]string, 0, len(p.Spec.NodeSelector.MatchLabels))
	for k := range p.Spec.NodeSelector.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+p.Spec.NodeSelector.MatchLabels[k])
	}
	for _, e := range p.Spec.NodeSelector.MatchExpressions {
		switch e.Operator {
		case "Exists":
			parts = append(parts, e.Key)
		case "DoesNotExist":
			parts = append(parts, "!"+e.Key)
		default:
			parts = append(parts, fmt.Sprintf("%s %s (%s)", e.Key, strings.ToLower(string(e.Operator)), strings.Join(e.Values, ",")))
		}
	}
	return strings.Join(parts, ",")
}
