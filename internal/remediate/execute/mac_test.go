package execute

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/remediate"
)

func mustKey(t *testing.T, secret []byte) *BackupKey {
	t.Helper()
	k, err := NewBackupKey(secret, "test key")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testKey is a key of 32 bytes made from seed.
func testKey(t *testing.T, seed string) *BackupKey {
	t.Helper()
	return mustKey(t, bytes.Repeat([]byte(seed), 32/len(seed)+1)[:32])
}

// sealed opens a backup directory for writing as a run does: verified first.
func sealed(t *testing.T, dir string, key *BackupKey) *seal {
	t.Helper()
	prior, err := LoadBackup(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openSeal(prior, key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func backupsIn(t *testing.T, dir string, key *BackupKey, run string) *Backups {
	t.Helper()
	b, err := newBackups(sealed(t, dir, key), run)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// journaled writes a backup directory whose journal has the given steps' begin lines.
func journaled(t *testing.T, key *BackupKey, steps ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "backup")
	j := openJournal(sealed(t, dir, key), "r1")
	for _, s := range steps {
		if err := j.Append(Entry{Step: s, Phase: PhaseBegin}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func journalLines(t *testing.T, dir string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	return lines[:len(lines)-1] // after the last newline: nothing
}

func writeLines(t *testing.T, dir string, lines ...[]byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, JournalFile), bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func wantRefusedWith(t *testing.T, dir string, key *BackupKey, reason string) {
	t.Helper()
	_, err := LoadBackup(dir, key)
	var oe *OriginError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("LoadBackup: %v; want a refusal saying %q", err, reason)
	}
}

// Every journal line is authenticated, and chained to the one before it: a line edited,
// moved, removed, added or cut off the end is seen, whoever recomputed the digests.
func TestJournalMACRefusesTampering(t *testing.T) {
	key := testKey(t, "k")
	for _, tc := range []struct {
		name, reason string
		tamper       func(t *testing.T, dir string, lines [][]byte)
	}{
		{"a line edited", "line 2 does not verify", func(t *testing.T, dir string, l [][]byte) {
			l[1] = bytes.Replace(l[1], []byte(`"step":"b"`), []byte(`"step":"x"`), 1)
			writeLines(t, dir, l...)
		}},
		{"a delete added to a line", "line 2 does not verify", func(t *testing.T, dir string, l [][]byte) {
			l[1] = bytes.Replace(l[1], []byte(`"phase":"begin"`), []byte(`"phase":"applied","writes":[{"cluster":"local","apiVersion":"apps/v1","kind":"Deployment","namespace":"kube-system","name":"x","op":"delete"}]`), 1)
			writeLines(t, dir, l...)
		}},
		{"lines reordered", "line 1 does not verify", func(t *testing.T, dir string, l [][]byte) {
			writeLines(t, dir, l[1], l[0], l[2])
		}},
		{"a line removed", "line 2 does not verify", func(t *testing.T, dir string, l [][]byte) {
			writeLines(t, dir, l[0], l[2])
		}},
		{"the last lines cut off", "lines were removed", func(t *testing.T, dir string, l [][]byte) {
			writeLines(t, dir, l[0])
		}},
		{"a line added with another key's MAC", "line 4 does not verify", func(t *testing.T, dir string, l [][]byte) {
			other := testKey(t, "other")
			var last Entry
			_ = json.Unmarshal(l[2], &last)
			body, _ := json.Marshal(Entry{Step: "c", Phase: PhaseVerified})
			forged := append(append(body[:len(body)-1], macSuffix(journalMAC(other, last.MAC, body))...), '\n')
			writeLines(t, dir, l[0], l[1], l[2], forged, l[2])
		}},
		{"a journal of another backup directory", "line 1 does not verify", func(t *testing.T, dir string, l [][]byte) {
			src := journaled(t, key, "a", "b", "c")
			writeLines(t, dir, journalLines(t, src)...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := journaled(t, key, "a", "b", "c")
			tc.tamper(t, dir, journalLines(t, dir))
			wantRefusedWith(t, dir, key, tc.reason)
		})
	}
}

// A run killed between a journal line and the record of the journal's head, or in the
// middle of writing a line, leaves a directory that verifies.
func TestJournalMACSurvivesAKill(t *testing.T) {
	key := testKey(t, "k")
	dir := journaled(t, key, "a")
	before, err := os.ReadFile(filepath.Join(dir, OriginFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := openJournal(sealed(t, dir, key), "r2").Append(Entry{Step: "b", Phase: PhaseBegin}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, OriginFile), before, 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBackup(dir, key)
	if err != nil || len(b.Journal) != 2 {
		t.Fatalf("killed before the head moved: %v", err)
	}
	// The next run counts that line and chains on from it.
	if err := openJournal(sealed(t, dir, key), "r3").Append(Entry{Step: "c", Phase: PhaseBegin}); err != nil {
		t.Fatal(err)
	}
	if b, err = LoadBackup(dir, key); err != nil || len(b.Journal) != 3 {
		t.Fatalf("the run after the kill: %v", err)
	}
}

// backup.json is authenticated: edited (here, to name another cluster), written under another
// key, or of the digest-only format, it is refused; so is a backup read without its key.
func TestOriginMACRefusals(t *testing.T) {
	key := mustKey(t, sampleKey)
	edit := func(t *testing.T, dir string, f func(map[string]any)) {
		p := filepath.Join(dir, OriginFile)
		var o map[string]any
		b, _ := os.ReadFile(p)
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		f(o)
		b, _ = json.Marshal(o)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("edited", func(t *testing.T) {
		dir := sampleBackup(t)
		edit(t, dir, func(o map[string]any) {
			o["clusters"] = map[string]any{"local": map[string]any{"server": "https://other:6443", "kubeSystemUID": "0c4b0c0e-1111-4a4a-8b8b-222233334444"}}
		})
		wantRefusedWith(t, dir, key, "the MAC of backup.json does not verify")
	})
	t.Run("digests recomputed without the key", func(t *testing.T) {
		dir := sampleBackup(t)
		p := filepath.Join(dir, objectsDir, indexFile)
		idx, _ := os.ReadFile(p)
		idx = bytes.Replace(idx, []byte(`"resourceVersion":"812"`), []byte(`"resourceVersion":"999"`), 1)
		_ = os.WriteFile(p, idx, 0o600)
		edit(t, dir, func(o map[string]any) {
			d := digestOf(idx)
			o["index"] = map[string]any{"bytes": d.Bytes, "sha256": d.SHA256}
			delete(o, "previous")
		})
		wantRefusedWith(t, dir, key, "the MAC of backup.json does not verify")
	})
	t.Run("another key", func(t *testing.T) {
		dir := sampleBackup(t)
		wantRefusedWith(t, dir, testKey(t, "w"), "it was authenticated with another key (id "+key.ID()+")")
	})
	t.Run("another key with the recorded id", func(t *testing.T) {
		dir := sampleBackup(t)
		other := testKey(t, "w")
		edit(t, dir, func(o map[string]any) { o["key"] = other.ID() })
		wantRefusedWith(t, dir, other, "the MAC of backup.json does not verify")
	})
	t.Run("digests only (format 2)", func(t *testing.T) {
		dir := sampleBackup(t)
		edit(t, dir, func(o map[string]any) {
			o["format"] = 2
			for _, k := range []string{"id", "key", "mac", "journal"} {
				delete(o, k)
			}
		})
		wantRefusedWith(t, dir, key, "recorded digests only")
	})
	t.Run("no key", func(t *testing.T) {
		if _, err := LoadBackup(sampleBackup(t), nil); err == nil {
			t.Fatal("read without a key")
		}
	})
}

// The per-user key is made on first use, 0600 in a 0700 directory, and read back the same;
// a key file others may read, a symbolic link, a short key or a missing one is refused.
func TestKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config", "unstick")
	path := DefaultKeyFile(dir)
	if _, err := LoadKeyFile(path, false); err == nil || !strings.Contains(err.Error(), "no backup key at "+path) {
		t.Fatalf("a missing key: %v", err)
	}
	k1, err := LoadKeyFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("key mode %v", m)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("key directory mode %v", m)
	}
	k2, err := LoadKeyFile(path, true)
	if err != nil || k2.ID() != k1.ID() {
		t.Fatalf("read back: %v (ids %s, %s)", err, k1.ID(), k2.ID())
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(path, true); err == nil || !strings.Contains(err.Error(), "has mode 0640") {
		t.Errorf("a group-readable key: %v", err)
	}
	_ = os.Chmod(path, 0o600)
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(link, false); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a key behind a symbolic link: %v", err)
	}
	short := filepath.Join(dir, "short.key")
	_ = os.WriteFile(short, []byte("0123456789"), 0o600)
	if _, err := LoadKeyFile(short, false); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("a 10-byte key: %v", err)
	}
	if strings.Contains(k1.ID(), string(k1.secret)) || len(k1.ID()) != 16 {
		t.Errorf("key id %q", k1.ID())
	}
}

// A journal (authenticated: written by another version, or by someone holding the key) that
// says fix deleted a kind fix only patches is refused: restore would create the object. The
// kinds fix deletes come from the planner's own list.
func TestRestoreRefusesJournaledDeletesOfPatchedKinds(t *testing.T) {
	for _, w := range []Write{
		{Cluster: "local", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "kube-system", Name: "node-shell", Op: "delete"},
		{Cluster: "local", APIVersion: "v1", Kind: "Node", Name: "worker-1", Op: "delete"},
		{Cluster: "local", APIVersion: "upgrade.cattle.io/v1", Kind: "Plan", Namespace: "cattle-system", Name: "server-plan", Op: "delete"},
		{Cluster: "local", APIVersion: "v1", Kind: "Secret", Namespace: "kube-system", Name: "sh.helm.release.v1.x.v1", Op: "delete"},
		{Cluster: "local", APIVersion: "fleet.cattle.io/v1alpha1", Kind: "Cluster", Namespace: "fleet-default", Name: "c1", Op: "delete"},
		{Cluster: "local", APIVersion: "batch/v1", Kind: "Job", Namespace: "x", Name: "y", Op: "chmod"},
	} {
		err := checkJournalWrites("dir", []Entry{{Writes: []Write{w}}})
		var oe *OriginError
		if !errors.As(err, &oe) {
			t.Errorf("%s %s/%s accepted", w.Op, w.Kind, w.Name)
		}
	}
	for _, w := range []Write{
		{Cluster: "local", APIVersion: "batch/v1", Kind: "Job", Namespace: "system-upgrade", Name: "apply-on-w1", Op: "delete"},
		{Cluster: "local", APIVersion: "fleet.cattle.io/v1alpha1", Kind: "BundleDeployment", Namespace: "cluster-fleet-default-c1", Name: "b", Op: "delete"},
		{Cluster: "local", APIVersion: "apps/v1", Kind: "Deployment", Namespace: "cattle-fleet-system", Name: "fleet-agent", Op: "patch"},
		{Cluster: "local", APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.unstick.dev", Op: "update-status"},
	} {
		if err := checkJournalWrites("dir", []Entry{{Writes: []Write{w}}}); err != nil {
			t.Errorf("%s %s refused: %v", w.Op, w.Kind, err)
		}
	}
	// The executor deletes only what its action declares.
	job := remediate.Object{APIVersion: "batch/v1", Kind: "Job", Namespace: "n", Name: "j"}
	if err := deletable(remediate.DeleteJob, job); err != nil {
		t.Errorf("delete-job may not delete a Job: %v", err)
	}
	if err := deletable(remediate.DeleteJob, remediate.Object{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "n", Name: "d"}); err == nil {
		t.Error("delete-job may delete a Deployment")
	}
}

// FuzzJournalMAC splices arbitrary bytes into a genuine journal: the backup is refused, or
// every line it accepts is one Append wrote, in the order written.
func FuzzJournalMAC(f *testing.F) {
	f.Add([]byte("{}\n"), 0)
	f.Add([]byte(`{"step":"x","phase":"begin","mac":"00"}`+"\n"), 1)
	f.Add([]byte{}, 2)
	f.Add([]byte("\n\n"), 3)
	f.Fuzz(func(t *testing.T, junk []byte, at int) {
		key := testKey(t, "k")
		dir := journaled(t, key, "a", "b", "c")
		lines := journalLines(t, dir)
		genuine := map[string]int{}
		for i, l := range lines {
			var e Entry
			_ = json.Unmarshal(l, &e)
			genuine[e.MAC] = i
		}
		if at < 0 {
			at = -at
		}
		at %= len(lines) + 1
		var spliced [][]byte
		spliced = append(spliced, lines[:at]...)
		spliced = append(spliced, junk)
		spliced = append(spliced, lines[at:]...)
		writeLines(t, dir, spliced...)
		b, err := LoadBackup(dir, key)
		if err != nil {
			return
		}
		for i, e := range b.Journal {
			if n, ok := genuine[e.MAC]; !ok || n != i {
				t.Fatalf("accepted line %d (%+v) is not the line Append wrote there", i, e)
			}
		}
	})
}
