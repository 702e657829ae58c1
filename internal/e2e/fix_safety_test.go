package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

// An object changed by someone else between the server-side dry-run and the write: the write
// (held to the resourceVersion read when planning) is refused, nothing is overwritten or
// written at all, fix says why, plans again and stops. The change is injected by a test hook
// (execute.Hooks.BeforeApply): a real API server cannot be made to change an object at that
// precise moment otherwise.
func TestFixConflictBetweenDryRunAndWriteMakesNoWrite(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := replay(t, scenario("fleet/agent-pending-upgrade-incident"), "prod-eu-1")
	cfg := f.envs["prod-eu-1"].Config
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v5 := "sh.helm.release.v1." + agentRelease + ".v5"
	before := everything(t, cfg)
	hooks := &execute.Hooks{BeforeApply: func(ctx context.Context, st remediate.Step) error {
		if st.Action != remediate.HelmRollback {
			return nil
		}
		s, err := cs.CoreV1().Secrets(agentNS).Get(ctx, v5, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Labels["touched-by"] = "another-operator"
		_, err = cs.CoreV1().Secrets(agentNS).Update(ctx, s, metav1.UpdateOptions{})
		return err
	}}
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runCtx(execute.WithHooks(context.Background(), hooks), t, "", append([]string{"fix"}, f.args("--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir)...)...)
	t.Logf("fix --apply:\n%s%s", out, errOut)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	all := out + errOut
	for _, want := range []string{"changed since the plan was made", "no write was made", "The plan made again from the clusters as they are now"} {
		if !strings.Contains(all, want) {
			t.Errorf("the output does not say %q", want)
		}
	}
	after := everything(t, cfg)
	if got := changed(before, after); !sameSet(got, []string{"Secret/" + agentNS + "/" + v5}) {
		t.Errorf("changed objects %v: only the injected change to %s may differ", got, v5)
	}
	s, err := cs.CoreV1().Secrets(agentNS).Get(context.Background(), v5, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Labels["touched-by"] != "another-operator" || s.Labels["status"] != "pending-upgrade" {
		t.Errorf("revision 5 was overwritten: labels %v", s.Labels)
	}
	entries, _ := execute.ReadJournal(dir)
	var phases []string
	for _, e := range entries {
		if e.Action == string(remediate.HelmRollback) {
			phases = append(phases, e.Phase)
		}
	}
	if want := []string{execute.PhaseBegin, execute.PhaseBackup, execute.PhaseDryRun, execute.PhaseConflict}; !reflect.DeepEqual(phases, want) {
		t.Errorf("journal of the rollback %v, want %v", phases, want)
	}
}

// An object changed after the plan was made: found when the step reads it for its backup
// (changed before the step began), or refused by the API server itself (changed between the
// dry-run and the write: the merge patch carries the resourceVersion read when planning and
// the server answers 409). Either way no write is made and fix says why. The change is
// injected by test hooks.
func TestFixConflictAfterPlanningMakesNoWrite(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	for _, at := range []string{"before the step", "between dry-run and write"} {
		t.Run(at, func(t *testing.T) {
			f := replay(t, scenario("suc/node-left-cordoned-positive"))
			cfg := f.envs["prod-eu-1"].Config
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			before := everything(t, cfg)
			annotate := func(ctx context.Context, node string) error {
				n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
				if err != nil {
					return err
				}
				n.Annotations["ops.example.com/maintenance"] = "disk replacement"
				_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
				return err
			}
			hooks := &execute.Hooks{}
			want := "changed since the plan was made (resourceVersion"
			if at == "before the step" {
				hooks.AfterPhase = func(ctx context.Context, st remediate.Step, phase string) error {
					if st.Action == remediate.Uncordon && phase == execute.PhaseBegin {
						return annotate(ctx, st.Target.Name)
					}
					return nil
				}
			} else {
				hooks.BeforeApply = func(ctx context.Context, st remediate.Step) error {
					if st.Action == remediate.Uncordon {
						return annotate(ctx, st.Target.Name)
					}
					return nil
				}
				want = "the API server refused the write: Conflict"
			}
			dir := filepath.Join(t.TempDir(), "backup")
			out, errOut, code := runCtx(execute.WithHooks(context.Background(), hooks), t, "", append([]string{"fix"}, f.args("--apply", "--yes", "--backup-dir", dir)...)...)
			t.Logf("fix --apply:\n%s%s", out, errOut)
			if code != 1 || !strings.Contains(out+errOut, want) || !strings.Contains(out+errOut, "no write was made") {
				t.Errorf("exit %d; the output must say %q and that no write was made", code, want)
			}
			n, err := cs.CoreV1().Nodes().Get(context.Background(), "prod-eu-1-worker-2", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !n.Spec.Unschedulable || n.Annotations["ops.example.com/maintenance"] != "disk replacement" {
				t.Errorf("the node was written: unschedulable=%v annotations=%v", n.Spec.Unschedulable, n.Annotations)
			}
			if got := changed(before, everything(t, cfg)); !sameSet(got, []string{"Node/prod-eu-1-worker-2"}) {
				t.Errorf("changed objects %v: only the injected annotation may differ", got)
			}
		})
	}
}

// A fix killed at every step boundary (after each journaled phase of each step — a test hook
// returns execute.ErrKilled there, which stops the run on the spot as a killed process would)
// and run again with the same --backup-dir ends exactly as an uninterrupted run: the same
// objects changed, each step finished once in the journal and written at most once, and no
// backup overwritten.
func TestFixResumesAfterKillAtEveryStepBoundary(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	if testing.Short() {
		t.Skip("starts one API server per boundary")
	}
	flags, want := sucImageFix(t)
	actions := []remediate.Action{remediate.Observe, remediate.PatchPlanImage, remediate.DeleteJob, remediate.DeleteJob, remediate.RemoveNodeLabel}
	for k, action := range actions {
		phases := []string{execute.PhaseBegin, execute.PhaseBackup, execute.PhaseDryRun, execute.PhaseApplied, execute.PhaseVerified}
		if action == remediate.Observe {
			phases = []string{execute.PhaseBegin, execute.PhaseBackup, execute.PhaseVerified}
		}
		if k == len(actions)-1 {
			// The chain's last step waits for the Plan done on the nodes; no SUC controller
			// runs here, so it ends unverified.
			phases[len(phases)-1] = execute.PhaseUnverified
		}
		for _, phase := range phases {
			t.Run(fmt.Sprintf("step%d-%s-after-%s", k+1, action, phase), func(t *testing.T) {
				f := replay(t, scenario("suc/image-missing-kubectl-tag"))
				cfg := f.envs["prod-eu-1"].Config
				before := everything(t, cfg)
				// Step IDs hold the UIDs this server gave the objects: plan here.
				steps := planOf(t, f, flags...).Steps()
				var got []remediate.Action
				for _, s := range steps {
					got = append(got, s.Action)
				}
				if !reflect.DeepEqual(got, actions) {
					t.Fatalf("plan %v, want %v", got, actions)
				}
				st := steps[k]
				dir := filepath.Join(t.TempDir(), "backup")
				killed := false
				hooks := &execute.Hooks{AfterPhase: func(_ context.Context, s remediate.Step, p string) error {
					if !killed && s.ID == st.ID && p == phase {
						killed = true
						return execute.ErrKilled
					}
					return nil
				}}
				args := append([]string{"fix"}, f.args(append(flags, "--apply", "--yes", "--backup-dir", dir)...)...)
				_, errOut, code := runCtx(execute.WithHooks(context.Background(), hooks), t, "", args...)
				if !killed || code != 1 || !strings.Contains(errOut, execute.ErrKilled.Error()) {
					t.Fatalf("the run was not killed at %s of step %d (exit %d): %s", phase, k+1, code, errOut)
				}
				saved := backupFiles(t, dir)

				out, errOut, code := runCtx(context.Background(), t, "", args...)
				t.Logf("rerun:\n%s%s", out, errOut)
				// The rerun finishes the chain; its last step never sees the Plan done (no SUC
				// controller runs here), which the rerun reports: exit 3, the step named not
				// verified — whether the step is finished as the new plan holds it or continued
				// from the journal. Only a run killed after that step's own terminal phase has
				// nothing left to finish (it had journaled the step unverified and exited on
				// the spot): its rerun plans from the clusters as they are and ends 0.
				lastDone := k == len(actions)-1 && phase == execute.PhaseUnverified
				switch {
				case lastDone && code != 0:
					t.Fatalf("rerun exit %d, want 0: nothing was left to finish", code)
				case !lastDone && code != 3:
					t.Fatalf("rerun exit %d, want 3: the chain's last step cannot be verified without a SUC controller", code)
				case code == 3 && !strings.Contains(out+errOut, "not verified"):
					t.Fatalf("rerun exit 3 without naming the step not verified")
				}
				if got := changed(before, everything(t, cfg)); !sameSet(got, want) {
					t.Errorf("changed objects after the rerun:\n  got  %v\n  want %v", got, want)
				}
				terminal, applied := terminalCount(t, dir)
				for _, s := range steps {
					if terminal[s.ID] != 1 {
						t.Errorf("step %s (%s) finished %d times in the journal, want once", s.ID, s.Action, terminal[s.ID])
					}
					if s.Action.Mutating() && applied[s.ID] != 1 {
						t.Errorf("step %s (%s) applied %d times in the journal, want once", s.ID, s.Action, applied[s.ID])
					}
				}
				for path, b := range saved {
					if now, err := os.ReadFile(path); err != nil || string(now) != string(b) {
						t.Errorf("backup %s was overwritten or lost by the rerun", path)
					}
				}
				// Every object backup holds the object as it was before the fix.
				index, err := execute.ReadIndex(dir)
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]bool{}
				for _, e := range index {
					if !e.Existed || seen[e.Key()] {
						continue
					}
					seen[e.Key()] = true
					key := e.Kind + "/" + e.Namespace + "/" + e.Name
					if e.Namespace == "" {
						key = e.Kind + "/" + e.Name
					}
					if e.ResourceVersion != before[key].RV {
						t.Errorf("backup of %s is at resourceVersion %s, want the state before the fix (%s)", key, e.ResourceVersion, before[key].RV)
					}
				}
				if len(seen) != len(want) {
					t.Errorf("%d objects backed up, want %d", len(seen), len(want))
				}
			})
		}
	}
}

// backupFiles reads every file under the backup's objects directory.
func backupFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	_ = filepath.WalkDir(filepath.Join(dir, "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != "index.jsonl" {
			b, _ := os.ReadFile(p)
			out[p] = b
		}
		return nil
	})
	return out
}

// A Helm rollback writes several objects (revision 6, the manifest's Deployment, revisions 4,
// 5 and 6 again). Killed after each of those writes (a test hook, Hooks.AfterWrite, stops the
// run there as kill -9 would), the rerun finishes the rollback from the records it left: the
// history ends as an uninterrupted rollback leaves it, and the journal shows the step applied
// and finished once.
func TestFixFinishesRollbackKilledBetweenWrites(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	for k := 1; k <= 5; k++ {
		t.Run(fmt.Sprintf("after-write-%d", k), func(t *testing.T) {
			f := replay(t, scenario("fleet/agent-pending-upgrade-incident"), "prod-eu-1")
			cfg := f.envs["prod-eu-1"].Config
			before := everything(t, cfg)
			dir := filepath.Join(t.TempDir(), "backup")
			n := 0
			var killedAfter execute.Write
			hooks := &execute.Hooks{AfterWrite: func(_ context.Context, st remediate.Step, w execute.Write) error {
				if n++; n == k {
					killedAfter = w
					return execute.ErrKilled
				}
				return nil
			}}
			args := append([]string{"fix"}, f.args("--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir)...)
			_, errOut, code := runCtx(execute.WithHooks(context.Background(), hooks), t, "", args...)
			if code != 1 || killedAfter.Name == "" {
				t.Fatalf("not killed after write %d (exit %d): %s", k, code, errOut)
			}
			t.Logf("killed after %s %s", killedAfter.Op, killedAfter.Name)
			out, errOut, code := runCtx(context.Background(), t, "", args...)
			t.Logf("rerun:\n%s%s", out, errOut)
			checkRerunExit(t, code, out)
			want := []string{
				"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v4",
				"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v5",
				"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v6",
				"Deployment/cattle-fleet-system/fleet-agent",
			}
			if got := changed(before, everything(t, cfg)); !sameSet(got, want) {
				t.Errorf("changed objects:\n  got  %v\n  want %v", got, want)
			}
			checkRolledBackOnce(t, f, dir)
			// The journal names every write, those of the killed run included: restore undoes all.
			if rOut, rErr, code := runCtx(context.Background(), t, "", "restore", dir, "--kubeconfig", f.kubeconfig); code != 0 {
				t.Fatalf("restore exit %d\n%s%s", code, rOut, rErr)
			}
			restored := everything(t, cfg)
			for _, key := range want {
				b, inBefore := before[key]
				r, inRestored := restored[key]
				if inBefore != inRestored || inBefore && !reflect.DeepEqual(b.Content, r.Content) {
					t.Errorf("%s not restored", key)
				}
			}
		})
	}
}

// The executor's guard, on a real API server: a step aimed at a Fleet registration, a CRD, a
// Namespace, a registration Secret or a Secret dressed up as Helm storage is refused when the
// step reads the object for its backup, before any dry-run or write. The steps are built by
// hand: the planner never makes them (TestNoPlanTouchesGuardedObjects).
func TestFixGuardRefusesProtectedObjects(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := replay(t, scenario("fleet/registration-broken-positive"))
	cfg := f.envs["local"].Config
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mk := func(s *corev1.Secret) {
		if _, err := cs.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent-bootstrap", Namespace: "cattle-fleet-system"}, StringData: map[string]string{"token": "t"}})
	mk(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.fake.v1", Namespace: "cattle-fleet-system", Labels: map[string]string{"owner": "helm"}}, Type: corev1.SecretTypeOpaque})
	before := everything(t, cfg)
	targets := []remediate.Object{
		{APIVersion: "fleet.cattle.io/v1alpha1", Kind: "ClusterRegistration", Namespace: "fleet-default", Name: "request-2x9mk"},
		{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "bundles.fleet.cattle.io"},
		{APIVersion: "v1", Kind: "Namespace", Name: "cattle-fleet-system"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "cattle-fleet-system", Name: "fleet-agent-bootstrap"},
		{APIVersion: "v1", Kind: "Secret", Namespace: "cattle-fleet-system", Name: "sh.helm.release.v1.fake.v1"},
	}
	bk, err := execute.NewBackupKey([]byte("a test's backup key of 32 bytes."), "test key")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range targets {
		o.Cluster = "local"
		key := o.Kind + "/" + o.Namespace + "/" + o.Name
		if o.Namespace == "" {
			key = o.Kind + "/" + o.Name
		}
		cur, ok := before[key]
		if !ok {
			t.Fatalf("%s is not on the server", key)
		}
		o.UID, o.ResourceVersion = cur.UID, cur.RV
		st := remediate.Step{ID: "guard-" + o.Kind, Action: remediate.RemoveNodeLabel, Rung: remediate.RungRepair, Risk: remediate.Low, Cluster: "local",
			Target: o, Touches: []remediate.Object{o}, Label: "kubernetes.io/metadata.name", Change: "remove a label", Verify: "-", Precondition: "-"}
		p := &remediate.Plan{MaxRisk: remediate.High, Incidents: []remediate.IncidentPlan{{ID: "i", Attempts: []remediate.Attempt{{Rung: st.Rung, Risk: st.Risk, Steps: []remediate.Step{st}}}}}}
		res, err := execute.Run(ctx, p, execute.Options{BackupDir: filepath.Join(t.TempDir(), "b"), Yes: true, Clients: execute.NewClients(map[string]*rest.Config{"local": cfg}), Key: bk})
		var ge *remediate.GuardError
		if !errors.As(err, &ge) {
			t.Errorf("%s: %v, want the guard to refuse", key, err)
		}
		if res != nil && len(res.Outcomes) > 0 && res.Outcomes[0].Status != execute.StatusFailed {
			t.Errorf("%s: status %s", key, res.Outcomes[0].Status)
		}
	}
	if d := changed(before, everything(t, cfg)); len(d) != 0 {
		t.Errorf("guarded objects changed: %v", d)
	}
}
