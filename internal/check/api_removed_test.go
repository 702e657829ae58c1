package check

import (
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A release whose failed revisions, since the last deployed one, say a built-in API is gone is
// api/removed, once, pointing at the newest revision; a failure naming a CRD's group is not.
func TestAPIRemovedFromReleaseHistory(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	rel := func(name string, rev int, status, desc string, ago time.Duration) *helmrelease.Release {
		return &helmrelease.Release{Name: name, Namespace: "apps", Revision: rev, Status: status, Description: desc,
			SecretName: "sh.helm.release.v1." + name + ".v" + string(rune('0'+rev)), LastDeployed: now.Add(-ago)}
	}
	removed := `Upgrade "web" failed: unable to build kubernetes objects from new release manifest: resource mapping not found for name: "web" namespace: "" from "": no matches for kind "CronJob" in version "batch/v1beta1"` + "\nensure CRDs are installed first"
	crd := `Upgrade "mon" failed: unable to build kubernetes objects from new release manifest: resource mapping not found for name: "mon" namespace: "" from "": no matches for kind "ServiceMonitor" in version "monitoring.coreos.com/v1"` + "\nensure CRDs are installed first"
	c := &snapshot.Cluster{Name: "edge-1", Role: snapshot.Downstream, HelmReleases: []*helmrelease.Release{
		rel("web", 1, "deployed", "Install complete", 48*time.Hour),
		rel("web", 2, "failed", removed, 2*time.Hour),
		rel("web", 3, "failed", removed, time.Hour),
		rel("mon", 1, "deployed", "Install complete", 48*time.Hour),
		rel("mon", 2, "failed", crd, time.Hour),
		// fixed since: the last revision deployed, the old failure is history
		rel("old", 1, "superseded", "Install complete", 48*time.Hour),
		rel("old", 2, "failed", strings.ReplaceAll(removed, "web", "old"), 40*time.Hour),
		rel("old", 3, "deployed", "Upgrade complete", 30*time.Hour),
	}}
	ctx := &Context{Snap: &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, Now: now, Thresholds: NewThresholds(cat), Catalog: cat}
	fs, err := apiRemoved.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("want one api/removed finding (release web), got %d: %+v", len(fs), fs)
	}
	f := fs[0]
	if f.Object.Name != "sh.helm.release.v1.web.v3" || !strings.Contains(f.Summary, "CronJob batch/v1beta1 (removed in Kubernetes 1.25)") {
		t.Errorf("finding = %s: %s", f.Object, f.Summary)
	}
	if len(f.Evidence) != 2 {
		t.Errorf("want the two failed revisions quoted, got %+v", f.Evidence)
	}
	// The values the manifest rewrite reads, from the message and the removed-API table.
	for k, want := range map[string]string{"release": "web", "namespace": "apps", "revision": "3", "group-version": "batch/v1beta1",
		"kind": "CronJob", "replacement": "batch/v1", "kubernetes-version": "v1.25"} {
		if f.Vars[k] != want {
			t.Errorf("Vars[%s] = %q, want %q", k, f.Vars[k], want)
		}
	}
}
