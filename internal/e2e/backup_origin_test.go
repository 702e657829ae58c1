package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/remediate"
	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

// A backup directory is a set of files: edited, swapped or built by hand, it must not turn
// the operator's credentials against a cluster. Each attack below is made on a copy of a real
// backup (fix rolled back the pending agent release on a real API server). Where the attack
// does not need a digest to be wrong, the digests are recomputed as an attacker who read the
// format would: the MAC under the per-user key, which the attacker does not hold, refuses it.
// The same edit sealed again with the key (as a holder of the key could) shows the check that
// stops even that holder. Every refusal is made before any request: a server that only counts
// requests gets none, and the real server holds exactly what it held before restore ran.
func TestRestoreRefusesTamperedBackups(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := replay(t, scenario("fleet/agent-pending-upgrade-incident"), "prod-eu-1")
	cfg := f.envs["prod-eu-1"].Config
	dir := filepath.Join(t.TempDir(), "backup")
	if out, errOut, code := runCtx(context.Background(), t, "", append([]string{"fix"}, f.args("--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir, "--verify-timeout", "20s")...)...); code != 0 {
		t.Fatalf("fix --apply exit %d\n%s%s", code, out, errOut)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v4 := "objects/prod-eu-1/core/Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v4.yaml"

	noKey := "the MAC of backup.json does not verify"
	for _, tc := range []struct {
		name, reason string
		tamper       func(t *testing.T, copy string)
		// absent names an object the attack would create.
		absent func() error
		// resealed: the attack recomputed the digests; tried as it is (the MAC refuses it),
		// then sealed with the key, when reason must refuse it.
		resealed bool
	}{
		{
			name:     "index points at a file outside the backup",
			resealed: true,
			reason:   `"../outside/private.yaml" is not a path inside the backup directory`,
			tamper: func(t *testing.T, copy string) {
				outside := filepath.Join(filepath.Dir(copy), "outside")
				must(t, os.MkdirAll(outside, 0o700))
				b := mustRead(t, filepath.Join(copy, v4))
				must(t, os.WriteFile(filepath.Join(outside, "private.yaml"), bytes.ReplaceAll(b, []byte("deployed"), []byte("superseded")), 0o600))
				resealBackup(t, copy, func(idx []map[string]any) []map[string]any {
					for _, e := range idx {
						if f, _ := e["file"].(string); strings.HasSuffix(f, ".v4.yaml") {
							e["file"] = "../outside/private.yaml"
						}
					}
					return idx
				})
			},
		},
		{
			name:     "backup file is a symbolic link out of the backup",
			resealed: true,
			reason:   "passes through a symbolic link",
			tamper: func(t *testing.T, copy string) {
				outside := filepath.Join(filepath.Dir(copy), "private.yaml")
				must(t, os.WriteFile(outside, mustRead(t, filepath.Join(copy, v4)), 0o600))
				must(t, os.Remove(filepath.Join(copy, v4)))
				must(t, os.Symlink(outside, filepath.Join(copy, v4)))
				resealBackup(t, copy, nil)
			},
		},
		{
			name:     "index adds a cluster-admin ClusterRoleBinding",
			resealed: true,
			reason:   "is not one fix writes",
			tamper: func(t *testing.T, copy string) {
				addBinding(t, copy, false)
			},
			absent: func() error {
				_, err := cs.RbacV1().ClusterRoleBindings().Get(context.Background(), "unstick-escalate", metav1.GetOptions{})
				return err
			},
		},
		{
			name:     "a cluster-admin ClusterRoleBinding dressed as the release's manifest object",
			resealed: true,
			reason:   "fix never deletes a ClusterRoleBinding.rbac.authorization.k8s.io",
			tamper: func(t *testing.T, copy string) {
				addBinding(t, copy, true)
			},
			absent: func() error {
				_, err := cs.RbacV1().ClusterRoleBindings().Get(context.Background(), "unstick-escalate", metav1.GetOptions{})
				return err
			},
		},
		{
			name:     "a Secret body named other than its guarded index line",
			resealed: true,
			reason:   "not the object its index line names",
			tamper: func(t *testing.T, copy string) {
				p := filepath.Join(copy, v4)
				b := mustRead(t, p)
				b = bytes.Replace(b, []byte("name: sh.helm.release.v1."+agentRelease+".v4"), []byte("name: fleet-agent-bootstrap"), 1)
				must(t, os.WriteFile(p, b, 0o600))
				resealBackup(t, copy, nil)
			},
			absent: func() error {
				_, err := cs.CoreV1().Secrets(agentNS).Get(context.Background(), "fleet-agent-bootstrap", metav1.GetOptions{})
				return err
			},
		},
		{
			name:     "journal records a delete of a privileged Deployment in kube-system",
			reason:   "fix never deletes a Deployment.apps",
			resealed: true,
			tamper: func(t *testing.T, copy string) {
				addDeletedDeployment(t, copy)
			},
			absent: func() error {
				_, err := cs.AppsV1().Deployments("kube-system").Get(context.Background(), "node-shell", metav1.GetOptions{})
				return err
			},
		},
		{
			name:   "backup.json and journal sealed with another key",
			reason: "it was authenticated with another key",
			tamper: func(t *testing.T, copy string) {
				sealWith(t, copy, []byte("an attacker's key, 32 bytes long!"))
			},
		},
		{
			name:   "journal chained with another key",
			reason: "journal.jsonl line 1 does not verify",
			tamper: func(t *testing.T, copy string) {
				chainJournal(t, copy, []byte("an attacker's key, 32 bytes long!"))
				sealOrigin(t, copy, userKey(t))
			},
		},
		{
			name:   "the journal's last line cut off",
			reason: "lines were removed",
			tamper: func(t *testing.T, copy string) {
				p := filepath.Join(copy, execute.JournalFile)
				b := bytes.TrimSuffix(mustRead(t, p), []byte("\n"))
				must(t, os.WriteFile(p, b[:bytes.LastIndexByte(b, '\n')+1], 0o600))
			},
		},
		{
			name:   "one file edited after fix wrote it",
			reason: "does not match its digest",
			tamper: func(t *testing.T, copy string) {
				p := filepath.Join(copy, v4)
				b := mustRead(t, p)
				must(t, os.WriteFile(p, bytes.Replace(b, []byte("owner: helm"), []byte("owner: helm\n    edited: \"yes\""), 1), 0o600))
			},
		},
		{
			name:   "written by an older unstick",
			reason: "written by an older unstick",
			tamper: func(t *testing.T, copy string) {
				must(t, os.Remove(filepath.Join(copy, execute.OriginFile)))
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copy := copyBackup(t, dir)
			tc.tamper(t, copy)
			before := everything(t, cfg)
			if tc.resealed {
				refusedBeforeAnyRequest(t, copy, f.kubeconfig, noKey)
				sealWith(t, copy, userKey(t))
			}
			refusedBeforeAnyRequest(t, copy, f.kubeconfig, tc.reason)
			if d := changed(before, everything(t, cfg)); len(d) != 0 {
				t.Errorf("a refused restore wrote to the server: %v", d)
			}
			if tc.absent != nil {
				if err := tc.absent(); err == nil {
					t.Errorf("the object the attack names exists")
				}
			}
		})
	}

	// The same backup restored against another cluster whose objects have the same names:
	// the context of the same name now reaches a second API server.
	t.Run("taken from another cluster", func(t *testing.T) {
		other := replay(t, scenario("fleet/agent-pending-upgrade-incident"), "prod-eu-1")
		ocfg := other.envs["prod-eu-1"].Config
		before := everything(t, ocfg)
		out, errOut, code := runCtx(context.Background(), t, "", "restore", dir, "--kubeconfig", other.kubeconfig, "--force")
		if code != 1 || !strings.Contains(errOut, "it was taken from another cluster") {
			t.Errorf("restore against another cluster exit %d, want 1 and a refusal naming the cluster:\n%s%s", code, out, errOut)
		}
		if d := changed(before, everything(t, ocfg)); len(d) != 0 {
			t.Errorf("a refused restore wrote to the other server: %v", d)
		}
		// fix --apply with that directory, against the other cluster, is refused as well.
		out, errOut, code = runCtx(context.Background(), t, "", append([]string{"fix"}, other.args("--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir)...)...)
		if code != 1 || !strings.Contains(errOut, "it was taken from another cluster") {
			t.Errorf("fix --apply into a backup of another cluster exit %d, want 1 and the refusal:\n%s%s", code, out, errOut)
		}
		if d := changed(before, everything(t, ocfg)); len(d) != 0 {
			t.Errorf("a refused fix wrote to the other server: %v", d)
		}
	})

	// The untampered backup is restored: the refusals above came from the attacks. The key is
	// read from a Secret the operator names (the per-user key, copied there), after a Secret
	// holding another key is refused.
	t.Run("untampered", func(t *testing.T) {
		for name, key := range map[string][]byte{"unstick-backup-key": userKey(t), "not-the-key": []byte("another key of at least 32 bytes")} {
			_, err := cs.CoreV1().Secrets("kube-system").Create(context.Background(), &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system"}, Data: map[string][]byte{"key": key}}, metav1.CreateOptions{})
			must(t, err)
		}
		before := everything(t, cfg)
		out, errOut, code := runCtx(context.Background(), t, "", "restore", copyBackup(t, dir), "--kubeconfig", f.kubeconfig, "--backup-key-secret", "kube-system/not-the-key")
		if code != 1 || !strings.Contains(errOut, "it was authenticated with another key") || !strings.Contains(errOut, `Secret kube-system/not-the-key data "key"`) {
			t.Errorf("restore with the key of another Secret exit %d, want 1 and the key refused:\n%s%s", code, out, errOut)
		}
		if d := changed(before, everything(t, cfg)); len(d) != 0 {
			t.Errorf("a refused restore wrote to the server: %v", d)
		}
		out, errOut, code = runCtx(context.Background(), t, "", "restore", copyBackup(t, dir), "--kubeconfig", f.kubeconfig, "--backup-key-secret", "kube-system/unstick-backup-key")
		if code != 0 {
			t.Fatalf("restore of the untampered backup exit %d\n%s%s", code, out, errOut)
		}
		if d := changed(before, everything(t, cfg)); len(d) == 0 {
			t.Errorf("restore of the untampered backup changed nothing")
		}
	})

	// A Deployment fix wrote (the rollback re-applied it), deleted since by someone else:
	// restore, even with --force, does not create it — fix never deletes a Deployment.
	t.Run("a written Deployment deleted since", func(t *testing.T) {
		index, err := execute.ReadIndex(dir)
		must(t, err)
		var dep *execute.IndexEntry
		for i := range index {
			if index[i].Kind == "Deployment" && index[i].Existed {
				dep = &index[i]
				break
			}
		}
		if dep == nil {
			t.Fatalf("the fix wrote no Deployment: %+v", index)
		}
		must(t, cs.AppsV1().Deployments(dep.Namespace).Delete(context.Background(), dep.Name, metav1.DeleteOptions{}))
		out, errOut, code := runCtx(context.Background(), t, "", "restore", copyBackup(t, dir), "--kubeconfig", f.kubeconfig, "--force")
		if code != 1 || !strings.Contains(out, "restore creates only an object fix deleted") {
			t.Errorf("restore --force of a deleted Deployment exit %d, want 1 and the Deployment refused:\n%s%s", code, out, errOut)
		}
		if _, err := cs.AppsV1().Deployments(dep.Namespace).Get(context.Background(), dep.Name, metav1.GetOptions{}); err == nil {
			t.Errorf("restore created Deployment %s/%s", dep.Namespace, dep.Name)
		}
	})
}

// A journal is a file too: edited so that a begun step names another object, the rerun
// refuses it, its MAC broken, before any request; sealed again with the key (as a holder of
// the key could), the rerun plans from the live cluster, finds no such change in the plan,
// and does not run it.
func TestResumeRefusesJournalStepEditedToAnotherObject(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	flags, _ := sucImageFix(t)
	f := replay(t, scenario("suc/image-missing-kubectl-tag"))
	cfg := f.envs["prod-eu-1"].Config
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The victim: a Job no plan would touch.
	victim := mustJob(t, cs, "system-upgrade", "keep-me")
	steps := planOf(t, f, flags...).Steps()
	var del remediate.Step
	for _, s := range steps {
		if s.Action == remediate.DeleteJob {
			del = s
			break
		}
	}
	if del.ID == "" {
		t.Fatalf("no Job deletion planned: %+v", steps)
	}
	dir := filepath.Join(t.TempDir(), "backup")
	killed := false
	hooks := &execute.Hooks{AfterPhase: func(_ context.Context, s remediate.Step, p string) error {
		if !killed && s.ID == del.ID && p == execute.PhaseBegin {
			killed = true
			return execute.ErrKilled
		}
		return nil
	}}
	args := append([]string{"fix"}, f.args(append(flags, "--apply", "--yes", "--backup-dir", dir)...)...)
	if _, errOut, code := runCtx(execute.WithHooks(context.Background(), hooks), t, "", args...); !killed || code != 1 {
		t.Fatalf("not killed after the Job deletion began (exit %d): %s", code, errOut)
	}
	// Point the begun step (and its place in the attempt) at the victim.
	editJournal(t, dir, func(e map[string]any) {
		retarget := func(st map[string]any) {
			if st["id"] != del.ID {
				return
			}
			obj := map[string]any{"cluster": "prod-eu-1", "apiVersion": "batch/v1", "kind": "Job", "namespace": "system-upgrade", "name": "keep-me",
				"uid": string(victim.UID), "resourceVersion": victim.ResourceVersion}
			st["target"] = obj
			st["touches"] = []any{obj}
		}
		if p, ok := e["plan"].(map[string]any); ok {
			retarget(p)
		}
		if a, ok := e["attempt"].([]any); ok {
			for _, s := range a {
				retarget(s.(map[string]any))
			}
		}
	})
	out, errOut, code := runCtx(context.Background(), t, "", args...)
	if code != 1 || !strings.Contains(errOut, "does not verify") {
		t.Errorf("rerun with the edited journal exit %d, want 1 and the journal refused for its MAC:\n%s%s", code, out, errOut)
	}
	sealWith(t, dir, userKey(t))
	out, errOut, _ = runCtx(context.Background(), t, "", args...)
	t.Logf("rerun:\n%s%s", out, errOut)
	now, err := cs.BatchV1().Jobs("system-upgrade").Get(context.Background(), "keep-me", metav1.GetOptions{})
	if err != nil || now.ResourceVersion != victim.ResourceVersion || now.UID != victim.UID {
		t.Fatalf("the Job the edited journal named was written (err %v)", err)
	}
	if !strings.Contains(out+errOut, "not in the plan made from the clusters as they are now") {
		t.Errorf("the rerun does not say why it left the journal's step alone")
	}
	for _, e := range mustJournal(t, dir) {
		for _, w := range e.Writes {
			if w.Name == "keep-me" {
				t.Errorf("the journal records a write to the victim: %+v", w)
			}
		}
	}
}

// refusedBeforeAnyRequest runs restore, with and without --force, against the real server
// and against one that counts requests: each must refuse, saying reason, and the counting
// server must get no request.
func refusedBeforeAnyRequest(t *testing.T, dir, kubeconfig, reason string) {
	t.Helper()
	counting, n := countingKubeconfig(t, "prod-eu-1")
	for _, kc := range []string{kubeconfig, counting} {
		for _, force := range []bool{false, true} {
			args := []string{"restore", dir, "--kubeconfig", kc}
			if force {
				args = append(args, "--force")
			}
			out, errOut, code := runCtx(context.Background(), t, "", args...)
			if code != 1 || !strings.Contains(errOut, reason) {
				t.Errorf("restore (force %v) exit %d, want 1 and a refusal saying %q:\n%s%s", force, code, reason, out, errOut)
			}
		}
	}
	if got := n.Load(); got != 0 {
		t.Errorf("the refused restore made %d requests before refusing", got)
	}
}

// addDeletedDeployment adds a privileged, hostPID, hostNetwork Deployment with hostPath / in
// kube-system to the backup and a journal line saying fix deleted it (so restore would
// create it). The digests are recomputed; the journal line has no MAC.
func addDeletedDeployment(t *testing.T, dir string) {
	t.Helper()
	rel := "objects/prod-eu-1/apps/Deployment/kube-system/node-shell.yaml"
	uid := "3e9b6c1d-5a7f-4d2e-8c4b-9f1a2b3c4d5e"
	body := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: node-shell
  namespace: kube-system
  uid: ` + uid + `
spec:
  selector:
    matchLabels: {app: node-shell}
  template:
    metadata:
      labels: {app: node-shell}
    spec:
      hostPID: true
      hostNetwork: true
      containers:
      - name: shell
        image: docker.io/library/alpine:3.20
        command: ["nsenter", "-t", "1", "-m", "-u", "-i", "-n", "sh"]
        securityContext: {privileged: true}
        volumeMounts: [{name: host, mountPath: /host}]
      volumes:
      - name: host
        hostPath: {path: /}
`
	must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o600))
	var step string
	resealBackup(t, dir, func(idx []map[string]any) []map[string]any {
		step, _ = idx[0]["step"].(string)
		return append(idx, map[string]any{"time": idx[0]["time"], "run": idx[0]["run"], "step": step, "cluster": "prod-eu-1",
			"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "kube-system", "name": "node-shell", "existed": true,
			"file": rel, "uid": uid, "resourceVersion": "1"})
	})
	line, err := json.Marshal(execute.Entry{Run: "x", Step: step, Phase: execute.PhaseWrite, Writes: []execute.Write{{Cluster: "prod-eu-1",
		APIVersion: "apps/v1", Kind: "Deployment", Namespace: "kube-system", Name: "node-shell", Op: "delete", Before: "1", UID: uid}}})
	must(t, err)
	jf, err := os.OpenFile(filepath.Join(dir, execute.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = jf.Write(append(line, '\n'))
	must(t, err)
	must(t, jf.Close())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return b
}

func mustJournal(t *testing.T, dir string) []execute.Entry {
	t.Helper()
	en, err := execute.ReadJournal(dir)
	must(t, err)
	return en
}

// copyBackup copies a backup directory (symbolic links are not followed: there are none).
func copyBackup(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "backup")
	must(t, os.CopyFS(dst, os.DirFS(dir)))
	return dst
}

func hexSHA(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// resealBackup edits the index and recomputes every digest, as someone who read
// docs/security.md could; the MAC of backup.json, under a key such a reader does not hold,
// no longer verifies (sealWith seals it again, as a holder of the key could).
func resealBackup(t *testing.T, dir string, edit func([]map[string]any) []map[string]any) {
	t.Helper()
	ip := filepath.Join(dir, "objects", "index.jsonl")
	var idx []map[string]any
	for _, line := range bytes.Split(mustRead(t, ip), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e map[string]any
		must(t, json.Unmarshal(line, &e))
		idx = append(idx, e)
	}
	if edit != nil {
		idx = edit(idx)
	}
	var buf bytes.Buffer
	for _, e := range idx {
		if f, _ := e["file"].(string); f != "" {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				e["sha256"] = hexSHA(b)
			}
		}
		line, err := json.Marshal(e)
		must(t, err)
		buf.Write(append(line, '\n'))
	}
	must(t, os.WriteFile(ip, buf.Bytes(), 0o600))
	op := filepath.Join(dir, execute.OriginFile)
	var origin map[string]any
	must(t, json.Unmarshal(mustRead(t, op), &origin))
	origin["index"] = map[string]any{"bytes": buf.Len(), "sha256": hexSHA(buf.Bytes())}
	delete(origin, "previous")
	b, err := json.Marshal(origin)
	must(t, err)
	must(t, os.WriteFile(op, b, 0o600))
}

// addBinding adds a cluster-admin ClusterRoleBinding to the backup, as an object fix deleted
// (so restore would create it); dressed, it carries the agent release's Helm ownership.
func addBinding(t *testing.T, dir string, dressed bool) {
	t.Helper()
	rel := "objects/prod-eu-1/rbac.authorization.k8s.io/ClusterRoleBinding/_cluster/unstick-escalate.yaml"
	meta := "metadata:\n  name: unstick-escalate\n  uid: 7d1c5a0e-3f4b-4c2e-9a51-2f0e8c6b1d22\n"
	if dressed {
		meta += "  labels:\n    app.kubernetes.io/managed-by: Helm\n  annotations:\n    meta.helm.sh/release-name: " + agentRelease + "\n    meta.helm.sh/release-namespace: " + agentNS + "\n"
	}
	body := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\n" + meta +
		"roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: cluster-admin\nsubjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: mallory\n"
	must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o600))
	var step string
	resealBackup(t, dir, func(idx []map[string]any) []map[string]any {
		step, _ = idx[0]["step"].(string)
		return append(idx, map[string]any{"time": idx[0]["time"], "run": idx[0]["run"], "step": step, "cluster": "prod-eu-1",
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "name": "unstick-escalate", "existed": true,
			"file": rel, "uid": "7d1c5a0e-3f4b-4c2e-9a51-2f0e8c6b1d22", "resourceVersion": "1"})
	})
	line, err := json.Marshal(execute.Entry{Run: "x", Step: step, Phase: execute.PhaseWrite, Writes: []execute.Write{{Cluster: "prod-eu-1",
		APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Name: "unstick-escalate", Op: "delete", Before: "1", UID: "7d1c5a0e-3f4b-4c2e-9a51-2f0e8c6b1d22"}}})
	must(t, err)
	jf, err := os.OpenFile(filepath.Join(dir, execute.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = jf.Write(append(line, '\n'))
	must(t, err)
	must(t, jf.Close())
}

// editJournal rewrites every journal line through edit.
func editJournal(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	p := filepath.Join(dir, execute.JournalFile)
	var buf bytes.Buffer
	for _, line := range bytes.Split(mustRead(t, p), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e map[string]any
		must(t, json.Unmarshal(line, &e))
		delete(e, "mac") // the edit breaks it either way
		edit(e)
		b, err := json.Marshal(e)
		must(t, err)
		buf.Write(append(b, '\n'))
	}
	must(t, os.WriteFile(p, buf.Bytes(), 0o600))
}

// mustJob creates a Job (the test server runs no controller: it stays as created).
func mustJob(t *testing.T, cs kubernetes.Interface, ns, name string) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "docker.io/rancher/kubectl:v1.30.3"}}}}}}
	out, err := cs.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{})
	must(t, err)
	return out
}
