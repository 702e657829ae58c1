package remediate_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/remediate"
)

// releaseBundle writes a one-cluster bundle holding a Helm release's revisions, each
// (revision, status, description) encoded as Helm stores it, with manifest.
func releaseBundle(t *testing.T, manifest string, revs ...[3]string) string {
	t.Helper()
	dir := t.TempDir()
	var docs []string
	for i, r := range revs {
		rel := map[string]any{"name": "legacy", "namespace": "legacy", "version": i + 1, "manifest": manifest,
			"info":  map[string]any{"status": r[1], "description": r[2], "first_deployed": "2026-11-20T08:00:00Z", "last_deployed": fmt.Sprintf("2026-11-2%dT08:00:00Z", i+1)},
			"chart": map[string]any{"metadata": map[string]any{"name": "legacy", "version": "1.0.0"}}}
		js, _ := json.Marshal(rel)
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		w.Write(js)
		w.Close()
		payload := base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(gz.Bytes())))
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.legacy.v%[1]d
  namespace: legacy
  uid: uid-%[1]d
  resourceVersion: "10%[1]d"
  labels: {owner: helm, name: legacy, status: %[2]s, version: "%[1]d"}
data:
  release: %[3]s
`, i+1, r[1], payload))
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets.yaml"), []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

const failedOnRemovedFlowSchema = `Upgrade "legacy" failed: unable to build kubernetes objects from current release manifest: resource mapping not found for name: "legacy" namespace: "" from "": no matches for kind "FlowSchema" in version "flowcontrol.apiserver.k8s.io/v1beta3" ensure CRDs are installed first`

// A release whose upgrade failed on a removed FlowSchema version: the plan rewrites the
// manifest of the failed newest revision and of the deployed one, medium, guarded by both
// Secrets' resourceVersions, above the default --max-risk low.
func TestPlanRewritesReleaseWithRemovedAPI(t *testing.T) {
	dir := releaseBundle(t, "---\napiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata:\n  name: legacy\n",
		[3]string{"1", "deployed", "Install complete"}, [3]string{"2", "failed", failedOnRemovedFlowSchema})
	p := plan(t, dir, remediate.Options{MaxRisk: remediate.Low})
	if got, want := actions(p), []remediate.Action{remediate.Observe, remediate.HelmRewriteAPIs}; !reflect.DeepEqual(got, want) {
		t.Fatalf("steps %v, want %v (manual: %+v)", got, want, p.Manual)
	}
	inc := p.Incidents[0]
	if inc.RootCause.FindingID != "api/removed" || !inc.Attempts[1].AboveMaxRisk {
		t.Errorf("root cause %s, above max risk %v", inc.RootCause.FindingID, inc.Attempts[1].AboveMaxRisk)
	}
	s := inc.Attempts[1].Steps[0]
	if s.Rung != remediate.RungRepair || s.Risk != remediate.Medium || !reflect.DeepEqual(s.Rewrite.Revisions, []int{2, 1}) || s.Rewrite.Release != "legacy" {
		t.Errorf("rewrite step %+v %+v", s, s.Rewrite)
	}
	if len(s.Touches) != 2 || s.Touches[0].ResourceVersion != "102" || s.Touches[1].ResourceVersion != "101" || s.Touches[0].UID != "uid-2" {
		t.Errorf("touches %+v: want both Secrets with their resourceVersions", s.Touches)
	}
	if !strings.Contains(s.Commands[1], "mapkubeapis legacy --namespace legacy") || !strings.Contains(s.Precondition, "resourceVersion 102") {
		t.Errorf("commands %q, precondition %q", s.Commands, s.Precondition)
	}
}

// A removed API whose replacement changes the schema (extensions/v1beta1 Ingress) or that has
// none gets no rewrite step: the plan says why and points at the catalogue.
func TestPlanRefusesRewriteThatNeedsReview(t *testing.T) {
	dir := releaseBundle(t, "---\napiVersion: extensions/v1beta1\nkind: Ingress\nmetadata:\n  name: legacy\n",
		[3]string{"1", "deployed", "Install complete"},
		[3]string{"2", "failed", `Upgrade "legacy" failed: unable to build kubernetes objects from current release manifest: resource mapping not found for name: "legacy" namespace: "" from "": no matches for kind "Ingress" in version "extensions/v1beta1" ensure CRDs are installed first`})
	snap, ctx := load(t, dir)
	incidents, _, _ := check.Evaluate(ctx, check.Filter{})
	for i := range incidents {
		if incidents[i].RootCause.ID == "api/removed" {
			// What the target-aware detection adds to the finding (the check on this branch
			// names only the group/version).
			v := map[string]string{"kind": "Ingress"}
			for k, x := range incidents[i].RootCause.Vars {
				v[k] = x
			}
			incidents[i].RootCause.Vars = v
		}
	}
	p := remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: remediate.Options{MaxRisk: remediate.High}})
	for _, s := range p.Steps() {
		if s.Action == remediate.HelmRewriteAPIs {
			t.Fatalf("a rewrite was planned for a replacement that needs review: %+v", s)
		}
	}
	found := false
	for _, m := range p.Manual {
		found = found || m.Finding.FindingID == "api/removed" && strings.Contains(m.Hint, "needs a manual review") && strings.Contains(m.Hint, "pathType")
	}
	if !found {
		t.Errorf("manual hints %+v: want the review reason", p.Manual)
	}
}

// A Bundle using a removed API is guided only: the hint names the file's source and the
// replacement; unstick never edits Git.
func TestPlanRemovedAPIInBundleIsGuided(t *testing.T) {
	p := plan(t, scenario("api/real-helm7219-psp-removed-positive"), remediate.Options{MaxRisk: remediate.High})
	for _, s := range p.Steps() {
		if s.Action == remediate.HelmRewriteAPIs {
			t.Fatalf("a rewrite was planned for a bundle: %+v", s)
		}
	}
	found := false
	for _, m := range p.Manual {
		if m.Finding.FindingID == "api/removed" {
			found = true
			if !strings.Contains(m.Hint, "never edits Git") || !strings.Contains(m.Hint, "policy/v1beta1") {
				t.Errorf("hint %q", m.Hint)
			}
		}
	}
	if !found {
		t.Errorf("no manual entry for the bundle's api/removed: %+v", p.Manual)
	}
}

// A CRD with stored versions [v1 ... storage]: migrate (medium, preparing) then trim (high),
// the trim bound to the migration step and to the CRD's resourceVersion.
func TestPlanCRDStorageMigrationThenTrim(t *testing.T) {
	p := plan(t, scenario("crd/version-not-served-positive"), remediate.Options{MaxRisk: remediate.Medium})
	var migrate, trim *remediate.Step
	var prep, above []bool
	for _, inc := range p.Incidents {
		for _, a := range inc.Attempts {
			for i, s := range a.Steps {
				switch s.Action {
				case remediate.MigrateStorage:
					migrate = &a.Steps[i]
					prep = append(prep, a.Prepares)
				case remediate.TrimStoredVersions:
					trim = &a.Steps[i]
					above = append(above, a.AboveMaxRisk)
				}
			}
		}
	}
	if migrate == nil || trim == nil {
		t.Fatalf("steps %v: want a migration and a trim", actions(p))
	}
	if migrate.Risk != remediate.Medium || trim.Risk != remediate.High || !prep[0] || !above[0] {
		t.Errorf("migrate %s (prepares %v), trim %s (above --max-risk medium %v)", migrate.Risk, prep, trim.Risk, above)
	}
	if trim.Storage.MigrateStep != migrate.ID || len(trim.Touches) != 1 || trim.Touches[0].Kind != "CustomResourceDefinition" || len(migrate.Touches) != 0 {
		t.Errorf("trim %+v touches %+v; migrate touches %+v", trim.Storage, trim.Touches, migrate.Touches)
	}
	if !strings.Contains(trim.Commands[0], "--subresource=status") || trim.Storage.StorageVersion == "" {
		t.Errorf("trim command %q", trim.Commands)
	}
	// The trim is the one write to a CRD any plan makes, and only through its action's guard.
	if remediate.Guard(trim.Target, "", nil) == nil || remediate.GuardAction(trim.Action, trim.Target, "", nil) != nil {
		t.Errorf("the guard must refuse the CRD except for the trim")
	}
}

// A Bundle finding as the target-aware detection writes it (kind, replacement, GitRepo and
// path in its Vars): the hint names the repository, the path and the replacement.
func TestPlanBundleHintNamesFileAndReplacement(t *testing.T) {
	snap, ctx := load(t, scenario("api/real-helm7219-psp-removed-positive"))
	incidents, _, _ := check.Evaluate(ctx, check.Filter{})
	n := 0
	for i := range incidents {
		if incidents[i].RootCause.ID != "api/removed" {
			continue
		}
		n++
		r := &incidents[i].RootCause
		r.Object.APIVersion, r.Object.Kind, r.Object.Namespace, r.Object.Name = "fleet.cattle.io/v1alpha1", "Bundle", "fleet-default", "monitoring-kube-state-metrics"
		r.Vars = map[string]string{"bundle": "monitoring-kube-state-metrics", "fleet-namespace": "fleet-default", "repo": "monitoring", "path": "charts/ksm/templates/flowschema.yaml",
			"group-version": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema", "replacement": "flowcontrol.apiserver.k8s.io/v1"}
	}
	if n != 1 {
		t.Fatalf("%d api/removed root causes", n)
	}
	p := remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: remediate.Options{MaxRisk: remediate.High}})
	for _, m := range p.Manual {
		if m.Finding.FindingID == "api/removed" {
			for _, want := range []string{"GitRepo monitoring", "path charts/ksm/templates/flowschema.yaml", "change apiVersion flowcontrol.apiserver.k8s.io/v1beta3 (FlowSchema) to flowcontrol.apiserver.k8s.io/v1", "never edits Git"} {
				if !strings.Contains(m.Hint, want) {
					t.Errorf("hint %q does not say %q", m.Hint, want)
				}
			}
			return
		}
	}
	t.Errorf("no manual entry: %+v", p.Manual)
}

// The migration step carries the object count the read took, and says it; without a count
// it says nothing of one.
func TestPlanCRDStorageMigrationCarriesObjectCount(t *testing.T) {
	for _, counted := range []bool{true, false} {
		snap, ctx := load(t, scenario("crd/version-not-served-positive"))
		var crd string
		for _, c := range snap.Clusters {
			for _, x := range c.CRDs {
				if len(x.StoredVersions) > 1 && counted {
					c.CRDObjects = map[string]int{x.Name: 37}
					crd = x.Name
				}
			}
		}
		if counted && crd == "" {
			t.Fatal("the scenario has no CRD with stored versions to migrate")
		}
		incidents, _, _ := check.Evaluate(ctx, check.Filter{})
		p := remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: remediate.Options{MaxRisk: remediate.Medium}})
		var migrate *remediate.Step
		for _, s := range p.Steps() {
			if s.Action == remediate.MigrateStorage {
				migrate = &s
			}
		}
		if migrate == nil {
			t.Fatalf("steps %v: want a migration", actions(p))
		}
		switch {
		case counted && (migrate.Storage.Objects == nil || *migrate.Storage.Objects != 37 || !strings.Contains(migrate.Change, ", 37 when the cluster was read)")):
			t.Errorf("counted: objects %v, change %q", migrate.Storage.Objects, migrate.Change)
		case !counted && (migrate.Storage.Objects != nil || strings.Contains(migrate.Change, "when the cluster was read")):
			t.Errorf("not counted: objects %v, change %q", migrate.Storage.Objects, migrate.Change)
		}
	}
}
