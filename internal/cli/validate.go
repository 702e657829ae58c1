package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// noArgsFrom refuses positional arguments for the verbs that read a fleet. Newcomers type
// `unstick scan DIR`; the error says the bundle is read with --from.
func noArgsFrom(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return usageErrorf("%s takes no arguments (got %q); to read an offline bundle, use --from %s", cmd.CommandPath(), args[0], args[0])
}

// validateOutputFile checks --output-file before anything is read, so a long scan does not
// end in "no such file or directory": the file's directory must exist and take a new file,
// and the file must not be a directory. The errors name the user's path, never the
// temporary file used for the check.
func validateOutputFile(path string) error {
	if path == "" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageErrorf("--output-file %s is a directory; name a file, such as %s", path, filepath.Join(path, "report.html"))
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("--output-file %s: the directory %s does not exist", path, dir)
	case err != nil:
		return usageErrorf("--output-file %s: %v", path, unwrapPathError(err))
	case !st.IsDir():
		return usageErrorf("--output-file %s: %s is not a directory", path, dir)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return usageErrorf("--output-file %s: cannot create a file in %s: %v", path, dir, unwrapPathError(err))
	}
	tmp.Close()
	_ = os.Remove(tmp.Name())
	return nil
}

// validateBackupDir says what is wrong with restore's DIR in words: missing, a file, or a
// directory that fix did not write.
func validateBackupDir(dir, name string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usageErrorf("%s does not exist; restore takes the backup directory '%s fix --apply' wrote (its --backup-dir)", dir, name)
	case err != nil:
		return usageErrorf("%s: %v", dir, unwrapPathError(err))
	case !st.IsDir():
		return usageErrorf("%s is a file, not a backup directory written by '%s fix --apply'", dir, name)
	}
	return nil
}
