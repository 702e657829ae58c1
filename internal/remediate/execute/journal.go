package execute

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
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
}

// Write is one object written by a step.
type Write struct {
	Cluster    string `json:"cluster"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Op is create, update, patch, apply or delete.
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

// Journal appends lines to DIR/journal.jsonl.
type Journal struct {
	mu   sync.Mutex
	path string
	run  string
}

// OpenJournal opens (creating) the journal of a backup directory.
func OpenJournal(dir, run string) (*Journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("backup directory: %w", err)
	}
	return &Journal{path: filepath.Join(dir, JournalFile), run: run}, nil
}

// Append writes one line and syncs it to disk.
func (j *Journal) Append(e Entry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Run = j.run
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	return f.Close()
}

// ReadJournal reads every line of a backup directory's journal (none when it has none). A
// torn last line — the process died while writing it — is ignored.
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
	line := 0
	for sc.Scan() {
		line++
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
