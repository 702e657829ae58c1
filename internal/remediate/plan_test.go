package remediate_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

var at = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func scenario(name string) string { return filepath.Join("..", "..", "testdata", "scenarios", name) }

func load(t *testing.T, dir string) (*snapshot.Snapshot, *check.Context) {
	t.Helper()
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return snap, &check.Context{Snap: snap, Now: at, Thresholds: check.NewThresholds(cat), Catalog: cat}
}

func plan(t *testing.T, dir string, o remediate.Options) *remediate.Plan {
	t.Helper()
	snap, ctx := load(t, dir)
	incidents, _, _ := check.Evaluate(ctx, check.Filter{})
	return remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: o})
}

func actions(p *remediate.Plan) []remediate.Action {
	var out []remediate.Action
	for _, s := range p.Steps() {
		out = append(out, s.Action)
	}
	return out
}

// The same incident on a cluster whose agent registered itself (no spec.kubeConfigSecret):
// Fleet v0.16.0's agentmanagement returns before it looks at redeployAgentGeneration for such
// a cluster, so the plan has no redeploy (fix never writes a bump nothing would act on) and
// the ladder goes on to the rollback.
func TestPlanNoRedeployForSelfRegisteredAgent(t *testing.T) {
	dir := t.TempDir()
	src := scenario("fleet/agent-pending-upgrade-incident")
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, filepath.Join("fleet", "clusters.yaml")) {
			b = []byte(strings.ReplaceAll(string(b), "kubeConfigSecret: c-m-8k2lq-kubeconfig", "kubeConfigSecret: \"\""))
		}
		rel, _ := filepath.Rel(src, p)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	p := plan(t, dir, remediate.Options{MaxRisk: remediate.Medium})
	if got, want := actions(p), []remediate.Action{remediate.Observe, remediate.HelmRollback}; !reflect.DeepEqual(got, want) {
		t.Fatalf("steps %v, want %v (no redeploy for a self-registered agent)", got, want)
	}
	// The finding itself says why its resync rung has no command.
	_, ctx := load(t, dir)
	incidents, _, _ := check.Evaluate(ctx, check.Filter{})
	var notes []string
	for _, st := range incidents[0].RootCause.Remediation {
		if st.Rung == "resync" {
			notes = append(notes, st.Notes...)
		}
	}
	if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, "fleet-default/c-m-8k2lq was registered by its agent") }) {
		t.Errorf("resync notes %q do not say why the redeploy is left out", notes)
	}
}

// An agent that stopped checking in: its redeploy verifies only on the agent's next check-in
// (agentmanagement reports a redeploy done whether or not the agent comes back), and so does
// a restart; an agent whose heartbeat is fine gets no such wait.
func TestPlanAgentStepsWaitForCheckIn(t *testing.T) {
	p := plan(t, scenario("fleet/agent-heartbeat-stale-positive"), remediate.Options{MaxRisk: remediate.Low})
	n := 0
	for _, s := range p.Steps() {
		if s.Action != remediate.RedeployAgent && s.Action != remediate.RolloutRestart {
			continue
		}
		n++
		if s.ChecksIn == nil || s.ChecksIn.Cluster == "" || s.ChecksIn.Name == "" || !strings.Contains(s.Verify, "checks in after the step began") {
			t.Errorf("%s step %s does not wait for the agent's check-in: %+v %q", s.Action, s.ID, s.ChecksIn, s.Verify)
		}
	}
	if n == 0 {
		t.Fatal("no redeploy or restart step planned for a stale agent")
	}
	p = plan(t, scenario("fleet/agent-upgrade-stuck-positive"), remediate.Options{MaxRisk: remediate.Low})
	for _, s := range p.Steps() {
		if s.ChecksIn != nil {
			t.Errorf("%s step %s waits for a check-in, but that agent checks in", s.Action, s.ID)
		}
	}
}

