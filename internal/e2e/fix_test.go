package e2e

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

const (
	agentNS      = "cattle-fleet-system"
	agentRelease = "fleet-agent-c-m-8k2lq"
)

func helmStore(t *testing.T, f *fleetOf, cluster, ns string) *storage.Storage {
	t.Helper()
	cs, err := kubernetes.NewForConfig(f.envs[cluster].Config)
	if err != nil {
		t.Fatal(err)
	}
	return storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(ns)))
}

func firstMutating(p *remediate.Plan) (remediate.Step, bool) {
	for _, s := range p.Steps() {
		if s.Action.Mutating() {
			return s, true
		}
	}
	return remediate.Step{}, false
}

// Acceptance (issue 5): a downstream cluster whose fleet-agent Helm release has revisions
// deployed (v4) and pending-upgrade (v5). The plan's first mutating step is the rollback, with
// the equivalent helm rollback; applied at --max-risk medium it leaves revision 6 deployed with
// v4's chart, v4 superseded, and nothing else changed but the objects of v4's manifest the
// rollback re-applies; a second scan no longer reports helm/release-pending; restore brings
// the Secrets back exactly.
func TestFixRollsBackPendingAgentRelease(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := replay(t, scenario("fleet/agent-pending-upgrade-incident"), "prod-eu-1")
	cfg := f.envs["prod-eu-1"].Config
	before := everything(t, cfg)

	plan := planOf(t, f)
	first, ok := firstMutating(plan)
	if !ok || first.Action != remediate.HelmRollback {
		t.Fatalf("first mutating step: %+v (ok=%v), want the Helm rollback", first.Action, ok)
	}
	wantCmd := "helm --kubeconfig " + f.kubeconfig + " --kube-context prod-eu-1 -n cattle-fleet-system rollback " + agentRelease + " 4"
	if len(first.Commands) == 0 || first.Commands[0] != wantCmd {
		t.Errorf("rollback command %q, want %q", first.Commands, wantCmd)
	}
	if !plan.Incidents[0].Attempts[1].AboveMaxRisk || first.Risk != remediate.Medium {
		t.Errorf("the rollback is risk %s and must be above the default --max-risk low", first.Risk)
	}
	table, _, code := runCtx(context.Background(), t, "", append([]string{"fix"}, f.args()...)...)
	if code != 3 || !strings.Contains(table, wantCmd) || !strings.Contains(table, "above --max-risk low: not run") {
		t.Errorf("fix (table) exit %d, want the rollback command listed above --max-risk:\n%s", code, table)
	}
	if d := changed(before, everything(t, cfg)); len(d) != 0 {
		t.Fatalf("printing the plan changed objects: %v", d)
	}

	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(context.Background(), t, "", append([]string{"fix"}, f.args("--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir, "--verify-timeout", "20s")...)...)
	if code != 0 {
		t.Fatalf("fix --apply exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("fix --apply:\n%s%s", out, errOut)
	after := everything(t, cfg)

	// Exactly the release records and the re-applied manifest object changed.
	want := []string{
		"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v4",
		"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v5",
		"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v6",
		"Deployment/cattle-fleet-system/fleet-agent",
	}
	if got := changed(before, after); !sameSet(got, want) {
		t.Errorf("changed objects:\n  got  %v\n  want %v", got, want)
	}
	if got := journalWrites(t, dir)["prod-eu-1"]; !sameSet(got, want) {
		t.Errorf("journal writes %v, want %v", got, want)
	}

	// Helm reads the history as a rollback left it.
	store := helmStore(t, f, "prod-eu-1", agentNS)
	last, err := store.Last(agentRelease)
	if err != nil {
		t.Fatal(err)
	}
	v4, err := store.Get(agentRelease, 4)
	if err != nil {
		t.Fatal(err)
	}
	v5, err := store.Get(agentRelease, 5)
	if err != nil {
		t.Fatal(err)
	}
	if last.Version != 6 || last.Info.Status != release.StatusDeployed || last.Info.Description != "Rollback to 4" {
		t.Errorf("newest revision %d %s %q, want 6 deployed \"Rollback to 4\"", last.Version, last.Info.Status, last.Info.Description)
	}
	if last.Chart.Metadata.Version != v4.Chart.Metadata.Version || last.Manifest != v4.Manifest {
		t.Errorf("revision 6 has chart %s, want v4's %s (and v4's manifest)", last.Chart.Metadata.Version, v4.Chart.Metadata.Version)
	}
	if v4.Info.Status != release.StatusSuperseded || v5.Info.Status != release.StatusSuperseded {
		t.Errorf("v4 %s, v5 %s: want both superseded", v4.Info.Status, v5.Info.Status)
	}
	cs, _ := kubernetes.NewForConfig(cfg)
	d, err := cs.AppsV1().Deployments(agentNS).Get(context.Background(), "fleet-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "rancher/fleet-agent:v0.15.2" {
		t.Errorf("fleet-agent image %s after the rollback, want revision 4's rancher/fleet-agent:v0.15.2", img)
	}

	// A second scan no longer reports the pending release.
	sOut, sErr, _ := runCtx(context.Background(), t, "", "scan", "--kubeconfig", f.kubeconfig, "--now", f.now, "-o", "json", "-q")
	for _, fd := range parse(t, sOut, sErr).Findings {
		if fd.ID == "helm/release-pending" {
			t.Errorf("scan after the fix still reports helm/release-pending on %s", fd.Object.Name)
		}
	}

	// The backup keeps the release Secrets, payload included, private, and nothing printed them.
	secretFile := filepath.Join(dir, "objects", "prod-eu-1", "core", "Secret", agentNS, "sh.helm.release.v1."+agentRelease+".v4.yaml")
	if m := fileMode(t, secretFile); m != 0o600 {
		t.Errorf("backup %s has mode %v, want 0600", secretFile, m)
	}
	if m := fileMode(t, filepath.Join(dir, "objects")); m != 0o700 {
		t.Errorf("backup directory mode %v, want 0700", m)
	}
	payload := before["Secret/cattle-fleet-system/sh.helm.release.v1."+agentRelease+".v4"].Content["data"].(map[string]any)["release"].(string)
	if b, _ := os.ReadFile(secretFile); !strings.Contains(string(b), payload) {
		t.Errorf("the backup of v4 does not hold its payload")
	}
	for _, s := range []string{out, errOut} {
		if strings.Contains(s, payload[:64]) {
			t.Errorf("a release payload was printed")
		}
	}

	// Restore brings the Secrets (and the Deployment) back; v6 goes.
	rOut, rErr, code := runCtx(context.Background(), t, "", "restore", dir, "--kubeconfig", f.kubeconfig)
	if code != 0 {
		t.Fatalf("restore exit %d\n%s\n%s", code, rOut, rErr)
	}
	t.Logf("restore:\n%s%s", rOut, rErr)
	restored := everything(t, cfg)
	for _, k := range want {
		b, inBefore := before[k]
		r, inRestored := restored[k]
		switch {
		case inBefore != inRestored:
			t.Errorf("%s: exists before the fix %v, after restore %v", k, inBefore, inRestored)
		case inBefore && !reflect.DeepEqual(b.Content, r.Content):
			t.Errorf("%s not restored:\n  before  %s\n  restore %s", k, mustJSON(b.Content), mustJSON(r.Content))
		}
	}
	if d := changed(after, restored); !sameSet(d, want) {
		t.Errorf("restore touched %v, want exactly %v", d, want)
	}
	sOut, sErr, _ = runCtx(context.Background(), t, "", "scan", "--kubeconfig", f.kubeconfig, "--now", f.now, "-o", "json", "-q")
	pending := false
	for _, fd := range parse(t, sOut, sErr).Findings {
		pending = pending || fd.ID == "helm/release-pending"
	}
	if !pending {
		t.Errorf("after restore the release should be pending-upgrade again")
	}
}

// Acceptance (issue 5): a SUC Plan whose untagged kubectl image resolves to a tag that does not
// exist, a Job stuck pulling it, a failed Job, and a node labelled done. Given a kubectl tag the
// registry holds for the nodes' platform, the plan is patch → delete Jobs → remove label, in
// that order, and applying it does exactly that; restore puts the Plan, Jobs and label back.
func TestFixRealignsPlanWithMissingKubectlTag(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	reg := startFixRegistry(t)
	good := reg.pushIndex(t, "rancher/kubectl:v1.30.3", v1.Platform{OS: "linux", Architecture: "amd64"}, v1.Platform{OS: "linux", Architecture: "arm64"})
	f := replay(t, scenario("suc/image-missing-kubectl-tag"))
	cfg := f.envs["prod-eu-1"].Config
	before := everything(t, cfg)
	image := "--image=system-upgrade/node-maintenance:upgrade=" + good

	// Without a verified image the chain is listed, blocked.
	blocked := planOf(t, f, "--max-risk", "medium")
	if a := blocked.Incidents[0].Attempts[1]; a.Blocked == "" || !strings.Contains(a.Blocked, "--image") {
		t.Errorf("without --image the realign attempt should be blocked, asking for one: %+v", a.Blocked)
	}
	// An image the registry lacks is refused.
	missing := planOf(t, f, "--max-risk", "medium", "--image=system-upgrade/node-maintenance:upgrade="+reg.host+"/rancher/kubectl:v1.30.3-k3s1")
	if a := missing.Incidents[0].Attempts[1]; !strings.Contains(a.Blocked, "missing") {
		t.Errorf("an image the registry does not have must block the patch: %q", a.Blocked)
	}
	// An image without the nodes' platform is refused.
	armOnly := reg.pushIndex(t, "rancher/kubectl:v1.30.3-arm64", v1.Platform{OS: "linux", Architecture: "arm64"})
	arch := planOf(t, f, "--max-risk", "medium", "--image=system-upgrade/node-maintenance:upgrade="+armOnly)
	if a := arch.Incidents[0].Attempts[1]; !strings.Contains(a.Blocked, "no build for linux/amd64") {
		t.Errorf("an image without the nodes' platform must block the patch: %q", a.Blocked)
	}

	plan := planOf(t, f, "--max-risk", "medium", image)
	var actions []remediate.Action
	for _, s := range plan.Steps() {
		actions = append(actions, s.Action)
	}
	wantActions := []remediate.Action{remediate.Observe, remediate.PatchPlanImage, remediate.DeleteJob, remediate.DeleteJob, remediate.RemoveNodeLabel}
	if !reflect.DeepEqual(actions, wantActions) {
		t.Fatalf("plan steps %v, want %v", actions, wantActions)
	}
	if a := plan.Incidents[0].Attempts[1]; a.Blocked != "" || a.AboveMaxRisk || len(a.Steps) != 4 {
		t.Fatalf("the realign chain should be one runnable attempt of 4 steps: %+v", a)
	}

	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(context.Background(), t, "", append([]string{"fix"}, f.args("--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir, "--verify-timeout", "1s", image)...)...)
	t.Logf("fix --apply:\n%s%s", out, errOut)
	// Every step is written; the chain's last one waits for the Plan done on the nodes, which
	// no system-upgrade-controller runs here to do: unverified, exit 3.
	if code != 3 || !strings.Contains(out, "Plan system-upgrade/node-maintenance on prod-eu-1 is not done: node prod-eu-1-worker-1") {
		t.Fatalf("fix --apply exit %d, want 3 with the Plan not done on the nodes", code)
	}
	after := everything(t, cfg)
	want := []string{
		"Plan/system-upgrade/node-maintenance",
		"Job/system-upgrade/apply-node-maintenance-on-prod-eu-1-worker-1-with-4ee557c-0598b",
		"Job/system-upgrade/apply-node-maintenance-on-prod-eu-1-worker-2-with-4ee557c-b1741",
		"Node/prod-eu-1-worker-2",
	}
	if got := changed(before, after); !sameSet(got, want) {
		t.Errorf("changed objects:\n  got  %v\n  want %v", got, want)
	}
	if img := after["Plan/system-upgrade/node-maintenance"].Content["spec"].(map[string]any)["upgrade"].(map[string]any)["image"]; img != good {
		t.Errorf("Plan image %v, want %s", img, good)
	}
	for _, k := range want[1:3] {
		if _, ok := after[k]; ok {
			t.Errorf("%s still exists", k)
		}
	}
	if l := after["Node/prod-eu-1-worker-2"].Content["labels"].(map[string]string); l["plan.upgrade.cattle.io/node-maintenance"] != "" {
		t.Errorf("node label still there: %v", l)
	}
	if l := after["Node/prod-eu-1-worker-2"].Content["labels"].(map[string]string); l["node-maintenance"] != "enabled" {
		t.Errorf("other node labels must stay: %v", l)
	}

	rOut, rErr, code := runCtx(context.Background(), t, "", "restore", dir, "--kubeconfig", f.kubeconfig)
	t.Logf("restore:\n%s%s", rOut, rErr)
	if code != 0 {
		t.Fatalf("restore exit %d", code)
	}
	restored := everything(t, cfg)
	for _, k := range want {
		if !reflect.DeepEqual(before[k].Content, restored[k].Content) {
			t.Errorf("%s not restored:\n  before  %s\n  restore %s", k, mustJSON(before[k].Content), mustJSON(restored[k].Content))
		}
	}
}

// fixCase is one stuck scenario with an automatic fix.
type fixCase struct {
	scenario string
	clusters []string // replay only these (default: every cluster of the bundle)
	flags    []string
	// applied are the actions the run must write, in order; exit is the expected exit code
	// (3 when a step cannot verify here: the test servers run no Fleet, deployment or SUC
	// controller, so a resync or restart is written and then waits in vain).
	applied []remediate.Action
	exit    int
	// pendingDelete: the deleted object keeps a finalizer no controller here removes, so the
	// delete never completes and restore must refuse to "put back" an object still there.
	pendingDelete bool
}

var fixCases = []fixCase{
	{scenario: "helm/release-pending-positive", flags: []string{"--max-risk", "medium"}, applied: []remediate.Action{remediate.HelmRollback}},
	{scenario: "helm/release-failed-positive", flags: []string{"--max-risk", "medium"}, applied: []remediate.Action{remediate.HelmRollback}},
	// Marking a pending first install failed only lets the next install through: no Fleet
	// agent or operator installs again here, so that step waits in vain.
	{scenario: "helm/no-deployed-release-positive", flags: []string{"--max-risk", "high"}, applied: []remediate.Action{remediate.HelmRollback, remediate.HelmMarkFailed}, exit: 3},
	{scenario: "fleet/agent-upgrade-stuck-positive", applied: []remediate.Action{remediate.RedeployAgent}, exit: 3},
	{scenario: "fleet/registration-broken-positive", applied: []remediate.Action{remediate.RedeployAgent}, exit: 3},
	// --only fleet/ leaves out the crd/missing the bundle's message names (its root cause),
	// so the bundle's own ladder is what fix plans.
	{scenario: "fleet/bundle-err-applied-positive", flags: []string{"--only", "fleet/"}, applied: []remediate.Action{remediate.ForceSync}, exit: 3},
	// The scenario holds the Bundle, so the force-sync comes first (unverified here: no Fleet
	// controller runs), then the controller restart.
	{scenario: "fleet/content-missing-positive", applied: []remediate.Action{remediate.ForceSync, remediate.RolloutRestart}, exit: 3},
	// Deleting a BundleDeployment is offered only where a ladder says so (here a --catalog
	// override), at the repair rung; the controller would re-create it, so nothing verifies
	// more than its removal.
	{scenario: "fleet/bundle-err-applied-positive", flags: []string{"--only", "fleet/", "--max-risk", "high", "--catalog", filepath.Join("testdata", "catalog-delete-bundledeployment.yaml")},
		applied: []remediate.Action{remediate.DeleteBundleDeployment}, exit: 3, pendingDelete: true},
	{scenario: "suc/node-left-cordoned-positive", applied: []remediate.Action{remediate.Uncordon}},
	// A SUC Job deleted or a plan label removed waits for the Plan done on the node, which
	// no system-upgrade-controller runs here to do (TestFixWaitsForThePlanOnTheNode has a
	// stand-in that does).
	{scenario: "suc/node-label-blocks-rerun-positive", flags: []string{"--max-risk", "medium"}, applied: []remediate.Action{remediate.RemoveNodeLabel}, exit: 3},
	{scenario: "suc/job-deadline-positive", flags: []string{"--max-risk", "medium"}, applied: []remediate.Action{remediate.DeleteJob, remediate.Uncordon}, exit: 3},
	{scenario: "suc/job-stale-spec-positive", flags: []string{"--max-risk", "medium"}, applied: []remediate.Action{remediate.RolloutRestart, remediate.DeleteJob}, exit: 3},
	// --only suc/plan-stuck leaves out the Plan's root cause (suc/plan-invalid, guided only) to
	// exercise the plan-stuck ladder.
	{scenario: "suc/plan-stuck-positive", flags: []string{"--only", "suc/plan-stuck"}, applied: []remediate.Action{remediate.RolloutRestart}, exit: 3},
	// The whole example at --max-risk medium, the upgrade gate's manifest rewrite and storage
	// migration included (the migration's StorageVersionMigration is named in its plan; no
	// controller acts on it on this server, so it is deleted again and the objects written back).
	{scenario: "../../examples/fleet-upgrade-stuck", flags: []string{"--max-risk", "medium"},
		applied: []remediate.Action{remediate.RedeployAgent, remediate.HelmRollback, remediate.RolloutRestart, remediate.MigrateStorage, remediate.HelmRewriteAPIs}, exit: 3},
}

// Every stuck scenario with an automatic fix, replayed into real API servers: fix --apply
// --yes changes exactly the objects its journal names, each of them an object its plan said
// it would touch, and restore brings every one of them back.
func TestFixScenarios(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	for _, tc := range fixCases {
		name := tc.scenario
		if len(tc.flags) > 2 {
			name += "+" + filepath.Base(tc.flags[len(tc.flags)-1])
		}
		t.Run(name, func(t *testing.T) {
			f := replay(t, scenario(tc.scenario), tc.clusters...)
			before := map[string]map[string]objState{}
			for name, env := range f.envs {
				before[name] = everything(t, env.Config)
			}
			plan := planOf(t, f, tc.flags...)
			dir := filepath.Join(t.TempDir(), "backup")
			out, errOut, code := runCtx(context.Background(), t, "", append([]string{"fix"}, f.args(append(tc.flags, "--apply", "--yes", "--backup-dir", dir, "--verify-timeout", "1s")...)...)...)
			t.Logf("fix --apply:\n%s%s", out, errOut)
			if code != tc.exit {
				t.Fatalf("fix --apply exit %d, want %d", code, tc.exit)
			}
			entries, err := execute.ReadJournal(dir)
			if err != nil {
				t.Fatal(err)
			}
			var applied []remediate.Action
			for _, e := range entries {
				if e.Phase != execute.PhaseApplied {
					continue
				}
				applied = append(applied, remediate.Action(e.Action))
				st, ok := plan.Step(e.Step)
				if !ok {
					t.Errorf("the journal names step %s, which is not in the plan", e.Step)
					continue
				}
				for _, w := range e.Writes {
					named := st.Action == remediate.HelmRollback && (w.Op == "apply" || w.Op == "create")
					for _, o := range append(append([]remediate.Object{}, st.Touches...), st.Creates...) {
						named = named || (o.Cluster == w.Cluster && o.Kind == w.Kind && o.Namespace == w.Namespace && o.Name == w.Name)
					}
					if !named {
						t.Errorf("step %s wrote %s %s/%s, which its plan did not name", st.ID, w.Kind, w.Namespace, w.Name)
					}
				}
			}
			if !reflect.DeepEqual(applied, tc.applied) {
				t.Errorf("applied %v, want %v", applied, tc.applied)
			}
			writes := journalWrites(t, dir)
			after := map[string]map[string]objState{}
			for name, env := range f.envs {
				after[name] = everything(t, env.Config)
				if got := changed(before[name], after[name]); !sameSet(got, writes[name]) {
					t.Errorf("%s: changed objects %v, but the journal names %v", name, got, writes[name])
				}
			}

			rOut, rErr, code := runCtx(context.Background(), t, "", "restore", dir, "--kubeconfig", f.kubeconfig)
			t.Logf("restore:\n%s%s", rOut, rErr)
			if tc.pendingDelete {
				if code != 1 || !strings.Contains(rOut, "delete is still pending") {
					t.Errorf("restore exit %d; it must refuse while the delete is pending", code)
				}
				return
			}
			if code != 0 {
				t.Fatalf("restore exit %d", code)
			}
			for name, env := range f.envs {
				restored := everything(t, env.Config)
				for _, k := range writes[name] {
					b, inBefore := before[name][k]
					r, inRestored := restored[k]
					switch {
					case inBefore != inRestored:
						t.Errorf("%s %s: exists before the fix %v, after restore %v", name, k, inBefore, inRestored)
					case inBefore && !reflect.DeepEqual(b.Content, r.Content):
						t.Errorf("%s %s not restored:\n  before  %s\n  restore %s", name, k, mustJSON(b.Content), mustJSON(r.Content))
					}
				}
				if got := changed(after[name], restored); !sameSet(got, writes[name]) {
					t.Errorf("%s: restore changed %v, want exactly %v", name, got, writes[name])
				}
			}
		})
	}
}

// Without --yes every mutating step asks on the input stream: "n" skips it (nothing written,
// the incident stays open), "y" runs it.
func TestFixAsksBeforeEachStep(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := replay(t, scenario("suc/node-left-cordoned-positive"))
	cfg := f.envs["prod-eu-1"].Config
	before := everything(t, cfg)
	dir := filepath.Join(t.TempDir(), "backup")
	args := append([]string{"fix"}, f.args("--apply", "--backup-dir", dir)...)
	out, errOut, code := runCtx(context.Background(), t, "n\n", args...)
	t.Logf("answered n:\n%s%s", out, errOut)
	if code != 3 || !strings.Contains(out, "Apply this step? [y/N/q]") || !strings.Contains(out, "declined") {
		t.Errorf("exit %d; want the prompt, the step declined and exit 3", code)
	}
	if d := changed(before, everything(t, cfg)); len(d) != 0 {
		t.Errorf("a declined step wrote %v", d)
	}
	out, errOut, code = runCtx(context.Background(), t, "y\n", args...)
	t.Logf("answered y:\n%s%s", out, errOut)
	if code != 0 {
		t.Errorf("exit %d after answering y", code)
	}
	if d := changed(before, everything(t, cfg)); !sameSet(d, []string{"Node/prod-eu-1-worker-2"}) {
		t.Errorf("changed %v, want the node alone", d)
	}
}
