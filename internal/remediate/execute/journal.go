package execute

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// JournalFile is the journal's name in the backup directory: one JSON object per line,
// appended and synced before the next phase starts, so a rerun knows what finished.
const JournalFile = "journal.jsonl"

// Entry is one journal line.
type Entry struct {
	Time   time.Time `json:"time"`
	Run    string    `json:"run"`
	Step   string    `json:"step"`
	Phase  string    `json:"phase"`
	Action string    `json:"action,omitempty"`
	// Cluster and Target say what the step works on (Kind/namespace/name).
	Cluster string `json:"cluster,omitempty"`
	Target  string `json:"target,omitempty"`
	Message string `json:"message,omitempty"`
	// Writes are the writes made (applied lines): what restore needs to know.
	Writes []Write `json:"writes,omitempty"`
	// Plan is the step as planned (begin lines), so a rerun can finish it even when it is no
	// longer in the new plan.
	Plan *remediate.Step `json:"plan,omitempty"`
	// Attempt is, on the begin line of a step that is part of a chain, every step of that
	// chain in order: a rerun finishes an interrupted chain as it was planned.
	Attempt []remediate.Step `json:"attempt,omitempty"`
	// RestartedAt is the rollout-restart value chosen when the step began.
	RestartedAt string `json:"restartedAt,omitempty"`
	// Baseline is, on backup lines, the status field a resync or restart waits on as read
	// before the write (observedGeneration, agentDeployedGeneration): verification wants it to
	// move, not merely to be high.
	Baseline *int64 `json:"baseline,omitempty"`
	// Continue, Migrated, Pages and Objects are, on the progress lines of a storage
	// migration, the list's continue token after the page, the objects written back so far,
	// the pages done and the objects of this page: a killed run resumes from the last one.
	Continue string   `json:"continue,omitempty"`
	Migrated int      `json:"migrated,omitempty"`
	Pages    int      `json:"pages,omitempty"`
	Objects  []string `json:"objects,omitempty"`
	// Outcome is, on an incident's outcome line (PhaseOutcome), what became of it: fixed,
	// unverified, failed or open.
	Outcome string `json:"outcome,omitempty"`
	// MAC chains the line to the one before it (journalMAC). It is the last field, so the
	// line without it is the line's JSON with the MAC's suffix cut off.
	MAC string `json:"mac,omitempty"`
}

// Write is one object written by a step.
type Write struct {
	Cluster    string `json:"cluster"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Op is create, update, update-status, patch, apply or delete.
	Op string `json:"op"`
	// Before and After are the resource versions around the write (After empty for a delete).
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	UID    string `json:"uid,omitempty"`
	// AfterDigest is the SHA-256 of the object as the write left it, less what its controllers
	// and the server keep writing (see contentDigest): restore tells a status update by the
	// object's controller from someone else's change by it.
	AfterDigest string `json:"afterDigest,omitempty"`
}

// Key identifies the written object.
func (w Write) Key() string {
	return remediate.Object{Cluster: w.Cluster, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}.Key()
}

// Journal appends lines to DIR/journal.jsonl, each with its MAC, and moves the journal's
// head in OriginFile after each.
type Journal struct {
	seal *seal
	path string
	run  string
}

// openJournal opens (creating) the journal of a sealed backup directory.
func openJournal(s *seal, run string) *Journal {
	return &Journal{seal: s, path: filepath.Join(s.dir, JournalFile), run: run}
}

// Append writes one line, syncs it to disk and records the journal's new head. Killed
// between the two writes, the directory still verifies: the head may lag one line.
func (j *Journal) Append(e Entry) error {
	s := j.seal
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Run, e.MAC = j.run, ""
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	head := s.origin.Journal
	mac := journalMAC(s.key, chainStart(s.origin, head), b)
	line := append(b[:len(b)-1], macSuffix(mac)...)
	if err := appendBytes(j.path, append(line, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	s.origin.Journal = JournalHead{Lines: head.Lines + 1, MAC: mac}
	return s.write()
}

// journalMAC is the MAC of one journal line (its JSON without the MAC) after the line whose
// MAC is prev: removing, reordering or inserting a line breaks the chain.
func journalMAC(key *BackupKey, prev string, body []byte) string {
	return key.mac([]byte("unstick "+JournalFile), []byte(prev), body)
}

// chainStart is what the next line chains from: the last line's MAC, or the directory's ID.
func chainStart(o *Origin, head JournalHead) string {
	if head.Lines == 0 {
		return o.ID
	}
	return head.MAC
}

// macSuffix ends a journal line: the MAC as its last field.
func macSuffix(mac string) []byte { return []byte(`,"mac":"` + mac + `"}`) }

// macSuffixLen is len(macSuffix) for a hex HMAC-SHA256.
const macSuffixLen = len(`,"mac":"`) + 64 + len(`"}`)

func appendBytes(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadJournal reads every line of a backup directory's journal (none when it has none), as
// it is on disk: nothing is authenticated, so it is for reading only. What acts on a journal
// (restore, a resumed fix) takes it from LoadBackup, which checks every line's MAC. A torn
// last line — the process died while writing it — is ignored.
func ReadJournal(dir string) ([]Entry, error) {
	f, err := os.Open(filepath.Join(dir, JournalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// stepState is what the journal says about one step.
type stepState struct {
	plan        *remediate.Step
	attempt     []remediate.Step
	phases      map[string]bool
	terminal    string // verified, unverified, abandoned ("" if not finished)
	restartedAt string
	baseline    *int64
	began       time.Time // when the step began (its begin line)
	writes      []Write
	// cont, migrated and pages are a storage migration's progress (its last progress line).
	cont     string
	migrated int
	pages    int
}

func terminal(phase string) bool {
	return phase == PhaseVerified || phase == PhaseUnverified || phase == PhaseAbandoned
}

// states folds journal lines by step.
func states(entries []Entry) map[string]*stepState {
	out := map[string]*stepState{}
	for _, e := range entries {
		s := out[e.Step]
		if s == nil {
			s = &stepState{phases: map[string]bool{}}
			out[e.Step] = s
		}
		s.phases[e.Phase] = true
		if e.Plan != nil {
			s.plan = e.Plan
		}
		if len(e.Attempt) > 0 {
			s.attempt = e.Attempt
		}
		if e.RestartedAt != "" {
			s.restartedAt = e.RestartedAt
		}
		if e.Phase == PhaseBegin {
			s.began = e.Time
		}
		if e.Baseline != nil {
			s.baseline = e.Baseline
		}
		if e.Phase == PhaseProgress {
			s.cont, s.migrated, s.pages = e.Continue, e.Migrated, e.Pages
		}
		s.writes = append(s.writes, e.Writes...)
		if terminal(e.Phase) && s.terminal == "" {
			s.terminal = e.Phase
		}
	}
	return out
}