// The agent's pending release, seen from both sides: Fleet is asked to redeploy the agent
// first (low), the Helm rollback comes next (medium, above the default cap), observe first of
// all. Every mutating step names its precondition, verification and command.
func TestPlanPendingAgentRelease(t *testing.T) {
	p := plan(t, scenario("fleet/agent-pending-upgrade-incident"), remediate.Options{MaxRisk: remediate.Low})
	if got, want := actions(p), []remediate.Action{remediate.Observe, remediate.RedeployAgent, remediate.HelmRollback}; !reflect.DeepEqual(got, want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	inc := p.Incidents[0]
	if inc.RootCause.FindingID != "helm/release-pending" {
		t.Errorf("root cause %s", inc.RootCause.FindingID)
	}
	redeploy, rollback := inc.Attempts[1].Steps[0], inc.Attempts[2].Steps[0]
	if redeploy.Cluster != "local" || redeploy.Target.Name != "c-m-8k2lq" || redeploy.Generation != redeploy.Previous+1 {
		t.Errorf("redeploy step %+v", redeploy)
	}
	if !strings.Contains(redeploy.Commands[0], `"redeployAgentGeneration":`) || redeploy.Target.ResourceVersion == "" {
		t.Errorf("redeploy command %q, precondition rv %q", redeploy.Commands, redeploy.Target.ResourceVersion)
	}
	if inc.Attempts[1].AboveMaxRisk || !inc.Attempts[2].AboveMaxRisk {
		t.Errorf("only the medium rollback is above --max-risk low")
	}
	h := rollback.Helm
	if h.Current != 5 || h.Target != 4 || h.NewRevision != 6 || h.CurrentStatus != "pending-upgrade" || h.TargetStatus != "deployed" {
		t.Errorf("rollback %+v", h)
	}
	if rollback.Commands[0] != "helm --kube-context prod-eu-1 -n cattle-fleet-system rollback fleet-agent-c-m-8k2lq 4" {
		t.Errorf("rollback command %q", rollback.Commands[0])
	}
	var touched []string
	for _, o := range rollback.Touches {
		touched = append(touched, o.Name+map[bool]string{true: " (create)", false: " @" + o.ResourceVersion}[o.Create])
	}
	want := []string{"sh.helm.release.v1.fleet-agent-c-m-8k2lq.v5 @64318723", "sh.helm.release.v1.fleet-agent-c-m-8k2lq.v4 @67312369", "sh.helm.release.v1.fleet-agent-c-m-8k2lq.v6 (create)"}
	if !reflect.DeepEqual(touched, want) {
		t.Errorf("rollback touches %v, want %v", touched, want)
	}
	for _, s := range p.Steps() {
		if s.Action.Mutating() && (s.Precondition == "" || s.Verify == "" || len(s.Commands) == 0 || len(s.Why) == 0 || s.Change == "") {
			t.Errorf("step %s lacks a precondition, verification, command, reason or change: %+v", s.ID, s)
		}
	}
	// Raising the cap lets the rollback run.
	if p := plan(t, scenario("fleet/agent-pending-upgrade-incident"), remediate.Options{MaxRisk: remediate.Medium}); p.Incidents[0].Attempts[2].AboveMaxRisk {
		t.Errorf("the rollback is within --max-risk medium")
	}
}

// With only a pending revision and nothing before it, the only repair is marking it failed
// (high); a pending release with an earlier revision, even failed, is rolled back to it.
func TestPlanReleaseWithNothingDeployed(t *testing.T) {
	p := plan(t, scenario("helm/no-deployed-release-positive"), remediate.Options{MaxRisk: remediate.High})
	got := map[string]remediate.Step{}
	for _, s := range p.Steps() {
		if s.Helm != nil {
			got[s.Helm.Release] = s
		}
	}
	if s := got["keycloak"]; s.Action != remediate.HelmMarkFailed || s.Risk != remediate.High {
		t.Errorf("keycloak: %s at risk %s, want helm-mark-failed at high", s.Action, s.Risk)
	}
	// ingress-nginx's revision 6, the one `helm rollback` would pick, was pruned: the plan
	// names the deployed revision explicitly, which Helm accepts.
	if s := got["ingress-nginx"]; s.Action != remediate.HelmRollback || s.Risk != remediate.Medium || s.Helm.Target == s.Helm.Current-1 ||
		!strings.HasSuffix(s.Commands[0], " rollback ingress-nginx "+strconv.Itoa(s.Helm.Target)) {
		t.Errorf("ingress-nginx: %s at risk %s to revision %d (%v), want a medium rollback naming the deployed revision", s.Action, s.Risk, s.Helm.Target, s.Commands)
	}
}

// The SUC chain is patch → delete the Plan's unfinished Jobs → remove the blocking label, one
// attempt; it runs only with an image the registry confirmed for every node's platform.
func TestPlanSUCImageChain(t *testing.T) {
	const good = "registry.local/rancher/kubectl:v1.30.3"
	ok := imageref.Facts{Ref: good, Status: imageref.OK, Digest: "sha256:" + strings.Repeat("a", 64), Index: true,
		Platforms: []imageref.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}}
	dir := scenario("suc/image-missing-kubectl-tag")
	choice := []remediate.ImageChoice{{Plan: "node-maintenance", Stage: "upgrade", Ref: good}}
	for _, tc := range []struct {
		name    string
		choices []remediate.ImageChoice
		facts   map[string]imageref.Facts
		blocked string
	}{
		{"verified", choice, map[string]imageref.Facts{good: ok}, ""},
		{"no --image", nil, nil, "needs the image to patch in"},
		{"not asked", choice, nil, "was not checked against its registry"},
		{"missing", choice, map[string]imageref.Facts{good: {Ref: good, Status: imageref.Missing, Error: "MANIFEST_UNKNOWN"}}, `answered "missing"`},
		{"unreachable", choice, map[string]imageref.Facts{good: {Ref: good, Status: imageref.Unreachable}}, `answered "unreachable"`},
		{"arm64 only", choice, map[string]imageref.Facts{good: {Ref: good, Status: imageref.OK, Platforms: []imageref.Platform{{OS: "linux", Architecture: "arm64"}}}}, "no build for linux/amd64"},
		{"platforms unknown", choice, map[string]imageref.Facts{good: {Ref: good, Status: imageref.OK}}, "could not be read"},
		{"untagged", []remediate.ImageChoice{{Stage: "upgrade", Ref: "registry.local/rancher/kubectl"}}, map[string]imageref.Facts{"registry.local/rancher/kubectl": ok}, "no tag or digest"},
		{"other plan", []remediate.ImageChoice{{Plan: "k3s-agent", Stage: "upgrade", Ref: good}}, map[string]imageref.Facts{good: ok}, "needs the image to patch in"},
		{"no prepare stage", []remediate.ImageChoice{{Stage: "prepare", Ref: good}}, map[string]imageref.Facts{good: ok}, "has no prepare container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, dir, remediate.Options{MaxRisk: remediate.Medium, Images: tc.choices, ImageFacts: tc.facts})
			want := []remediate.Action{remediate.Observe, remediate.PatchPlanImage, remediate.DeleteJob, remediate.DeleteJob, remediate.RemoveNodeLabel}
			if got := actions(p); !reflect.DeepEqual(got, want) {
				t.Fatalf("steps %v, want %v", got, want)
			}
			a := p.Incidents[0].Attempts[1]
			if tc.blocked == "" {
				if a.Blocked != "" || !a.Runnable() || a.Steps[0].Image.To != good {
					t.Errorf("attempt blocked %q, patch to %q", a.Blocked, a.Steps[0].Image.To)
				}
			} else if !strings.Contains(a.Blocked, tc.blocked) {
				t.Errorf("blocked %q, want it to say %q", a.Blocked, tc.blocked)
			}
			if a.Steps[3].Label != "plan.upgrade.cattle.io/node-maintenance" || a.Steps[3].Target.Name != "prod-eu-1-worker-2" {
				t.Errorf("label step %+v", a.Steps[3])
			}
		})
	}
}

