package execute

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// seal is the one writer of a backup directory's OriginFile: the object index and the
// journal both move it forward, under one lock, each write with its MAC.
type seal struct {
	mu     sync.Mutex
	dir    string
	key    *BackupKey
	origin *Origin
}

// openSeal carries on from a backup LoadBackup verified, or starts a new directory's record.
// A journal line torn by a kill is cut off, and a line written after the record last moved
// is counted, so the next line chains from the last line on disk.
func openSeal(prior *Backup, key *BackupKey) (*seal, error) {
	dir := prior.Dir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("backup directory: %w", err)
	}
	s := &seal{dir: dir, key: key, origin: prior.Origin}
	if s.origin == nil {
		id := make([]byte, 16)
		if _, err := rand.Read(id); err != nil {
			return nil, err
		}
		s.origin = &Origin{ID: hex.EncodeToString(id), Clusters: map[string]ClusterID{}, Index: digestOf(nil)}
		return s, writeOrigin(dir, key, s.origin)
	}
	if err := prior.tidyJournal(); err != nil {
		return nil, err
	}
	if s.origin.Journal != prior.journalHead {
		s.origin.Journal = prior.journalHead
		return s, writeOrigin(dir, key, s.origin)
	}
	return s, nil
}

// tidyJournal rewrites the journal as its verified lines when a kill left more on disk (a
// torn last line, or a last line without its newline).
func (b *Backup) tidyJournal() error {
	raw, err := os.ReadFile(filepath.Join(b.Dir, JournalFile))
	if errors.Is(err, fs.ErrNotExist) || bytes.Equal(raw, b.journalTidy) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	tmp, err := writeTemp(b.Dir, ".journal-*.jsonl", b.journalTidy)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer os.Remove(tmp)
	return os.Rename(tmp, filepath.Join(b.Dir, JournalFile))
}

// write records the origin as it now is (the caller holds mu).
func (s *seal) write() error { return writeOrigin(s.dir, s.key, s.origin) }
