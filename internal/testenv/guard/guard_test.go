//go:build unix

package guard

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// link makes this test binary a guard for target, as testenv does for kube-apiserver.
func link(t *testing.T, target string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := os.Symlink(self, l); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l+TargetSuffix, []byte(target+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}

// The guard runs the real program with its arguments and exits with its code.
func TestGuardRunsTheTargetAndPassesItsExitCode(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	out, err := exec.Command(link(t, sh), "-c", "echo ran $0 $1; exit 3", "x", "y").CombinedOutput()
	var ee *exec.ExitError
	if !strings.Contains(string(out), "ran x y") {
		t.Errorf("the target did not run with its arguments: %q", out)
	}
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("exit: %v, want code 3", err)
	}
}

// When the guard's parent dies without cleaning up (a test binary killed), the real program
// is ended too instead of running on as an orphan.
func TestGuardEndsTheTargetWhenItsParentDies(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	l := link(t, sh)
	// parent: a shell that starts the guard (whose target prints its pid and sleeps), then
	// waits; it is killed with SIGKILL, as a test binary at its -timeout would be.
	parent := exec.Command(sh, "-c", `"$0" -c 'echo $$; exec sleep 60' & wait`, l)
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("target pid %q: %v", line, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("the target is not running: %v", err)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal("the target still runs 20 s after the guard's parent died")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// `--help` runs the program once; later asks are answered from the copy next to it, until
// the program changes.
func TestGuardKeepsTheHelpOutput(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "program")
	count := filepath.Join(dir, "runs")
	write := func(text string) {
		t.Helper()
		script := "#!/bin/sh\necho run >> " + count + "\necho '" + text + "'\necho 'on stderr' >&2\n"
		if err := os.WriteFile(target, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	write("--insecure-port int")
	l := link(t, target)
	for i := 0; i < 3; i++ {
		out, err := exec.Command(l, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--insecure-port int") || !strings.Contains(string(out), "on stderr") {
			t.Fatalf("--help answered %q, %v", out, err)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 1 {
		t.Errorf("the program ran %d times for three --help, want once", strings.Count(string(b), "run"))
	}
	// A rebuilt program (newer than the copy) is asked again.
	time.Sleep(10 * time.Millisecond)
	write("--new-flag string")
	future := time.Now().Add(time.Minute)
	if err := os.Chtimes(target, future, future); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(l, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--new-flag") {
		t.Errorf("after a rebuild --help answered %q, %v", out, err)
	}
	// Any other arguments run the program.
	if out, err := exec.Command(l, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "--new-flag") {
		t.Errorf("--version: %q, %v", out, err)
	}
}
