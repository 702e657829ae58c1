package check

import (
	"fmt"
	"sort"
	"strings"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/inventory"
	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// rancherReadiness judges what Rancher's planner will need before (and while) it upgrades a
// provisioned cluster: the system-agent-installer and distribution images of the planned
// version in the configured registry for every node's platform (an image missing from a
// private registry stops every node at its first plan: rancher#37221, #36137, #38810), and
// the downstream PodDisruptionBudgets that will refuse the drains the upgrade strategy asks
// for (rancher#36969, #26400).
var rancherReadiness = Check{
	Name:  "rancher/upgrade-readiness",
	Emits: []string{"rancher/installer-image-missing", "rancher/drain-would-block"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, m := range ctx.Snap.Clusters {
			uses := map[string][]inventory.Use{}
			for _, u := range inventory.CollectFor(&snapshot.Snapshot{Clusters: []*snapshot.Cluster{m}}, "") {
				if u.Kind == "Cluster" {
					uses[u.Namespace+"/"+u.Name] = append(uses[u.Namespace+"/"+u.Name], u)
				}
			}
			for _, pc := range m.OtherOf(rancher.GroupProvisioning, "Cluster") {
				if rancher.String(pc.Object, "spec", "kubernetesVersion") == "" {
					continue
				}
				p := &provisioned{m: m, pc: pc, want: rancher.String(pc.Object, "spec", "kubernetesVersion"),
					key: "rancher:" + m.Name + "/" + pc.Namespace + "/" + pc.Name}
				if cp, ok := m.GetRef("rke.cattle.io/v1", rancher.KindRKEControlPlane, pc.Namespace, pc.Name).(*snapshot.Unstructured); ok {
					p.cp = cp
					p.applied = rancher.String(cp.Object, "status", "appliedSpec", "kubernetesVersion")
				}
				p.downstream, p.name = rancherDownstream(ctx.Snap, pc.Namespace, pc.Name, rancher.String(pc.Object, "status", "clusterName"))
				p.message, p.msgTime = plannerStatus(p)
				out = append(out, installerImages(ctx, p, uses[pc.Namespace+"/"+pc.Name])...)
				if ctx.Preflight || p.applied != "" && p.applied != p.want || p.message != "" {
					out = append(out, drainWouldBlock(ctx, p)...)
				}
			}
		}
		return out, nil
	},
}

// pullNotFound matches what a failed installer pull leaves in rancher-system-agent's output.
var pullNotFound = lazyre.New(`(?i)(system-agent-installer-[a-z0-9]+|rke2-runtime)[^\s]*.*(not found|manifest unknown|failed to resolve reference|404)`)

func installerImages(ctx *Context, p *provisioned, uses []inventory.Use) []finding.Finding {
	var out []finding.Finding
	obj := ref(p.pc.APIVersion, p.pc.Kind, p.pc.Namespace, p.pc.Name)
	reported := map[string]bool{}
	for _, u := range uses {
		facts, probed := ctx.Images[u.Ref]
		if !probed || reported[u.Ref] {
			continue
		}
		var why string
		switch {
		case facts.Status == imageref.Missing:
			why = "does not exist in its registry"
		case facts.Status == imageref.OK:
			var lacking []string
			for _, n := range u.Nodes {
				if ok, known := facts.Supports(n.OS, n.Arch); known && !ok {
					lacking = append(lacking, n.Name+" ("+n.OS+"/"+n.Arch+")")
				}
			}
			if len(lacking) > 0 {
				why = "has no build for " + strings.Join(lacking, ", ")
			}
		}
		if why == "" {
			continue
		}
		reported[u.Ref] = true
		f := p.newFinding(ctx, "rancher/installer-image-missing", obj,
			fmt.Sprintf("%s, which Rancher's planner pulls on every node of %s for %s (%s), %s", u.Ref, p.name, p.want, u.Where, why))
		f.Evidence = append(f.Evidence, registryEvidence(facts))
		f.Vars["image"] = u.Ref
		out = append(out, f)
	}
	if len(out) > 0 {
		return out
	}
	// Without registry answers: the agents' own output of a failing plan.
	var lines []string
	var src string
	for _, mp := range p.m.MachinePlans {
		if mp.Namespace != p.pc.Namespace || mp.Cluster() != p.pc.Name || !mp.FailingCurrent() {
			continue
		}
		for _, l := range mp.FailedOutput {
			if pullNotFound().MatchString(l) {
				lines = append(lines, l)
				if src == "" {
					src = sourceOf(p.m, ref("v1", "Secret", mp.Namespace, mp.Name)) + " failed-output"
				}
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	sort.Strings(lines)
	f := p.newFinding(ctx, "rancher/installer-image-missing", obj,
		fmt.Sprintf("nodes of %s cannot pull the images Rancher's planner needs for %s", p.name, p.want))
	for _, l := range lastN(lines, 3) {
		f.Evidence = append(f.Evidence, ev(src, "%s", l))
	}
	return []finding.Finding{f}
}

// drainWouldBlock names the downstream PodDisruptionBudgets that allow no disruption and
// cover pods on nodes the upgrade has still to drain (the tier's drain enabled in the
// upgrade strategy, the machine not yet at the version). One already blocking a drain is
// rancher/drain-blocked's.
func drainWouldBlock(ctx *Context, p *provisioned) []finding.Finding {
	d := p.downstream
	if d == nil || p.cp == nil && p.pc == nil {
		return nil
	}
	strategy := rancher.Nested(p.pc.Object, "spec", "rkeConfig", "upgradeStrategy")
	enabled := func(key string) bool {
		m, _ := strategy.(map[string]any)
		opts, _ := m[key].(map[string]any)
		b, _ := opts["enabled"].(bool)
		return b
	}
	workers, controlPlane := enabled("workerDrainOptions"), enabled("controlPlaneDrainOptions")
	if !workers && !controlPlane {
		return nil
	}
	nodes := map[string]string{} // node → machine still to drain
	for _, mc := range machinesOf(p.m, p.pc.Namespace, p.pc.Name) {
		if mc.node == "" || (mc.tier == "worker" && !workers) || (mc.tier != "worker" && !controlPlane) {
			continue
		}
		if plan := p.m.MachinePlanFor(mc.u.Namespace, mc.u.Name); plan != nil && plan.Annotations[rancher.AnnotationDrainOptions] != "" {
			continue // draining now: rancher/drain-blocked judges it
		}
		if !ctx.Preflight && mc.kubelet != "" && rancher.VersionTriple(mc.kubelet) == rancher.VersionTriple(p.want) {
			continue // already upgraded
		}
		nodes[mc.node] = mc.u.Name
	}
	var out []finding.Finding
	for _, pdb := range d.PodDisruptionBudgets {
		if pdb.Status.DisruptionsAllowed > 0 || pdb.Status.ExpectedPods == 0 || pdb.Spec.Selector == nil {
			continue
		}
		var covered []string
		for n := range nodes {
			for _, pod := range coveredPods(d, pdb.Namespace, pdb.Spec.Selector, n, "") {
				covered = append(covered, pod.name+" on "+n)
			}
		}
		if len(covered) == 0 {
			continue
		}
		sort.Strings(covered)
		pref := ref("policy/v1", "PodDisruptionBudget", pdb.Namespace, pdb.Name)
		f := p.newFinding(ctx, "rancher/drain-would-block", pref,
			fmt.Sprintf("PodDisruptionBudget %s/%s allows no disruption: Rancher's drain of %s during the upgrade of %s will not finish", pdb.Namespace, pdb.Name, strings.Join(covered, ", "), p.name))
		f.Cluster, f.Affects = d.Name, ""
		f.Evidence = append(f.Evidence, ev(sourceOf(d, pref), "disruptionsAllowed 0 (currentHealthy %d, desiredHealthy %d, expectedPods %d)", pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy, pdb.Status.ExpectedPods))
		f.Keys = append(f.Keys, "pdb:"+d.Name+"/"+pdb.Namespace+"/"+pdb.Name)
		f.Vars["pdb"], f.Vars["pdb-namespace"] = pdb.Name, pdb.Namespace
		out = append(out, f)
	}
	return out
}
