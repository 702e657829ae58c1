//go:build !windows

package source

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func smallBundle(t *testing.T) *BundleWriter {
	t.Helper()
	w := NewBundleWriter("unstick test", time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC))
	feed(t, w, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fleet-agent","namespace":"cattle-fleet-system"},"data":{"config":"{}"}}`))
	return w
}

// A symlink planted where the archive goes is refused, and what it points at is untouched.
func TestCollectRefusesASymlinkAtTheDestination(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{filepath.Join(dir, "bundle.tar.gz"), filepath.Join(dir, "bundle-dir")} {
		if err := os.Symlink(victim, dest); err != nil {
			t.Fatal(err)
		}
		_, err := smallBundle(t).Write(dest)
		if err == nil || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Write(%s → victim) = %v, want a refusal naming the symbolic link", filepath.Base(dest), err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep me" {
			t.Errorf("the symlink's target was overwritten: %q", b)
		}
	}
	// A symlink to a directory is refused the same way, and nothing is written into it.
	target := t.TempDir()
	link := filepath.Join(dir, "linked-dir")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := smallBundle(t).Write(link); err == nil {
		t.Error("Write through a symlink to an empty directory succeeded")
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("files written into the symlink's target directory: %v", ents)
	}
	leftovers(t, dir)
}

// An existing 0644 archive is replaced by a 0600 one (a new file, renamed over it).
func TestCollectReplacesAnExistingWorldReadableFileWith0600(t *testing.T) {
	dir := t.TempDir()
	dest := filepath.Join(dir, "bundle.tar.gz")
	if err := os.WriteFile(dest, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dest, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := smallBundle(t).Write(dest); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("archive mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := readTarGz(dest, DefaultLimits); err != nil {
		t.Errorf("the replaced archive does not read back: %v", err)
	}
	leftovers(t, dir)
}

// Directory bundles are new: a non-empty directory is refused and left as it was; an empty
// one is replaced by the bundle.
func TestCollectDirectoryBundleIsCreatedFresh(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(full, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := smallBundle(t).Write(full); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Write into a non-empty directory = %v, want a refusal", err)
	}
	if ents, _ := os.ReadDir(full); len(ents) != 1 {
		t.Errorf("the non-empty directory was changed: %v", ents)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := smallBundle(t).Write(empty); err != nil {
		t.Fatalf("Write into an empty directory: %v", err)
	}
	assertModes(t, empty)
	leftovers(t, dir)
}

// Under any umask, the archive and every file of a directory bundle are 0600 in 0700
// directories: never wider (umask 0), never unreadable by their owner (umask 077).
func TestCollectFileModesUnderUmask(t *testing.T) {
	for _, mask := range []int{0o077, 0o000, 0o022} {
		old := syscall.Umask(mask)
		dir := t.TempDir()
		archive := filepath.Join(dir, "bundle.tgz")
		_, errA := smallBundle(t).Write(archive)
		tree := filepath.Join(dir, "bundle")
		_, errD := smallBundle(t).Write(tree)
		syscall.Umask(old)
		if errA != nil || errD != nil {
			t.Fatalf("umask %03o: %v / %v", mask, errA, errD)
		}
		if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("umask %03o: archive %v (%v), want 0600", mask, fi.Mode().Perm(), err)
		}
		assertModes(t, tree)
		if _, err := (&Offline{Path: tree}).Load(t.Context()); err != nil {
			t.Errorf("umask %03o: the directory bundle does not load: %v", mask, err)
		}
	}
}

func assertModes(t *testing.T, root string) {
	t.Helper()
	files := 0
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Error(err)
			return nil
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
		return nil
	})
	if files < 2 {
		t.Errorf("%s: only %d files written", root, files)
	}
}

// leftovers fails when a temporary file or directory of a write is left behind.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary %s left behind", e.Name())
		}
	}
}
