package execute

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// KeyBytes is the size of a key unstick makes, and the least it accepts.
const KeyBytes = 32

// BackupKey authenticates backup directories: HMAC-SHA256 under a secret that is never
// written beside a backup (a file in the user's configuration directory, or a Secret the
// operator names). Whoever can read or write a backup directory, but not the key, can
// neither forge nor edit a backup that restore or a resumed fix accepts.
type BackupKey struct {
	secret []byte
	// Source says where the key came from, for messages (never the key itself).
	Source string
}

// NewBackupKey wraps a secret read from source.
func NewBackupKey(secret []byte, source string) (*BackupKey, error) {
	if len(secret) < KeyBytes {
		return nil, fmt.Errorf("backup key %s holds %d bytes; at least %d random bytes are needed", source, len(secret), KeyBytes)
	}
	return &BackupKey{secret: append([]byte(nil), secret...), Source: source}, nil
}

// ID names the key without revealing it: a backup records the ID of the key it was written
// under, so a backup checked with another key is refused with both IDs named.
func (k *BackupKey) ID() string {
	return k.mac([]byte("unstick backup key id"))[:16]
}

// mac is the hex HMAC-SHA256 of the parts, each preceded by its length (no two different
// sequences of parts give the same input).
func (k *BackupKey) mac(parts ...[]byte) string {
	h := hmac.New(sha256.New, k.secret)
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// verify compares a recorded MAC with the one computed, in constant time.
func (k *BackupKey) verify(recorded string, parts ...[]byte) bool {
	return hmac.Equal([]byte(recorded), []byte(k.mac(parts...)))
}

// KeyFileName is the name of the per-user key in unstick's configuration directory.
const KeyFileName = "backup.key"

// DefaultKeyFile is the per-user key: KeyFileName in the directory of unstick's
// configuration file (configDir, $XDG_CONFIG_HOME/unstick or ~/.config/unstick).
func DefaultKeyFile(configDir string) string {
	return filepath.Join(configDir, KeyFileName)
}

// LoadKeyFile reads the key at path. A missing file is made (KeyBytes random bytes, 0600 in
// a 0700 directory) when create is set, and an error otherwise: a backup cannot be checked
// without the key it was written under. A key file that is a symbolic link, not a regular
// file, or readable or writable by anyone but its owner is refused.
func LoadKeyFile(path string, create bool) (*BackupKey, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, fmt.Errorf("no backup key at %s: a backup is authenticated with the key it was written under (--backup-key-file or --backup-key-secret name another)", path)
		}
		if err := makeKeyFile(path); err != nil {
			return nil, err
		}
		fi, err = os.Lstat(path)
	}
	if err != nil {
		return nil, fmt.Errorf("backup key %s: %w", path, err)
	}
	if err := keyFileMode(path, fi); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("backup key %s: %w", path, err)
	}
	return NewBackupKey(b, "file "+path)
}

// keyFileMode refuses a key file anyone else could read or change, or one reached through a
// symbolic link (which could point at a file someone else controls). Windows has no mode
// bits (Go reports 0666): there the profile directory's ACL keeps others out.
func keyFileMode(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("backup key %s is a symbolic link; unstick reads a key only from a regular file", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("backup key %s is not a regular file", path)
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("backup key %s has mode %04o: others may read or change it; make it 0600 (chmod 600 %s) or use another key", path, fi.Mode().Perm(), path)
	}
	return nil
}

// makeKeyFile writes a new random key, whole or not at all: written to a temporary file in
// the same directory and linked into place, so a concurrent run either makes it or reads the
// one the other made.
func makeKeyFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the backup key's directory: %w", err)
	}
	secret := make([]byte, KeyBytes)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	// os.CreateTemp makes the file 0600, before anything is written to it.
	tmp, err := writeTemp(dir, ".backup-key-*", secret)
	if err != nil {
		return fmt.Errorf("making the backup key: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making the backup key: %w", err)
	}
	return nil
}
