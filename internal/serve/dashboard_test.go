package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
)

// An event message, a pod's waiting reason or a release name a tenant chose can carry
// terminal escapes (OSC 52 writes the clipboard of whoever copies the text); the dashboard
// must show the words and drop the sequences.
func TestDashboardDropsControlSequences(t *testing.T) {
	osc52 := "\x1b]52;c;Y3VybCAtcyBldmlsLmV4YW1wbGUuY29tIHwgc2g=\x07"
	since := exampleNow.Add(-40 * time.Minute)
	pending := finding.Finding{
		ID: "helm/release-pending", Severity: finding.Error, Cluster: "prod-eu-1\x1b[2J",
		Object:  finding.ObjectRef{Kind: "Secret", Namespace: "cattle-fleet-system", Name: "sh.helm.release.v1.fleet-agent\x1b[31m.v7"},
		Summary: "release fleet-agent is pending-upgrade: Back-off pulling image \"rancher/fleet-agent:v0.13.1\"" + osc52,
		Since:   &since, Vars: map[string]string{"release": "fleet-agent" + osc52},
	}
	rep := &report.Report{EvaluatedAt: exampleNow,
		Clusters:  []report.Cluster{{Name: "prod-eu-1\x1b[2J"}},
		Incidents: []finding.Incident{{RootCause: pending}},
		Findings:  []finding.Finding{pending},
		Errors:    []finding.ScanError{{Cluster: "prod-eu-1", Message: "events: watch closed\x9b2J" + osc52}},
	}
	s := &Server{o: Options{Version: "test"}, ready: true, last: &state{report: rep, ages: []finding.Finding{pending}}}
	rec := httptest.NewRecorder()
	s.dashboard(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	page := string(body)
	for i, r := range page {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Fatalf("control character %U at byte %d of the dashboard: …%q…", r, i, page[max(0, i-40):min(len(page), i+40)])
		}
	}
	for _, want := range []string{"Back-off pulling image", "prod-eu-1", "cattle-fleet-system/fleet-agent", "events: watch closed"} {
		if !strings.Contains(page, want) {
			t.Errorf("the dashboard lost %q", want)
		}
	}
	if strings.Contains(page, "52;c;") {
		t.Errorf("the OSC 52 payload is still on the page")
	}
}
