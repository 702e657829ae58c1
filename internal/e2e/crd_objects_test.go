package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/remediate/execute"
)

// A CRD whose status.storedVersions still holds v1 after v2 became the storage version, with
// 37 objects: the live scan says the migration rewrites 37 objects (counted with one LIST of a
// single item and the server's remainingItemCount), and so does a scan of the bundle collect
// wrote, offline, from the count the bundle's metadata recorded.
func TestCRDMigrationObjectCountLiveAndCollected(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	f := liveFleet(t)
	const n = 37
	widgets(t, f, n)

	type crdFinding struct {
		ID       string `json:"id"`
		Summary  string `json:"summary"`
		Evidence []struct {
			Text string `json:"text"`
		} `json:"evidence"`
	}
	check := func(t *testing.T, what, out, errOut string) {
		t.Helper()
		var rep struct {
			Findings []crdFinding `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: report JSON: %v\n%s%s", what, err, out, errOut)
		}
		var got *crdFinding
		for i, fd := range rep.Findings {
			if fd.ID == "crd/version-not-served" {
				got = &rep.Findings[i]
			}
		}
		if got == nil {
			t.Fatalf("%s: no crd/version-not-served finding:\n%s", what, out)
		}
		if !strings.Contains(got.Summary, "migrate its 37 objects to v2") {
			t.Errorf("%s: summary %q does not say the 37 objects to migrate", what, got.Summary)
		}
		if len(got.Evidence) == 0 || !strings.Contains(got.Evidence[0].Text, "; 37 objects to migrate") {
			t.Errorf("%s: evidence %+v does not say the 37 objects to migrate", what, got.Evidence)
		}
	}

	out, errOut, code := run(t, append([]string{"scan"}, f.args("--only", "crd/", "--fail-on", "warning", "-o", "json")...)...)
	if code != 3 {
		t.Fatalf("live scan exit %d, want 3 (a warning at --fail-on warning): %s", code, errOut)
	}
	check(t, "live scan", out, errOut)

	bundle := filepath.Join(t.TempDir(), "collected.tar.gz")
	if _, errOut, code := run(t, "collect", "--kubeconfig", f.kubeconfig, "--all-contexts", "-o", bundle, "-q"); code != 0 {
		t.Fatalf("collect exit %d: %s", code, errOut)
	}
	out, errOut, code = run(t, "scan", "--from", bundle, "--now", now, "--offline-registry", "-q", "--only", "crd/", "--fail-on", "warning", "-o", "json")
	if code != 3 {
		t.Fatalf("scan of the collected bundle exit %d, want 3: %s", code, errOut)
	}
	check(t, "collected bundle", out, errOut)

	// The fix's migration measures its progress against the same count.
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code = run(t, append([]string{"fix"}, f.args("--only", "crd/", "--apply", "--yes", "--max-risk", "high", "--backup-dir", dir, "--verify-timeout", "30s")...)...)
	t.Logf("fix --apply:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("fix --apply exit %d", code)
	}
	if !strings.Contains(out, "37 Widget objects written back in v2 (37 counted when planned)") {
		t.Errorf("the migration's summary does not measure 37 objects against the 37 counted")
	}
	entries, err := execute.ReadJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var progress []string
	for _, e := range entries {
		if e.Phase == execute.PhaseProgress {
			progress = append(progress, e.Message)
		}
	}
	if len(progress) != 1 || !strings.Contains(progress[0], "page 1: 37 objects written back (37 in all of 37 counted when planned,") {
		t.Errorf("journal progress lines %q, want one page of 37 of the 37 counted", progress)
	}
}
