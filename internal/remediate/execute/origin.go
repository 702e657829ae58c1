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
// and holds the digest of its index. It is rewritten whole (a temporary file renamed over
// it) before each index line is appended.
const OriginFile = "backup.json"

// originFormat versions OriginFile. Backups without it were written by versions of unstick
// that recorded neither origin nor digest.
const originFormat = 2

// Origin is the content of OriginFile.
type Origin struct {
	Format int `json:"format"`
	// Clusters maps each cluster name the backup uses (a kubeconfig context) to the cluster
	// it was when fix first wrote there.
	Clusters map[string]ClusterID `json:"clusters"`
	// Index is the digest of objects/index.jsonl; Previous its digest before the line being
	// appended when this file was written (a run killed between the two leaves that state,
	// which is as consistent as any other).
	Index    Digest  `json:"index"`
	Previous *Digest `json:"previous,omitempty"`
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

// readOrigin reads OriginFile (nil when there is none).
func readOrigin(dir string) (*Origin, error) {
	b, err := readLocal(dir, OriginFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, refuseBackup(dir, "%s: %v", OriginFile, err)
	}
	var o Origin
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, refuseBackup(dir, "%s is not valid: %v", OriginFile, err)
	}
	if o.Format != originFormat {
		return nil, refuseBackup(dir, "%s has format %d; this unstick reads format %d", OriginFile, o.Format, originFormat)
	}
	if o.Clusters == nil {
		o.Clusters = map[string]ClusterID{}
	}
	return &o, nil
}

// writeOrigin replaces OriginFile atomically: written to a temporary file, synced, renamed.
func writeOrigin(dir string, o *Origin) error {
	o.Format = originFormat
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".backup-*.json")
	if err != nil {
		return fmt.Errorf("writing %s: %w", OriginFile, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", OriginFile, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", OriginFile, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", OriginFile, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, OriginFile)); err != nil {
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
