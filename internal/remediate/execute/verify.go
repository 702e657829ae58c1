package execute

import (
	"bytes"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/remediate"
)

// Helm's ownership metadata, which a rollback sets on every manifest object it re-applies.
const (
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
)

// Backup is a backup directory that passed every check that needs no cluster: the MAC of
// its origin record and of every journal line, the digest of its index and of every file the
// index lists, paths, bodies, kinds.
type Backup struct {
	Dir    string
	Origin *Origin
	Index  []IndexEntry
	// Journal is the journal's lines, each authenticated.
	Journal []Entry
	// bodies holds the saved object of each index line that has a file.
	bodies map[int]*unstructured.Unstructured
	// journalHead and journalTidy are the journal as verified: its last line, and its
	// lines each ending in a newline (what a torn write leaves is not among them).
	journalHead JournalHead
	journalTidy []byte
}

// LoadBackup reads and checks a backup directory with the key it must have been written
// under. Whatever fails refuses the whole backup, with the reason: a directory changed after
// fix wrote it is not trusted for any object. It reads files only: no cluster is asked.
func LoadBackup(dir string, key *BackupKey) (*Backup, error) {
	if key == nil {
		return nil, fmt.Errorf("no backup key: a backup directory is only read or written with the key that authenticates it")
	}
	origin, err := readOrigin(dir, key)
	if err != nil {
		return nil, err
	}
	idx, err := readLocal(dir, objectsDir+"/"+indexFile)
	if errors.Is(err, fs.ErrNotExist) {
		idx, err = nil, nil
	}
	if err != nil {
		return nil, refuseBackup(dir, "%s/%s: %v", objectsDir, indexFile, err)
	}
	if origin == nil {
		_, jerr := os.Lstat(filepath.Join(dir, JournalFile))
		if len(idx) == 0 && errors.Is(jerr, fs.ErrNotExist) {
			return &Backup{Dir: dir, bodies: map[int]*unstructured.Unstructured{}}, nil // a new directory
		}
		return nil, refuseBackup(dir, "it has no %s: it was written by an older unstick, which recorded neither the cluster it was taken from nor a digest of its files, so it cannot be checked (its objects are under %s/ for kubectl, once you have read them; fix --apply needs a new --backup-dir)", OriginFile, objectsDir)
	}
	if d := digestOf(idx); d != origin.Index && (origin.Previous == nil || d != *origin.Previous) {
		return nil, refuseBackup(dir, "%s/%s does not match its digest in %s (sha256 %s over %d bytes, recorded %s over %d): it was changed after fix wrote it",
			objectsDir, indexFile, OriginFile, d.SHA256, d.Bytes, origin.Index.SHA256, origin.Index.Bytes)
	}
	b := &Backup{Dir: dir, Origin: origin, bodies: map[int]*unstructured.Unstructured{}}
	if err := b.loadJournal(key); err != nil {
		return nil, err
	}
	for n, line := range bytes.Split(idx, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e IndexEntry
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, refuseBackup(dir, "%s/%s line %d: %v", objectsDir, indexFile, n+1, err)
		}
		body, err := b.check(e)
		if err != nil {
			return nil, refuseBackup(dir, "%s/%s line %d (%s on %s): %v", objectsDir, indexFile, n+1, entryRef(e), e.Cluster, err)
		}
		if body != nil {
			b.bodies[len(b.Index)] = body
		}
		b.Index = append(b.Index, e)
	}
	// Objects of other kinds are manifest objects a Helm rollback re-applied: the backup must
	// hold the records of the release that owns them.
	for i, e := range b.Index {
		if remediate.Writes(groupKind(e)) || !e.Existed {
			continue
		}
		if err := b.helmOwned(e, b.bodies[i].GetAnnotations()); err != nil {
			return nil, refuseBackup(dir, "%s on %s: %v", entryRef(e), e.Cluster, err)
		}
	}
	if err := checkJournalWrites(dir, b.Journal); err != nil {
		return nil, err
	}
	return b, nil
}

func entryRef(e IndexEntry) string {
	return remediate.Object{Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}.Ref()
}

func groupKind(e IndexEntry) remediate.GroupKind {
	return remediate.GroupKind{Group: remediate.Object{APIVersion: e.APIVersion}.Group(), Kind: e.Kind}
}

// action is the action of the step that backed the object up, as its step ID begins with
// it: the guard's one exception (a CRD's stored-versions trim) needs it. Restore writes
// nothing of a CRD but status.storedVersions, whatever the index says.
func (e IndexEntry) action() remediate.Action {
	if strings.HasPrefix(e.Step, string(remediate.TrimStoredVersions)+"-") {
		return remediate.TrimStoredVersions
	}
	return ""
}

func (e IndexEntry) object() remediate.Object {
	return remediate.Object{Cluster: e.Cluster, APIVersion: e.APIVersion, Kind: e.Kind, Namespace: e.Namespace, Name: e.Name}
}

