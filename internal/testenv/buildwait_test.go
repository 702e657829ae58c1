//go:build unix

package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A start that waits for another process's build says whose, and that time is not counted
// against the start's timeout: `hack/testbed.sh start` once failed with "did not start within
// 6m0s" while it was only waiting for another clone's build. (The other process is played by
// a second lock of the same file: flock locks belong to the open file, not the process.)
func TestWaitingForABuildDoesNotCountAgainstTheStart(t *testing.T) {
	waits := t.TempDir()
	t.Setenv(waitDirEnv, waits)
	lock := filepath.Join(t.TempDir(), "k8s.lock")
	holder, err := lockFile(t.Context(), lock, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := startWatch{timeout: 30 * time.Minute, waitDir: waits, last: time.Now()}

	got := make(chan func(), 1)
	go func() {
		unlock, err := buildLock(t.Context(), lock, "kube-apiserver and etcd", "/cache/k8s")
		if err != nil {
			t.Error(err)
		}
		got <- unlock
	}()
	want := fmt.Sprintf("waiting for another process (pid %d) to build kube-apiserver and etcd", os.Getpid())
	if !eventually(func() bool { return slices.Equal(waitingFor(waits), []string{want}) }) {
		t.Fatalf("while another process holds the build lock, the start reports %q, want %q", waitingFor(waits), want)
	}
	if w.expired(w.last.Add(time.Hour)) {
		t.Error("an hour spent waiting for another process's build counted against a 30-minute start timeout")
	}

	holder()
	unlock := <-got
	if got := waitingFor(waits); !slices.Equal(got, []string{"building kube-apiserver and etcd"}) {
		t.Errorf("holding the build lock, the start reports %q, want it building", got)
	}
	unlock()
	if got := waitingFor(waits); len(got) != 0 {
		t.Errorf("after the build the start still reports %q", got)
	}
	if !w.expired(w.last.Add(31 * time.Minute)) {
		t.Error("31 minutes of starting after the build did not expire a 30-minute start timeout")
	}
}

func eventually(cond func() bool) bool {
	for range 100 {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
