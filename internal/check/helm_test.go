package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

var helmNow = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

// rev is one stored revision, its time given as minutes before helmNow.
func rev(n int, status string, minutesAgo int) *helmrelease.Release {
	at := helmNow.Add(-time.Duration(minutesAgo) * time.Minute)
	r := &helmrelease.Release{Name: "app", Namespace: "apps", Revision: n, Status: status, LastDeployed: at,
		SecretName: fmt.Sprintf("sh.helm.release.v1.app.v%d", n)}
	if status == helmrelease.StatusUninstalling || status == helmrelease.StatusUninstalled {
		r.LastDeployed = helmNow.AddDate(0, -2, 0) // an uninstall keeps the deploy time and sets info.deleted
		r.Deleted = at
	}
	return r
}

func judgeHistory(t *testing.T, hist ...*helmrelease.Release) []string {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := &snapshot.Cluster{Name: "c1", Role: snapshot.Downstream, HelmReleases: hist}
	ctx := &Context{Snap: &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, Now: helmNow, Thresholds: NewThresholds(cat), Catalog: cat}
	fs, err := helmReleases.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestHelmEveryStatus holds the release check to a verdict for every status Helm writes
// (pkg/release/status.go), as the newest revision, with and without a deployed one before it.
func TestHelmEveryStatus(t *testing.T) {
	const (
		pending  = "helm/release-pending"
		failed   = "helm/release-failed"
		noDeploy = "helm/no-deployed-release"
	)
	for _, c := range []struct {
		name string
		hist []*helmrelease.Release
		want []string
	}{
		{"deployed", []*helmrelease.Release{rev(1, "superseded", 900), rev(2, "deployed", 120)}, nil},
		{"superseded newest, deployed record gone", []*helmrelease.Release{rev(3, "superseded", 120)}, []string{noDeploy}},
		{"unknown newest, nothing deployed", []*helmrelease.Release{rev(4, "unknown", 120)}, []string{noDeploy}},
		{"uninstalled on purpose (--keep-history)", []*helmrelease.Release{rev(1, "superseded", 900), rev(2, "uninstalled", 600)}, nil},
		{"uninstalling for hours (pre-delete hook refuses)", []*helmrelease.Release{rev(1, "uninstalling", 170)}, []string{noDeploy}},
		{"uninstalling for a minute", []*helmrelease.Release{rev(1, "uninstalling", 1)}, nil},
		{"failed upgrade over a deployed revision", []*helmrelease.Release{rev(1, "deployed", 900), rev(2, "failed", 120)}, []string{failed}},
		{"failed first install", []*helmrelease.Release{rev(1, "failed", 120)}, []string{noDeploy, failed}},
		{"failed upgrade, the previous revision superseded (post-upgrade hook)", []*helmrelease.Release{rev(3, "superseded", 900), rev(4, "failed", 120)}, []string{failed}},
		// Helm upgrades from a failed or superseded newest revision, not from an uninstalling one:
		// "has no deployed releases" whatever was deployed before.
		{"uninstalling, an earlier superseded revision", []*helmrelease.Release{rev(1, "superseded", 900), rev(2, "uninstalling", 170)}, []string{noDeploy}},
		{"superseded only, the deployed record gone", []*helmrelease.Release{rev(1, "superseded", 900), rev(2, "superseded", 170)}, []string{noDeploy}},
		{"failed first install a minute ago", []*helmrelease.Release{rev(1, "failed", 1)}, []string{failed}},
		{"pending-install for hours", []*helmrelease.Release{rev(1, "pending-install", 120)}, []string{noDeploy, pending}},
		{"pending-install for a minute", []*helmrelease.Release{rev(1, "pending-install", 1)}, nil},
		{"pending-upgrade over a deployed revision", []*helmrelease.Release{rev(1, "deployed", 900), rev(2, "pending-upgrade", 120)}, []string{pending}},
		{"pending-upgrade, rollback target pruned", []*helmrelease.Release{rev(1, "deployed", 900), rev(3, "pending-upgrade", 120)}, []string{noDeploy, pending}},
		{"pending-rollback over a deployed revision", []*helmrelease.Release{rev(1, "superseded", 900), rev(2, "deployed", 600), rev(3, "pending-rollback", 120)}, []string{pending}},
		{"retry loop, newest a minute old", []*helmrelease.Release{rev(1, "deployed", 900), rev(2, "pending-upgrade", 120), rev(3, "pending-rollback", 60), rev(4, "pending-rollback", 1)}, []string{pending}},
		{"old loop broken by a deployed revision, fresh upgrade", []*helmrelease.Release{rev(2, "pending-upgrade", 300), rev(3, "pending-rollback", 280), rev(4, "deployed", 200), rev(5, "pending-upgrade", 1)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := judgeHistory(t, c.hist...); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

// The acceptance case: 20 pending revisions over two hours, the newest a minute old, is
// reported as pending for two hours, naming the first pending revision and the retries.
func TestHelmPendingRunSummary(t *testing.T) {
	hist := []*helmrelease.Release{rev(7, "deployed", 60*24*58)}
	for i := 0; i < 20; i++ {
		status := "pending-rollback"
		if i == 0 {
			status = "pending-upgrade"
		}
		hist = append(hist, rev(8+i, status, 120-i*119/19))
	}
	cat, _ := catalog.Load()
	c := &snapshot.Cluster{Name: "c1", HelmReleases: hist}
	ctx := &Context{Snap: &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, Now: helmNow, Thresholds: NewThresholds(cat), Catalog: cat}
	fs, _ := helmReleases.Run(ctx)
	if len(fs) != 1 || fs[0].ID != "helm/release-pending" {
		t.Fatalf("got %v", fs)
	}
	f := fs[0]
	for _, want := range []string{"pending for 2h", "since revision 8 (pending-upgrade", "19 retries", "newest revision 27 (pending-rollback) 1m old"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary lacks %q: %s", want, f.Summary)
		}
	}
	if f.Since == nil || !f.Since.Equal(helmNow.Add(-2*time.Hour)) {
		t.Errorf("since = %v, want two hours before now", f.Since)
	}
	if !strings.Contains(f.Evidence[0].Text, "first pending revision of an unbroken run of 20 (Secret sh.helm.release.v1.app.v8): revision 8") {
		t.Errorf("first evidence: %s", f.Evidence[0].Text)
	}
}
