package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The key flags are checked before anything is read: one key at a time, a Secret named as
// NAMESPACE/NAME, and only with --apply for fix. restore never makes a key: a backup is
// checked with the key it was written under, and a key file others may read is refused.
func TestBackupKeyFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"restore", dir, "--backup-key-file", "k", "--backup-key-secret", "ns/name"}, "give one"},
		{[]string{"restore", dir, "--backup-key-secret", "just-a-name"}, "want NAMESPACE/NAME"},
		{[]string{"fix", "--from", example, "--backup-key-file", "k"}, "without --apply there is no backup"},
		{[]string{"restore", dir, "--backup-key-file", filepath.Join(dir, "missing.key")}, "no backup key at"},
	} {
		_, errOut, code := run(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want a refusal saying %q", tc.args, code, errOut, tc.want)
		}
	}
	key := filepath.Join(dir, "shared.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := run(t, "restore", dir, "--backup-key-file", key); code == 0 || !strings.Contains(errOut, "has mode 0644") {
		t.Errorf("a world-readable key: exit %d, %q", code, errOut)
	}
}