// Step IDs identify the change, not the moment: the same snapshot plans the same IDs, and a
// new resourceVersion changes the precondition but not the ID, so a rerun recognises a step.
func TestStepIDsAreStable(t *testing.T) {
	dir := scenario("fleet/agent-pending-upgrade-incident")
	a := plan(t, dir, remediate.Options{MaxRisk: remediate.Medium})
	snap, ctx := load(t, dir)
	for _, s := range snap.Cluster("prod-eu-1").Secrets {
		s.ResourceVersion += "1"
	}
	incidents, _, _ := check.Evaluate(ctx, check.Filter{})
	b := remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: remediate.Options{MaxRisk: remediate.Medium}})
	sa, sb := a.Steps(), b.Steps()
	if len(sa) != len(sb) {
		t.Fatalf("%d steps, then %d", len(sa), len(sb))
	}
	seen := map[string]bool{}
	for i := range sa {
		if sa[i].ID != sb[i].ID {
			t.Errorf("step %d: ID %s, then %s", i, sa[i].ID, sb[i].ID)
		}
		if seen[sa[i].ID] {
			t.Errorf("ID %s used twice", sa[i].ID)
		}
		seen[sa[i].ID] = true
	}
	if sa[2].Touches[0].ResourceVersion == sb[2].Touches[0].ResourceVersion {
		t.Errorf("the precondition did not follow the new resourceVersion")
	}
}

