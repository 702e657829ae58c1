package check

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// managementAt is a management cluster whose fleet-controller runs image tag v.
func managementAt(t *testing.T, v string) *snapshot.Snapshot {
	t.Helper()
	b := snapshot.NewBuilder()
	b.DeclareCluster(snapshot.ClusterInfo{Name: "local", Role: snapshot.Management})
	doc := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fleet-controller","namespace":"cattle-fleet-system"},"spec":{"selector":{},"template":{"spec":{"containers":[{"name":"fleet-controller","image":"rancher/fleet:%s"}]}}}}`, v)
	var h snapshot.Header
	if err := json.Unmarshal([]byte(doc), &h); err != nil {
		t.Fatal(err)
	}
	if err := b.AddJSON("local", "test", &h, []byte(doc)); err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// cited is the known regression a finding of id and signature cites on a management cluster
// running fleet-controller version v; "" for none.
func cited(t *testing.T, v, id, sig string) string {
	fs := []finding.Finding{{ID: id, Cluster: "local", Signature: sig}}
	citeRegressions(managementAt(t, v), fs)
	for _, e := range fs[0].Evidence {
		if strings.HasPrefix(e.Text, "known regression ") {
			return e.Text
		}
	}
	return ""
}

// Each entry is cited from the first affected version of each release line up to, not
// including, the fix, and only with its signature; before the range, at the fix, or with
// another finding it is not.
func TestKnownRegressions(t *testing.T) {
	for _, r := range knownRegressions() {
		sig := r.Signatures[0]
		id := "fleet/gitrepo-not-syncing"
		if !strings.Contains(sig, "|") {
			id, sig = sig, ""
		}
		for _, rg := range r.Ranges {
			t.Run(r.Issue+" "+rg.String(), func(t *testing.T) {
				got := cited(t, "v"+rg.From, id, sig)
				if !strings.Contains(got, r.Issue) || !strings.Contains(got, "fixed in v"+rg.Fixed+": upgrade Fleet") {
					t.Errorf("v%s: cited %q, want %s fixed in v%s", rg.From, got, r.Issue, rg.Fixed)
				}
				if got := cited(t, "v"+rg.Fixed, id, sig); strings.Contains(got, r.Issue) {
					t.Errorf("v%s has the fix, yet %q", rg.Fixed, got)
				}
				if got := cited(t, "v"+rg.From, "fleet/bundle-err-applied", "err-applied|web|x"); got != "" {
					t.Errorf("another finding cites %q", got)
				}
			})
		}
	}
}

// A version before an entry's first affected release is not matched: fleet#3138 was first
// seen with v0.10.4, fleet#4948 came with v0.14.0.
func TestKnownRegressionsBeforeTheRange(t *testing.T) {
	for _, c := range []struct{ version, sig, issue string }{
		{"v0.10.3", "gitrepo-not-syncing|stale", "rancher/fleet#3138"},
		{"v0.13.9", "gitrepo-not-syncing|quota", "rancher/fleet#4948"},
		{"v0.14.7-rc.1", "gitrepo-not-syncing|quota", "rancher/fleet#4948"},
	} {
		if got := cited(t, c.version, "fleet/gitrepo-not-syncing", c.sig); strings.Contains(got, c.issue) {
			t.Errorf("%s: cited %q", c.version, got)
		}
	}
	if got := cited(t, "v0.14.3", "fleet/gitrepo-not-syncing", "gitrepo-not-syncing|secret"); !strings.Contains(got, "rancher/fleet#4948") {
		t.Errorf("v0.14.3 with a missing secret: cited %q, want rancher/fleet#4948", got)
	}
	if got := cited(t, "v0.15.0", "fleet/bundle-modified", "bundle-modified|artefact|web"); got != "" {
		t.Errorf("a diff artefact cites %q, drift correction has nothing to do with it", got)
	}
}
