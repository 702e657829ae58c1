package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// writeOutput renders to stdout, or with path to that file: written to a temporary file in
// the same directory and renamed over the destination, so a reader never sees half a report,
// a symlink at the destination is replaced rather than followed (the write cannot land in
// some other file), and the file is private (0600) because a report holds cluster data.
func writeOutput(path string, stdout io.Writer, render func(io.Writer) error) error {
	if path == "" {
		return render(stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--output-file %s: %w", path, withoutTempName(err))
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := render(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, withoutTempName(err))
	}
	// CreateTemp makes the file 0600 already; say so where it matters.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("--output-file %s: %w", path, withoutTempName(err))
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, withoutTempName(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, withoutTempName(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--output-file %s: %w", path, withoutTempName(err))
	}
	return nil
}

// withoutTempName drops the temporary file's name from a file error: the user named another
// path and has never heard of this one.
func withoutTempName(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
