package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A bundle holds cluster data: it is written so that nobody else can read it, a planted
// symlink cannot redirect it, and a reader never sees half of it. Files are written to a
// temporary name beside the destination (0600, under a 0700 directory for a directory bundle)
// and renamed into place.

// checkDest refuses a destination that is a symlink (writing through it would overwrite
// whatever it points at) and says whether something is there.
func checkDest(dest string) (fs.FileInfo, error) {
	fi, err := os.Lstat(dest)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checking %s: %w", dest, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link; refusing to write a bundle through it", dest)
	}
	return fi, nil
}

// writeFileAtomic writes dest (mode 0600) through write, via a temporary file in dest's
// directory renamed over it: an existing file is replaced, never followed or chmod'ed.
func writeFileAtomic(dest string, write func(io.Writer) error) error {
	fi, err := checkDest(dest)
	if err != nil {
		return err
	}
	if fi != nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", dest)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating a temporary file beside %s: %w", dest, err)
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	// CreateTemp makes it 0600 already; say so in case its default ever changes.
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if err := write(tmp); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Checked again just before the rename: a symlink planted meanwhile is refused too
	// (and rename replaces a link rather than following it anyway).
	if _, err := checkDest(dest); err != nil {
		_ = os.Remove(tmp.Name())
		done = true
		return err
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("renaming the bundle into place at %s: %w", dest, err)
	}
	done = true
	return nil
}

// writeDirAtomic writes a directory bundle: built in a fresh 0700 temporary directory beside
// dest and renamed to dest, which must not exist or be an empty directory.
func writeDirAtomic(dest string, paths []string, contents map[string][]byte) error {
	fi, err := checkDest(dest)
	if err != nil {
		return err
	}
	if fi != nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory; choose a new directory or a .tar.gz file", dest)
		}
		if ents, err := os.ReadDir(dest); err != nil || len(ents) > 0 {
			return fmt.Errorf("%s exists and is not empty; choose a new directory or a .tar.gz file", dest)
		}
	}
	parent := filepath.Dir(filepath.Clean(dest))
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dest)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating a temporary directory beside %s: %w", dest, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o700); err != nil {
		return err
	}
	for _, p := range paths {
		full := filepath.Join(tmp, filepath.FromSlash(p))
		if err := mkdirs(tmp, filepath.Dir(full)); err != nil {
			return err
		}
		if err := writeNewFile(full, contents[p]); err != nil {
			return err
		}
	}
	if fi != nil {
		// An empty directory was there: rename replaces it (it cannot replace a non-empty one).
		if err := os.Remove(dest); err != nil {
			return fmt.Errorf("replacing the empty directory %s: %w", dest, err)
		}
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("renaming the bundle into place at %s: %w", dest, err)
	}
	ok = true
	return nil
}

// mkdirs creates dir and its parents below root, each 0700 whatever the umask.
func mkdirs(root, dir string) error {
	if dir == root {
		return nil
	}
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := mkdirs(root, filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// writeNewFile creates a file that must not exist yet, not following a symlink, mode 0600.
func writeNewFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