func TestPlanFilters(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "fleet-upgrade-stuck")
	all := plan(t, dir, remediate.Options{MaxRisk: remediate.Low})
	// Without steps: edge-arm-1's taints, prod-ap-1's bundle (its Git source is guided
	// only), and Rancher's two (drain-blocked, imported-upgrade-stuck), whose fixes are guided
	// only; prod-ap-1's release (rewrite) and CRD (migrate, trim) have steps above low.
	if len(all.Incidents) != 4 || len(all.Manual) != 4 {
		t.Fatalf("%d incidents with steps, %d without; want 4 and 4", len(all.Incidents), len(all.Manual))
	}
	only := plan(t, dir, remediate.Options{MaxRisk: remediate.Low, Only: []string{"agent/"}})
	if len(only.Incidents) != 1 || only.Incidents[0].RootCause.FindingID != "agent/crd-missing" {
		t.Errorf("--only agent/: %+v", only.Incidents)
	}
	// A management-side symptom about the cluster keeps its incident.
	byCluster := plan(t, dir, remediate.Options{MaxRisk: remediate.Low, Clusters: []string{"prod-eu-1"}})
	if len(byCluster.Incidents) != 1 || byCluster.Incidents[0].RootCause.Cluster != "prod-eu-1" {
		t.Errorf("--only-cluster prod-eu-1: %+v", byCluster.Incidents)
	}
}

