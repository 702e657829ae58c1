package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `unstick scan DIR` is what a newcomer types first: the error says to use --from.
func TestPositionalPathHintsFrom(t *testing.T) {
	for _, verb := range []string{"scan", "preflight", "images", "fix"} {
		_, errOut, code := run(t, verb, example)
		if code != ExitUsage {
			t.Errorf("%s DIR: exit %d, want 2", verb, code)
		}
		if want := "use --from " + example; !strings.Contains(errOut, want) {
			t.Errorf("%s DIR: stderr %q does not say %q", verb, errOut, want)
		}
	}
	_, errOut, _ := runIn(t, "kubectl-unstick", "scan", example)
	if !strings.Contains(errOut, "kubectl unstick scan takes no arguments") {
		t.Errorf("as the plugin: %q", errOut)
	}
}

// restore of a directory that is not there says so, naming the command as it was called.
func TestRestoreMissingDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "unstick-fix-20261128T093000Z")
	_, errOut, code := runIn(t, "kubectl-unstick", "restore", missing)
	if code != ExitUsage || !strings.Contains(errOut, missing+" does not exist") || !strings.Contains(errOut, "'kubectl unstick fix --apply'") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// --output-file into a missing directory or onto a directory is refused before anything is
// read, and the message names the user's path, not a temporary file.
func TestOutputFileRefusedBeforeReading(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "no-such-dir", "report.json"), "the directory " + filepath.Join(dir, "no-such-dir") + " does not exist"},
		{dir, dir + " is a directory"},
	} {
		for _, verb := range []string{"scan", "preflight", "images"} {
			out, errOut, code := run(t, verb, "--from", example, "-o", "json", "-v", "--offline-registry", "--output-file", tc.path)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s --output-file %s: exit %d, stderr %q; want 2 saying %q", verb, tc.path, code, errOut, tc.want)
			}
			if out != "" || strings.Contains(errOut, "loaded") || strings.Contains(errOut, "reading") {
				t.Errorf("%s --output-file %s: the bundle was read before the refusal: %q", verb, tc.path, errOut)
			}
			if strings.Contains(errOut, "."+filepath.Base(tc.path)+".") {
				t.Errorf("%s: a temporary file name leaked: %q", verb, errOut)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

// The report goes to the file as it would to stdout, private (0600), through a rename that
// replaces a symlink at the destination instead of writing where it points.
func TestOutputFileWrittenSafely(t *testing.T) {
	for _, verb := range []string{"scan", "preflight", "images"} {
		t.Run(verb, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "victim.txt")
			if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(dir, "report.json")
			if err := os.Symlink(victim, dest); err != nil {
				t.Skipf("no symlinks: %v", err)
			}
			args := []string{verb, "--from", example, "-o", "json", "--offline-registry"}
			direct, errOut, wantCode := run(t, args...)
			if wantCode == ExitUsage || direct == "" {
				t.Fatalf("%v: exit %d, stderr %q", args, wantCode, errOut)
			}
			out, errOut, code := run(t, append(args, "--output-file", dest)...)
			if code != wantCode || out != "" {
				t.Fatalf("exit %d (want %d), stdout %q, stderr %q", code, wantCode, out, errOut)
			}
			if b, _ := os.ReadFile(victim); string(b) != "keep me" {
				t.Errorf("the symlink's target was written: %q", b)
			}
			st, err := os.Lstat(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Errorf("%s is %v, want a regular file 0600", dest, st.Mode())
			}
			if b, _ := os.ReadFile(dest); string(b) != direct {
				t.Errorf("the file differs from stdout:\n%s", firstDiff(direct, string(b)))
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 2 {
				t.Errorf("temporary files left behind: %v", entries)
			}
		})
	}
}

// collect takes its destination from --to; -o still works for now, with a warning saying to
// use --to; both at once, or neither, is a usage error.
func TestCollectTo(t *testing.T) {
	kc, _ := fleetKubeconfig(t) // its servers do not exist: collect fails after the flags are taken
	bundle := filepath.Join(t.TempDir(), "b.tgz")
	_, errOut, code := run(t, "collect", "--kubeconfig", kc, "--timeout", "2s", "-o", bundle)
	if code != ExitFailed || !strings.Contains(errOut, "-o/--output is deprecated") || !strings.Contains(errOut, "use --to "+bundle) {
		t.Errorf("collect -o: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, "collect", "--kubeconfig", kc, "--timeout", "2s", "--to", bundle)
	if code != ExitFailed || strings.Contains(errOut, "deprecated") || !strings.Contains(errOut, "eu.example.test") {
		t.Errorf("collect --to: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{{"collect", "--to", bundle, "-o", bundle}, {"collect"}} {
		if _, errOut, code := run(t, args...); code != ExitUsage || !strings.Contains(errOut, "--to") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	out, _, _ := run(t, "collect", "--help")
	if !strings.Contains(out, "--to string") || strings.Contains(out, "-o, --output") || strings.Contains(out, "collect -o") {
		t.Errorf("collect --help does not show --to alone:\n%s", out)
	}
}

// `completion tcsh` has no script to give: exit 2 naming the shells there are.
func TestCompletionUnknownShell(t *testing.T) {
	out, errOut, code := run(t, "completion", "tcsh")
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "bash, fish, powershell, zsh") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, _, code := run(t, "completion", "bash"); code != ExitOK || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
}

// explain with a family lists that family's IDs, however the family is written.
func TestExplainFamily(t *testing.T) {
	all, _, _ := run(t, "explain")
	var helm []string
	for _, line := range strings.Split(all, "\n") {
		if strings.HasPrefix(line, "helm/") {
			helm = append(helm, line)
		}
	}
	if len(helm) < 3 {
		t.Fatalf("the catalogue lists %d helm/ IDs", len(helm))
	}
	for _, fam := range []string{"helm/", "helm/*", "helm"} {
		out, errOut, code := run(t, "explain", fam)
		if code != ExitOK {
			t.Errorf("explain %s: exit %d: %s", fam, code, errOut)
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if strings.Join(lines[1:], "\n") != strings.Join(helm, "\n") {
			t.Errorf("explain %s:\n%s\nwant the helm/ lines of the catalogue:\n%s", fam, out, strings.Join(helm, "\n"))
		}
	}
	if _, errOut, code := run(t, "explain", "nosuchfamily/"); code != ExitUsage || !strings.Contains(errOut, "unknown finding ID") {
		t.Errorf("explain nosuchfamily/: exit %d, %q", code, errOut)
	}
	out, _, _ := runIn(t, "kubectl-unstick", "explain", "helm/release-pending")
	if !strings.Contains(out, "kubectl unstick fix never goes above --max-risk") {
		t.Errorf("as the plugin, explain does not name kubectl unstick:\n%s", out)
	}
}
