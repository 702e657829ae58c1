package check

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/rancher"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/suc"
)

// Rancher's version management of imported RKE2/K3s clusters: its k3s-upgrade-controller
// turns a management.cattle.io Cluster's spec.rke2Config/k3sConfig into the SUC Plans
// rke2-master-plan/rke2-worker-plan (k3s-…) in the downstream cattle-system, labelled
// rancher-managed: "true", and while they run it appends `upgrade.cattle.io/disable Exists`
// to every other Plan's node selector (rancher/rancher pkg/controllers/management/...
// k3sbasedupgrade), which silently disables the users' own Plans.
const (
	labelRancherManaged = "rancher-managed"
	labelPlanDisable    = "upgrade.cattle.io/disable"
)

var rancherImported = Check{
	Name:  "rancher/imported-upgrade",
	Emits: []string{"rancher/imported-upgrade-stuck", "rancher/plans-disabled-by-rancher"},
	Run: func(ctx *Context) ([]finding.Finding, error) {
		var out []finding.Finding
		for _, m := range ctx.Snap.Clusters {
			for _, mc := range m.OtherOf(rancher.GroupManagement, "Cluster") {
				out = append(out, judgeImported(ctx, m, mc)...)
			}
		}
		return out, nil
	},
}

func judgeImported(ctx *Context, m *snapshot.Cluster, mc *snapshot.Unstructured) []finding.Finding {
	dist, want := "rke2", rancher.String(mc.Object, "spec", "rke2Config", "kubernetesVersion")
	if want == "" {
		dist, want = "k3s", rancher.String(mc.Object, "spec", "k3sConfig", "kubernetesVersion")
	}
	if want == "" {
		return nil // not an imported RKE2/K3s cluster with version management
	}
	display := rancher.String(mc.Object, "spec", "displayName")
	var d *snapshot.Cluster
	for _, n := range []string{display, mc.Name} {
		if c := ctx.Snap.Cluster(n); n != "" && c != nil && c != m {
			d = c
			break
		}
	}
	if d == nil {
		if ws := rancher.String(mc.Object, "spec", "fleetWorkspaceName"); ws != "" && display != "" {
			d = ctx.Snap.ClusterForFleet(ws + "/" + display)
		}
	}
	name := display
	if d != nil {
		name = d.Name
	} else if name == "" {
		name = mc.Name
	}
	mref := ref(mc.APIVersion, mc.Kind, "", mc.Name)
	key := "rancher:imported:" + m.Name + "/" + mc.Name
	var out []finding.Finding
	var managed []*suc.Plan
	if d != nil {
		for _, p := range d.Plans {
			if p.Labels[labelRancherManaged] == "true" {
				managed = append(managed, p)
			}
		}
		if len(managed) > 0 {
			for _, p := range d.Plans {
				if p.Labels[labelRancherManaged] == "true" || !disabledByRancher(p.Spec.NodeSelector) {
					continue
				}
				pref := ref("upgrade.cattle.io/v1", "Plan", p.Namespace, p.Name)
				f := ctx.New("rancher/plans-disabled-by-rancher", d, pref,
					fmt.Sprintf("Plan %s/%s selects no node while Rancher upgrades %s: Rancher appended %s Exists to its node selector", p.Namespace, p.Name, name, labelPlanDisable))
				f.Evidence = append(f.Evidence, ev(sourceOf(d, pref), "spec.nodeSelector.matchExpressions holds {key: %s, operator: Exists}", labelPlanDisable))
				for _, mp := range managed {
					f.Evidence = append(f.Evidence, ev(sourceOf(d, ref("upgrade.cattle.io/v1", "Plan", mp.Namespace, mp.Name)), "Rancher-managed Plan %s/%s (label %s=true) upgrades to %s", mp.Namespace, mp.Name, labelRancherManaged, orDash(mp.Spec.Version)))
				}
				// The imported cluster's key: while Rancher's upgrade is stuck, this is its symptom.
				f.Keys = []string{key, PlanKey(d.Name, p.Namespace, p.Name)}
				f.Vars = map[string]string{"plan": p.Name, "suc-namespace": p.Namespace, "management-cluster-id": mc.Name}
				out = append(out, f)
			}
		}
	}
	up, hasUp := rancher.Cond(mc.Object, "Upgraded")
	var stale []string
	if d != nil {
		for _, n := range d.Nodes {
			if rancher.VersionTriple(n.Status.NodeInfo.KubeletVersion) != rancher.VersionTriple(want) {
				stale = append(stale, n.Name+" ("+n.Status.NodeInfo.KubeletVersion+")")
			}
		}
		sort.Strings(stale)
	}
	moving := hasUp && up.Status != "True" && up.Message != "" || len(stale) > 0 && len(managed) > 0
	if !moving || !up.Time.IsZero() && ctx.Age(up.Time) < ctx.Thresholds.Duration("rancher.upgradeStuckAfter") {
		return out
	}
	f := ctx.New("rancher/imported-upgrade-stuck", m, mref,
		fmt.Sprintf("Rancher's %s upgrade of imported cluster %s to %s is not finishing", dist, name, want))
	if d != nil && d != m {
		f.Affects = d.Name
	}
	if hasUp {
		f.Evidence = append(f.Evidence, ev(sourceOf(m, mref), "Upgraded=%s: %s", up.Status, orDash(up.Message)))
		f.Since = timePtr(up.Time)
	}
	if len(stale) > 0 {
		f.Evidence = append(f.Evidence, ev(name, "nodes not at %s: %s", want, strings.Join(stale, ", ")))
	}
	f.Keys = []string{key}
	for _, p := range managed {
		f.Keys = append(f.Keys, PlanKey(d.Name, p.Namespace, p.Name))
		f.Evidence = append(f.Evidence, ev(sourceOf(d, ref("upgrade.cattle.io/v1", "Plan", p.Namespace, p.Name)), "Rancher-managed Plan %s/%s, version %s", p.Namespace, p.Name, orDash(p.Spec.Version)))
	}
	f.Vars = map[string]string{"management-cluster-id": mc.Name, "suc-namespace": "cattle-system", "plan": dist + "-worker-plan"}
	out = append(out, f)
	return out
}

// disabledByRancher reports a node selector holding the expression Rancher appends.
func disabledByRancher(sel *metav1.LabelSelector) bool {
	if sel == nil {
		return false
	}
	for _, e := range sel.MatchExpressions {
		if e.Key == labelPlanDisable && e.Operator == metav1.LabelSelectorOpExists {
			return true
		}
	}
	return false
}