// No plan, for any scenario or the example fleet, ever names an object the guard forbids
// (for the CRD stored-versions trim, which writes only a CRD's status, the guard of its action).
func TestNoPlanTouchesGuardedObjects(t *testing.T) {
	var dirs []string
	_ = filepath.WalkDir(filepath.Join("..", "..", "testdata", "scenarios"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "expect.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	dirs = append(dirs, filepath.Join("..", "..", "examples", "fleet-upgrade-stuck"))
	steps := 0
	for _, dir := range dirs {
		p := plan(t, dir, remediate.Options{MaxRisk: remediate.High})
		for _, s := range p.Steps() {
			steps++
			for _, o := range s.Touches {
				if err := remediate.GuardAction(s.Action, o, "", nil); err != nil {
					t.Errorf("%s: step %s: %v", dir, s.ID, err)
				}
			}
		}
	}
	if steps < 30 {
		t.Errorf("only %d steps planned over %d bundles: the test would not catch much", steps, len(dirs))
	}
}

// Every ID the planner has a rule for is in the catalogue, and its ladder offers at least one
// rung the rule turns into a step (otherwise the rule is dead).
func TestRulesMatchTheCatalogue(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range remediate.Rules() {
		e, ok := cat.Get(id)
		if !ok {
			t.Errorf("rule for %s, which is not in the catalogue", id)
			continue
		}
		automatable := false
		for _, r := range e.Ladder {
			for _, c := range r.Commands {
				for _, sig := range []string{"redeployAgentGeneration", "forceSyncGeneration", "rollout restart", " rollback ", "status=failed", "patch plans.upgrade.cattle.io", "delete job", "label node", "kubectl uncordon", "mapkubeapis", "replace -f -", "storedVersions"} {
					automatable = automatable || strings.Contains(c, sig)
				}
			}
		}
		if !automatable {
			t.Errorf("%s has a rule but its ladder offers nothing unstick can do", id)
		}
	}
	// The catalogue's autofix attribute is what users read (explain, the fix plan's manual
	// list): it must say exactly which root causes the planner handles.
	want := cat.IDsWhere(func(e *catalog.Entry) bool { return e.Autofix })
	if got := remediate.Rules(); !slices.Equal(got, want) {
		t.Errorf("planner rules %v\ncatalogue autofix %v", got, want)
	}
}

// A plan made from a live read given --kubeconfig names that file in every command, kubectl's
// and helm's alike, before the context.
func TestPlanCommandsNameTheKubeconfigGiven(t *testing.T) {
	snap, ctx := load(t, scenario("fleet/agent-pending-upgrade-incident"))
	for _, c := range snap.Clusters {
		c.Kubeconfig = "/home/ops/fleet.yaml"
	}
	incidents, _, _ := check.Evaluate(ctx, check.Filter{})
	p := remediate.Build(remediate.Input{Snap: snap, Incidents: incidents, Options: remediate.Options{MaxRisk: remediate.Low}})
	want := map[remediate.Action]string{
		remediate.RedeployAgent: "kubectl --kubeconfig /home/ops/fleet.yaml --context local ",
		remediate.HelmRollback:  "helm --kubeconfig /home/ops/fleet.yaml --kube-context prod-eu-1 ",
	}
	for _, s := range p.Steps() {
		if prefix, ok := want[s.Action]; ok {
			delete(want, s.Action)
			if len(s.Commands) == 0 || !strings.HasPrefix(s.Commands[0], prefix) {
				t.Errorf("%s step: commands %q, want them to start %q", s.Action, s.Commands, prefix)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("no step for %v", want)
	}
}

// A bundle that cannot be applied: its resync verifies only once the BundleDeployment is Ready
// at a new deploymentID (the controller observes the bump whatever becomes of the deployment),
// and the delete that repairs it only once the re-created one is Ready.
func TestPlanBundleStepsWaitForTheDeployment(t *testing.T) {
	// A bundle whose failure no other finding explains (the CRD its message names is served
	// now): a force-sync is its step.
	const bd = "shop-app"
	const id = "s-1ca1d3cb184e6e863d489a3adf7bf3ff19121b49944c3db4c4ea83847c5ff:e6488c09ed9c7e81db35912a79976e9ef34066d116244dd48250e67e6f821ff0"
	p := plan(t, scenario("crd/quoted-missing-kind-lookalike"), remediate.Options{MaxRisk: remediate.High})
	n := 0
	for _, s := range p.Steps() {
		if !s.Action.Mutating() {
			continue
		}
		n++
		d := s.Deploys
		if d == nil || d.Name != bd || d.Namespace != "cluster-fleet-default-c-m-692a1611-6588177fa851" || d.DeploymentID != id || d.UID == "" {
			t.Errorf("%s step %s does not wait for BundleDeployment %s: %+v", s.Action, s.ID, bd, d)
			continue
		}
		if d.NewDeployment != (s.Action == remediate.ForceSync) || d.NewObject != (s.Action == remediate.DeleteBundleDeployment) {
			t.Errorf("%s step waits for a new deploymentID %v, a new object %v", s.Action, d.NewDeployment, d.NewObject)
		}
		if !strings.Contains(s.Verify, "is Ready at") {
			t.Errorf("%s step's verify text does not say it waits for the deployment: %q", s.Action, s.Verify)
		}
	}
	if n == 0 {
		t.Fatal("no mutating step planned for a bundle that cannot be applied")
	}
}
