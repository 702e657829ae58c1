package execute

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OriginFile, in the backup directory, binds the backup to the clusters it was taken from
// and holds the digest of its index and the head of its journal, under a MAC (BackupKey). It
// is rewritten whole (a temporary file renamed over it) before each index line is appended
// and after each journal line.
const OriginFile = "backup.json"

// originFormat versions OriginFile. Backups without it were written by versions of unstick
// that recorded neither origin nor digest; format 2 recorded digests without a MAC.
const originFormat = 3

// Origin is the content of OriginFile.
type Origin struct {
	Format int `json:"format"`
	// ID is random, made with the directory: the journal's MAC chain starts from it, so no
	// journal (nor OriginFile) of another backup directory verifies in this one.
	ID string `json:"id"`
	// Key is the ID of the key the MACs are made with (BackupKey.ID).
	Key string `json:"key"`
	// Clusters maps each cluster name the backup uses (a kubeconfig context) to the cluster
	// it was when fix first wrote there.
	Clusters map[string]ClusterID `json:"clusters"`
	// Index is the digest of objects/index.jsonl; Previous its digest before the line being
	// appended when this file was written (a run killed between the two leaves that state,
	// which is as consistent as any other).
	Index    Digest  `json:"index"`
	Previous *Digest `json:"previous,omitempty"`
	// Journal is the journal's head when this file was written: how many lines it had and
	// the MAC of the last. A line cut off the end, or added without the key, is seen.
	Journal JournalHead `json:"journal"`
	// MAC authenticates everything above: HMAC-SHA256 under the key of the file's JSON with
	// this field empty (originMAC).
	MAC string `json:"mac,omitempty"`
}

// JournalHead is how far the journal was written, as OriginFile last recorded it.
type JournalHead struct {
	Lines int    `json:"lines"`
	MAC   string `json:"mac,omitempty"`
}

// ClusterID identifies a cluster: the API server URL the kubeconfig pointed at, and the UID
// of its kube-system namespace, which lives as long as the cluster does and differs between
// clusters even behind the same URL.
type ClusterID struct {
	Server        string `json:"server"`
	KubeSystemUID string `json:"kubeSystemUID"`
}

// Digest is the SHA-256 of a file's first Bytes bytes.
type Digest struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

func digestOf(b []byte) Digest {
	h := sha256.Sum256(b)
	return Digest{Bytes: int64(len(b)), SHA256: hex.EncodeToString(h[:])}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// identify reads a cluster's identity. A read only: it is what every check of a backup's
// origin starts with, before any write.
func identify(ctx context.Context, cl *cluster) (ClusterID, error) {
	ns, err := cl.kube.Core.Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		return ClusterID{}, fmt.Errorf("reading the identity of cluster %s (namespace kube-system): %w", cl.name, err)
	}
	return ClusterID{Server: cl.host, KubeSystemUID: string(ns.UID)}, nil
}

// OriginError is a backup refused because of where it comes from or what it holds.
type OriginError struct {
	Dir    string
	Reason string
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("refusing the backup in %s: %s", e.Dir, e.Reason)
}

func refuseBackup(dir, format string, args ...any) error {
	return &OriginError{Dir: dir, Reason: fmt.Sprintf(format, args...)}
}

// readOrigin reads OriginFile (nil when there is none) and authenticates it with key.
func readOrigin(dir string, key *BackupKey) (*Origin, error) {
	b, err := readLocal(dir, OriginFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, refuseBackup(dir, "%s: %v", OriginFile, err)
	}
	var o Origin
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		var v struct{ Format int }
		if json.Unmarshal(b, &v) != nil || v.Format == originFormat {
			return nil, refuseBackup(dir, "%s is not valid: %v", OriginFile, err)
		}
		o.Format = v.Format // another version's record: said below
	}
	switch {
	case o.Format == 2:
		return nil, refuseBackup(dir, "%s has format 2: it was written by an unstick that recorded digests only, which anyone can recompute, not a MAC under a key kept elsewhere, so it cannot be authenticated (its objects are under %s/ for kubectl, once you have read them; fix --apply needs a new --backup-dir)", OriginFile, objectsDir)
	case o.Format != originFormat:
		return nil, refuseBackup(dir, "%s has format %d; this unstick reads format %d", OriginFile, o.Format, originFormat)
	case o.Key != key.ID():
		return nil, refuseBackup(dir, "it was authenticated with another key (id %s); the key from %s has id %s: give the key it was written under (--backup-key-file, --backup-key-secret)", o.Key, key.Source, key.ID())
	case !key.verify(o.MAC, originMACInput(&o)...):
		return nil, refuseBackup(dir, "the MAC of %s does not verify under the key from %s: the file was changed after fix wrote it", OriginFile, key.Source)
	}
	if o.Clusters == nil {
		o.Clusters = map[string]ClusterID{}
	}
	return &o, nil
}