// check verifies one index line and returns the saved object (nil for an object the step
// created).
func (b *Backup) check(e IndexEntry) (*unstructured.Unstructured, error) {
	if e.Cluster == "" || e.Kind == "" || e.Name == "" {
		return nil, fmt.Errorf("cluster, kind and name are required")
	}
	if _, err := schema.ParseGroupVersion(e.APIVersion); err != nil || e.APIVersion == "" {
		return nil, fmt.Errorf("apiVersion %q is not valid", e.APIVersion)
	}
	if err := remediate.GuardAction(e.action(), e.object(), "", nil); err != nil {
		return nil, err
	}
	if !e.Existed {
		if e.File != "" {
			return nil, fmt.Errorf("an object the step created has no backup file, but this line names %q", e.File)
		}
		return nil, nil
	}
	if err := localPath(b.Dir, e.File); err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	if want := filepath.ToSlash(objectFile(e.object())); e.File != want {
		return nil, fmt.Errorf("file %q is not where fix keeps this object's backup (%s)", e.File, want)
	}
	data, err := readLocal(b.Dir, e.File)
	if err != nil {
		return nil, err
	}
	if e.SHA256 == "" || sha(data) != e.SHA256 {
		return nil, fmt.Errorf("%s does not match its digest (sha256 %s, recorded %q): it was changed after fix wrote it", e.File, sha(data), e.SHA256)
	}
	if err := checkAliases(string(data)); err != nil {
		return nil, fmt.Errorf("%s: not read: %w", e.File, err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", e.File, err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetAPIVersion() != e.APIVersion || u.GetKind() != e.Kind || u.GetNamespace() != e.Namespace || u.GetName() != e.Name {
		return nil, fmt.Errorf("%s holds %s %s, not the object its index line names (%s %s)", e.File,
			u.GetAPIVersion(), remediate.Object{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}.Ref(), e.APIVersion, entryRef(e))
	}
	if e.UID != "" && string(u.GetUID()) != e.UID {
		return nil, fmt.Errorf("%s holds uid %s, its index line %s", e.File, u.GetUID(), e.UID)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if err := remediate.GuardAction(e.action(), e.object(), secretType(u), labels); err != nil {
		return nil, err
	}
	return u, nil
}

// helmOwned accepts an object of a kind no step writes only as a manifest object of a Helm
// release whose records are in the same backup (a rollback backs both up).
func (b *Backup) helmOwned(e IndexEntry, annotations map[string]string) error {
	rel, ns := annotations[helmReleaseName], annotations[helmReleaseNamespace]
	if rel == "" || ns == "" {
		return fmt.Errorf("kind %s is not one fix writes (%s), and it is not a Helm manifest object (no %s/%s annotations)",
			groupKind(e), kindList(), helmReleaseName, helmReleaseNamespace)
	}
	prefix := remediate.HelmSecretPrefix + rel + ".v"
	for _, o := range b.Index {
		if o.Cluster == e.Cluster && o.Kind == "Secret" && o.APIVersion == "v1" && o.Namespace == ns && strings.HasPrefix(o.Name, prefix) {
			return nil
		}
	}
	return fmt.Errorf("kind %s is not one fix writes (%s), and the backup holds no record of Helm release %s/%s, whose manifest object it claims to be", groupKind(e), kindList(), ns, rel)
}

func kindList() string {
	var s []string
	for _, k := range remediate.WrittenKinds() {
		s = append(s, k.String())
	}
	return strings.Join(s, ", ")
}

// loadJournal reads the journal and checks each line's MAC, chained from the directory's ID
// through every line before it, and that the chain reaches the head OriginFile recorded (it
// may be one line past it: a kill between the line and the record). A last line without its
// newline that does not verify was torn by a kill and is left out; any other line that does
// not verify refuses the backup.
func (b *Backup) loadJournal(key *BackupKey) error {
	raw, err := readLocal(b.Dir, JournalFile)
	if errors.Is(err, fs.ErrNotExist) {
		raw, err = nil, nil
	}
	if err != nil {
		return refuseBackup(b.Dir, "%s: %v", JournalFile, err)
	}
	prev := b.Origin.ID
	lines := bytes.Split(raw, []byte("\n"))
	for i, line := range lines {
		last := i == len(lines)-1
		e, ok := verifyLine(key, prev, line)
		if !ok {
			if last {
				continue
			}
			return refuseBackup(b.Dir, "%s line %d does not verify under the key from %s (its MAC, chained to the line before it, does not match): the journal was changed after fix wrote it", JournalFile, i+1, key.Source)
		}
		b.Journal = append(b.Journal, e)
		b.journalTidy = append(append(b.journalTidy, line...), '\n')
		prev = e.MAC
	}
	n, h := len(b.Journal), b.Origin.Journal
	switch {
	case n < h.Lines:
		return refuseBackup(b.Dir, "%s has %d lines that verify, %s recorded %d: lines were removed after fix wrote them", JournalFile, n, OriginFile, h.Lines)
	case n > h.Lines+1:
		return refuseBackup(b.Dir, "%s has %d lines, %s recorded %d", JournalFile, n, OriginFile, h.Lines)
	case h.Lines > 0 && b.Journal[h.Lines-1].MAC != h.MAC:
		return refuseBackup(b.Dir, "%s line %d is not the line %s recorded as the journal's head", JournalFile, h.Lines, OriginFile)
	}
	b.journalHead = JournalHead{Lines: n}
	if n > 0 {
		b.journalHead.MAC = prev
	}
	return nil
}

// verifyLine decodes one journal line whose MAC verifies after the line whose MAC is prev.
func verifyLine(key *BackupKey, prev string, line []byte) (Entry, bool) {
	var e Entry
	if len(line) < macSuffixLen+2 {
		return e, false
	}
	cut := len(line) - macSuffixLen
	mac := string(line[cut+len(`,"mac":"`) : len(line)-len(`"}`)])
	if !bytes.Equal(line[cut:], macSuffix(mac)) {
		return e, false
	}
	body := append(bytes.Clone(line[:cut]), '}')
	if !hmac.Equal([]byte(journalMAC(key, prev, body)), []byte(mac)) {
		return e, false
	}
	if err := json.Unmarshal(line, &e); err != nil || e.MAC != mac {
		return Entry{}, false
	}
	return e, true
}
