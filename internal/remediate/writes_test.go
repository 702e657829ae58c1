package remediate_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// Every object any plan writes is of a kind its action declares (restore refuses the other
// kinds), and every mutating action the plans use declares its kinds.
func TestPlannedWritesAreOfDeclaredKinds(t *testing.T) {
	var dirs []string
	_ = filepath.WalkDir(filepath.Join("..", "..", "testdata", "scenarios"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "expect.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	dirs = append(dirs, filepath.Join("..", "..", "examples", "fleet-upgrade-stuck"))
	seen := map[remediate.Action]bool{}
	for _, dir := range dirs {
		p := plan(t, dir, remediate.Options{MaxRisk: remediate.High})
		for _, s := range p.Steps() {
			if !s.Action.Mutating() {
				continue
			}
			seen[s.Action] = true
			kinds := remediate.ActionKinds(s.Action)
			for _, o := range s.Touches {
				gk := remediate.GroupKind{Group: o.Group(), Kind: o.Kind}
				if !slices.Contains(kinds, gk) || !remediate.Writes(gk) {
					t.Errorf("%s: step %s (%s) writes %s, which its action does not declare (%v)", dir, s.ID, s.Action, gk, kinds)
				}
			}
		}
	}
	if len(seen) < 6 {
		t.Errorf("only %d actions planned: the test would not catch much", len(seen))
	}
	for _, gk := range []remediate.GroupKind{{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}, {Kind: "Namespace"}, {Kind: "ConfigMap"}} {
		if remediate.Writes(gk) {
			t.Errorf("%s is listed as a kind fix writes", gk)
		}
	}
}

func TestSameChange(t *testing.T) {
	p := plan(t, filepath.Join("..", "..", "examples", "fleet-upgrade-stuck"), remediate.Options{MaxRisk: remediate.High})
	var st remediate.Step
	for _, s := range p.Steps() {
		if s.Action.Mutating() {
			st = s
			break
		}
	}
	if st.ID == "" {
		t.Fatal("no mutating step planned")
	}
	if !remediate.SameChange(st, st) {
		t.Fatal("a step is not the same change as itself")
	}
	moved := st
	moved.Touches = slices.Clone(st.Touches)
	moved.Touches[0].ResourceVersion += "9"
	if !remediate.SameChange(st, moved) {
		t.Error("a newer resourceVersion made it another change")
	}
	other := st
	other.Target.Name += "-other"
	if remediate.SameChange(st, other) {
		t.Error("a step on another object counted as the same change")
	}
	otherTouch := st
	otherTouch.Touches = slices.Clone(st.Touches)
	otherTouch.Touches[0].Namespace = "kube-system"
	if remediate.SameChange(st, otherTouch) {
		t.Error("a step writing another object counted as the same change")
	}
	gen := st
	gen.Generation += 5
	if remediate.SameChange(st, gen) {
		t.Error("another value counted as the same change")
	}
}

// What fix deletes is declared in one place: each deleting action's kinds are among the kinds
// it writes, every planned step of a delete action targets a kind its action deletes, and the
// kinds fix only patches are never listed (restore would create them).
func TestPlannedDeletesAreOfDeclaredKinds(t *testing.T) {
	all := []remediate.Action{remediate.RedeployAgent, remediate.ForceSync, remediate.RolloutRestart, remediate.DeleteBundleDeployment,
		remediate.HelmRollback, remediate.HelmMarkFailed, remediate.PatchPlanImage, remediate.DeleteJob, remediate.RemoveNodeLabel,
		remediate.Uncordon, remediate.HelmRewriteAPIs, remediate.MigrateStorage, remediate.TrimStoredVersions}
	var union []remediate.GroupKind
	for _, a := range all {
		for _, gk := range remediate.ActionDeletes(a) {
			if !slices.Contains(remediate.ActionKinds(a), gk) {
				t.Errorf("%s deletes %s, which it does not declare it writes", a, gk)
			}
			union = append(union, gk)
		}
	}
	if !slices.Equal(union, remediate.DeletedKinds()) {
		t.Errorf("DeletedKinds %v, the actions delete %v", remediate.DeletedKinds(), union)
	}
	p := plan(t, filepath.Join("..", "..", "examples", "fleet-upgrade-stuck"), remediate.Options{MaxRisk: remediate.High})
	var dirs []string
	_ = filepath.WalkDir(filepath.Join("..", "..", "testdata", "scenarios"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "expect.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	steps := p.Steps()
	for _, dir := range dirs {
		steps = append(steps, plan(t, dir, remediate.Options{MaxRisk: remediate.High}).Steps()...)
	}
	deleting := map[remediate.Action]bool{}
	for _, s := range steps {
		if s.Action != remediate.DeleteJob && s.Action != remediate.DeleteBundleDeployment {
			continue
		}
		deleting[s.Action] = true
		if gk := (remediate.GroupKind{Group: s.Target.Group(), Kind: s.Target.Kind}); !slices.Contains(remediate.ActionDeletes(s.Action), gk) {
			t.Errorf("step %s (%s) deletes %s, which its action does not declare", s.ID, s.Action, gk)
		}
	}
	if !deleting[remediate.DeleteJob] {
		t.Errorf("no Job deletion planned: the test would not catch much")
	}
	for _, gk := range []remediate.GroupKind{{Group: "apps", Kind: "Deployment"}, {Kind: "Node"}, {Group: "upgrade.cattle.io", Kind: "Plan"},
		{Kind: "Secret"}, {Group: "fleet.cattle.io", Kind: "Cluster"}, {Group: "fleet.cattle.io", Kind: "Bundle"},
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}} {
		if remediate.Deletes(gk) {
			t.Errorf("%s, a kind fix only patches, is listed as one it deletes", gk)
		}
	}
}