// originMACInput is what the MAC of OriginFile covers: its JSON without the MAC.
func originMACInput(o *Origin) [][]byte {
	c := *o
	c.MAC = ""
	b, _ := json.Marshal(&c) // strings, numbers and maps of them: it cannot fail
	return [][]byte{[]byte("unstick " + OriginFile), b}
}

// writeOrigin replaces OriginFile atomically (written to a temporary file, synced, renamed),
// with its MAC under key.
func writeOrigin(dir string, key *BackupKey, o *Origin) error {
	o.Format, o.Key, o.MAC = originFormat, key.ID(), ""
	o.MAC = key.mac(originMACInput(o)...)
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := writeTemp(dir, ".backup-*.json", append(b, '\n'))
	if err != nil {
		return fmt.Errorf("writing %s: %w", OriginFile, err)
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, filepath.Join(dir, OriginFile)); err != nil {
		return fmt.Errorf("writing %s: %w", OriginFile, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// readLocal reads a file of the backup directory named by a relative path, refusing one
// that is not local to it (absolute, "..") or reached through a symbolic link.
func readLocal(dir, rel string) ([]byte, error) {
	if err := localPath(dir, rel); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
}

// localPath checks that rel names a regular file inside dir, every part of the way a real
// directory: a symbolic link could lead anywhere.
func localPath(dir, rel string) error {
	if rel == "" || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return fmt.Errorf("%q is not a path inside the backup directory", rel)
	}
	p := dir
	parts := bytes.Split([]byte(filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))), []byte("/"))
	for i, part := range parts {
		p = filepath.Join(p, string(part))
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%q passes through a symbolic link (%s)", rel, p)
		case i < len(parts)-1 && !fi.IsDir():
			return fmt.Errorf("%q: %s is not a directory", rel, p)
		case i == len(parts)-1 && !fi.Mode().IsRegular():
			return fmt.Errorf("%q is not a regular file", rel)
		}
	}
	return nil
}

// checkOrigin compares the clusters a backup names with the clusters the clients reach, by
// reads only: a cluster whose identity differs refuses the whole backup. Clusters the
// clients do not reach are not compared (nothing can be written to them).
func checkOrigin(ctx context.Context, dir string, o *Origin, clients *Clients, names []string) error {
	for _, name := range names {
		if !clients.has(name) {
			continue
		}
		want, ok := o.Clusters[name]
		if !ok {
			return refuseBackup(dir, "it has objects of cluster %s but no record of which cluster that was (%s)", name, OriginFile)
		}
		cl, err := clients.get(name)
		if err != nil {
			return err
		}
		got, err := identify(ctx, cl)
		if err != nil {
			return refuseBackup(dir, "%v: the backup cannot be matched to it", err)
		}
		if got.KubeSystemUID != want.KubeSystemUID {
			return refuseBackup(dir, "it was taken from another cluster: context %s now reaches %s (kube-system uid %s), the backup was taken from %s (kube-system uid %s)",
				name, got.Server, got.KubeSystemUID, want.Server, want.KubeSystemUID)
		}
	}
	return nil
}

// writeTemp writes data to a new temporary file in dir (pattern as os.CreateTemp), synced and
// closed, and returns its path for the caller to rename or link into place (and remove).
func writeTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
