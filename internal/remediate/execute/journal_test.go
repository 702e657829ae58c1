package execute

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// A journal line torn by a crash is skipped; what came before is read back.
func TestJournalSurvivesATornLine(t *testing.T) {
	dir := t.TempDir()
	key := testKey(t, "a")
	j := openJournal(sealed(t, dir, key), "r1")
	st := remediate.Step{ID: "s1", Action: remediate.Uncordon}
	if err := j.Append(Entry{Step: "s1", Phase: PhaseBegin, Plan: &st}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"step":"s1","phase":"appl`)
	f.Close()
	b, err := LoadBackup(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	entries := b.Journal
	if len(entries) != 1 || entries[0].Plan == nil || entries[0].Run != "r1" {
		t.Fatalf("%+v", entries)
	}
	// The next run cuts the torn line off and chains on from the line before it.
	j = openJournal(sealed(t, dir, key), "r2")
	if err := j.Append(Entry{Step: "s1", Phase: PhaseVerified}); err != nil {
		t.Fatal(err)
	}
	if b, err = LoadBackup(dir, key); err != nil || len(b.Journal) != 2 || b.Journal[1].Run != "r2" {
		t.Fatalf("after the next run: %v", err)
	}
	if m := mode(t, filepath.Join(dir, JournalFile)); m != 0o600 {
		t.Errorf("journal mode %v", m)
	}
}

// interrupted finds attempts begun and not finished, chains with steps still to run, and
// leaves alone what ended on a prompt, a conflict or a failure.
func TestInterrupted(t *testing.T) {
	a, b, c := remediate.Step{ID: "a"}, remediate.Step{ID: "b"}, remediate.Step{ID: "c"}
	chain := []remediate.Step{a, b}
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    int
	}{
		{"finished", []Entry{{Step: "c", Phase: PhaseBegin, Plan: &c}, {Step: "c", Phase: PhaseVerified}}, 0},
		{"begun", []Entry{{Step: "c", Phase: PhaseBegin, Plan: &c}, {Step: "c", Phase: PhaseDryRun}}, 1},
		{"chain half done", []Entry{{Step: "a", Phase: PhaseBegin, Plan: &a, Attempt: chain}, {Step: "a", Phase: PhaseVerified}}, 1},
		{"chain done", []Entry{{Step: "a", Phase: PhaseBegin, Plan: &a, Attempt: chain}, {Step: "a", Phase: PhaseVerified},
			{Step: "b", Phase: PhaseBegin, Plan: &b, Attempt: chain}, {Step: "b", Phase: PhaseUnverified}}, 0},
		{"declined", []Entry{{Step: "c", Phase: PhaseBegin, Plan: &c}, {Step: "c", Phase: PhaseDeclined}}, 0},
		{"conflict", []Entry{{Step: "c", Phase: PhaseBegin, Plan: &c}, {Step: "c", Phase: PhaseConflict}}, 0},
	} {
		if got := interrupted(tc.entries, states(tc.entries)); len(got) != tc.want {
			t.Errorf("%s: %d attempts to resume, want %d", tc.name, len(got), tc.want)
		}
	}
}

// A backup is written once: a later save of the same object keeps the first copy (the state
// before unstick changed anything), and the index says so. Files are 0600, directories 0700.
func TestBackupIsWrittenOnce(t *testing.T) {
	dir := t.TempDir()
	key := testKey(t, "a")
	b := backupsIn(t, dir, key, "r1")
	o := remediate.Object{Cluster: "c1", APIVersion: "v1", Kind: "Secret", Namespace: "ns", Name: "sh.helm.release.v1.x.v1"}
	u := func(rv string) *unstructured.Unstructured {
		x := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1", "data": map[string]any{"release": "cGF5bG9hZA=="},
			"metadata": map[string]any{"name": o.Name, "namespace": o.Namespace, "labels": map[string]any{"owner": "helm", "name": "x", "status": "deployed", "version": "1"},
				"managedFields": []any{map[string]any{"manager": "x"}}}}}
		x.SetResourceVersion(rv)
		return x
	}
	file, kept, err := b.saveObject("s1", o, u("1"))
	if err != nil || kept {
		t.Fatalf("first save: kept=%v %v", kept, err)
	}
	if _, kept, err = b.saveObject("s2", o, u("2")); err != nil || !kept {
		t.Fatalf("second save: kept=%v %v, want the first copy kept", kept, err)
	}
	bk, err := LoadBackup(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	saved := bk.bodies[0]
	if saved.GetResourceVersion() != "1" || saved.GetManagedFields() != nil {
		t.Errorf("backup rv %s, managedFields %v: want the first copy, without managedFields", saved.GetResourceVersion(), saved.GetManagedFields())
	}
	if d, _, _ := unstructured.NestedString(saved.Object, "data", "release"); d != "cGF5bG9hZA==" {
		t.Errorf("the payload of a release Secret must be kept for restore, got %q", d)
	}
	if m := mode(t, filepath.Join(dir, file)); m != 0o600 {
		t.Errorf("backup mode %v", m)
	}
	if m := mode(t, filepath.Dir(filepath.Join(dir, file))); m != 0o700 {
		t.Errorf("backup directory mode %v", m)
	}
	idx, err := ReadIndex(dir)
	if err != nil || len(idx) != 2 || idx[0].ResourceVersion != "1" || !idx[0].Existed {
		t.Errorf("index %+v, %v", idx, err)
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// A step read back from a journal is run only when the plan made now holds the same change,
// in an attempt the executor may run.
func TestPlannedMatchesOnlyTheSameChange(t *testing.T) {
	job := remediate.Object{Cluster: "prod-eu-1", APIVersion: "batch/v1", Kind: "Job", Namespace: "system-upgrade", Name: "apply-node-maintenance-on-w1-with-4ee557c", UID: "8f1d", ResourceVersion: "700"}
	st := remediate.Step{ID: "delete-job-1a2b", Action: remediate.DeleteJob, Cluster: "prod-eu-1", Target: job, Touches: []remediate.Object{job}}
	plan := &remediate.Plan{Incidents: []remediate.IncidentPlan{{Attempts: []remediate.Attempt{{Steps: []remediate.Step{st}}}}}}
	journal := st
	journal.Target.ResourceVersion, journal.Touches = "650", []remediate.Object{{Cluster: "prod-eu-1", APIVersion: "batch/v1", Kind: "Job", Namespace: "system-upgrade", Name: job.Name, UID: "8f1d", ResourceVersion: "650"}}
	if got, ok := planned(plan, journal); !ok || got.Target.ResourceVersion != "700" {
		t.Errorf("the same change read at an older version: ok=%v, step %+v; want the new plan's step", ok, got.Target)
	}
	edited := journal
	edited.Target.Name, edited.Touches = "keep-me", []remediate.Object{{Cluster: "prod-eu-1", APIVersion: "batch/v1", Kind: "Job", Namespace: "system-upgrade", Name: "keep-me", UID: "8f1d"}}
	if _, ok := planned(plan, edited); ok {
		t.Error("a journal step edited to another object matched the plan")
	}
	plan.Incidents[0].Attempts[0].AboveMaxRisk = true
	if _, ok := planned(plan, journal); ok {
		t.Error("a step the plan holds above --max-risk matched")
	}
	if _, ok := planned(nil, journal); ok {
		t.Error("matched without a plan")
	}
}
