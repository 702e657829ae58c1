package execute

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// fuzzJournalSeed is a journal as a fix run writes it: a step begun, backed up, written,
// applied and verified, then a second step torn while its begin line was written.
func fuzzJournalSeed() []byte {
	st := remediate.Step{ID: "uncordon-node-worker-1", Action: remediate.Uncordon, Cluster: "prod-eu-1",
		Target: remediate.Object{Cluster: "prod-eu-1", Kind: "Node", Name: "worker-1"}, Change: "uncordon node worker-1"}
	base := int64(7)
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	for i, e := range []Entry{
		{Step: st.ID, Phase: PhaseBegin, Plan: &st, Attempt: []remediate.Step{st}},
		{Step: st.ID, Phase: PhaseBackup, Baseline: &base},
		{Step: st.ID, Phase: PhaseWrite, Writes: []Write{{Cluster: "prod-eu-1", APIVersion: "v1", Kind: "Node", Name: "worker-1", Op: "patch", Before: "81234", After: "81240", UID: "5b0c7a3e-8d2f-4d8e-9a43-0c6f1e2d3b4a"}}},
		{Step: st.ID, Phase: PhaseApplied},
		{Step: st.ID, Phase: PhaseVerified, Message: "node worker-1 is schedulable"},
	} {
		e.Time, e.Run = at.Add(time.Duration(i)*time.Second), "20261129T080000Z"
		b, _ := json.Marshal(e)
		buf.Write(append(b, '\n'))
	}
	buf.WriteString(`{"time":"2026-11-29T08:00:09Z","run":"20261129T080000Z","step":"restart-fleet-agent","phase":"beg`)
	return buf.Bytes()
}

func fuzzIndexSeed() []byte {
	e := IndexEntry{Time: time.Date(2026, 11, 29, 8, 0, 1, 0, time.UTC), Run: "20261129T080000Z", Step: "uncordon-node-worker-1",
		Cluster: "prod-eu-1", APIVersion: "v1", Kind: "Node", Name: "worker-1", Existed: true,
		File: "objects/prod-eu-1/Node/worker-1.yaml", UID: "5b0c7a3e-8d2f-4d8e-9a43-0c6f1e2d3b4a", ResourceVersion: "81234"}
	b, _ := json.Marshal(e)
	return append(b, '\n')
}

// FuzzReadJournal writes a journal and an object index into a backup directory and reads them
// back as a rerun or `unstick restore` does, then folds the journal as Resume does.
func FuzzReadJournal(f *testing.F) {
	j, idx := fuzzJournalSeed(), fuzzIndexSeed()
	f.Add(j, idx)
	f.Add(j[:len(j)/2], idx[:len(idx)-5])
	f.Add([]byte("{}\n\n{\"step\":\"\",\"phase\":\"begin\",\"plan\":{},\"attempt\":[]}\nnull\n[1,2]\n\"x\"\n"), []byte("{\"existed\":\"yes\"}\n{}\n"))
	f.Add([]byte("{\"step\":\"a\",\"phase\":\"begin\",\"plan\":{\"id\":\"a\"},\"attempt\":[{\"id\":\"\"},{\"id\":\"a\"}]}\r\n{\"step\":\"a\",\"phase\":\"failed\"}\r\n"), []byte{})
	f.Add([]byte{0xff, 0xfe, 0x00, '\n', '{'}, []byte("\x00\x00\x00"))
	valid := bytes.TrimSuffix(fuzzJournalSeed()[:bytes.IndexByte(fuzzJournalSeed(), '\n')+1], []byte("\n"))
	f.Fuzz(func(t *testing.T, journal, index []byte) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, objectsDir), 0o700); err != nil {
			t.Fatal(err)
		}
		// what a crash may leave, followed by a line a later run appended
		content := append(append(append([]byte{}, journal...), '\n'), valid...)
		if err := os.WriteFile(filepath.Join(dir, JournalFile), content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, objectsDir, indexFile), index, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, err := ReadJournal(dir)
		if err != nil {
			t.Fatalf("ReadJournal: %v", err) // inputs here stay far below the line limit
		}
		if n := bytes.Count(content, []byte("\n")) + 1; len(entries) > n {
			t.Fatalf("%d entries from %d lines", len(entries), n)
		}
		// a torn or garbled line never hides the lines after it
		if len(entries) == 0 {
			t.Fatal("the valid last line was not read")
		}
		last := entries[len(entries)-1]
		if last.Step != "uncordon-node-worker-1" || last.Phase != PhaseBegin || last.Plan == nil {
			t.Fatalf("last entry = %+v, want the appended begin line", last)
		}
		st := states(entries)
		for _, e := range entries {
			if st[e.Step] == nil || !st[e.Step].phases[e.Phase] {
				t.Fatalf("states lost step %q phase %q", e.Step, e.Phase)
			}
		}
		for _, u := range interrupted(entries, st) {
			if len(u) == 0 {
				t.Fatal("an empty attempt among the interrupted ones")
			}
		}

		ix, err := ReadIndex(dir)
		if err != nil {
			t.Fatalf("ReadIndex: %v", err)
		}
		if n := bytes.Count(index, []byte("\n")) + 1; len(ix) > n {
			t.Fatalf("%d index entries from %d lines", len(ix), n)
		}
	})
}
