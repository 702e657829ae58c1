package report_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/report/reporttest"
)

// "How long things have been stuck" plots stuck incidents only: an API the next Kubernetes
// version removes (api/removed-in-target, a risk in the catalogue) is not stuck for the 75
// days since its release was installed, and is named below the chart instead. A crash-looping
// agent's critical agent/crd-missing, whose own finding has no since, is plotted from the
// since of its symptoms.
func TestHTMLChartPlotsStuckIncidentsOnly(t *testing.T) {
	now := reporttest.EvaluatedAt
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	pod := finding.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "cattle-fleet-system", Name: "fleet-agent-w8dt2q2xf2-gb5tv"}
	crd := finding.NewIncident(
		finding.Finding{ID: "agent/crd-missing", Severity: finding.Critical, Cluster: "prod-us-1", Object: pod,
			Summary: "agent pod cattle-fleet-system/fleet-agent-w8dt2q2xf2-gb5tv: a resource it needs is not served by the API server"},
		[]finding.Finding{{ID: "pod/crashloop", Severity: finding.Error, Cluster: "prod-us-1", Object: pod, Since: ago(2*time.Hour + 10*time.Minute),
			Summary: "container fleet-agent of pod cattle-fleet-system/fleet-agent-w8dt2q2xf2-gb5tv is crash-looping"}})
	removed := finding.NewIncident(finding.Finding{ID: "api/removed-in-target", Severity: finding.Error, Cluster: "prod-ap-1",
		Object: finding.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "cattle-system", Name: "sh.helm.release.v1.rancher-monitoring.v3"},
		Since:  ago(75*24*time.Hour + 6*time.Hour), Summary: "Helm release cattle-system/rancher-monitoring uses flowcontrol.apiserver.k8s.io/v1beta3, which Kubernetes v1.32 no longer serves"}, nil)
	r := &report.Report{SchemaVersion: report.SchemaVersion, EvaluatedAt: now, Incidents: []finding.Incident{crd, removed},
		Findings: append(append([]finding.Finding{crd.RootCause}, crd.Symptoms...), removed.RootCause)}
	out := string(render(t, r, "html", report.Options{}))
	bars := regexp.MustCompile(`<title>([^<]*): (\d+) incidents?</title>`).FindAllStringSubmatch(out, -1)
	if len(bars) != 1 || bars[0][1] != "1–6h, critical" || bars[0][2] != "1" {
		t.Errorf("want one bar, agent/crd-missing at 1–6h critical; got %q", bars)
	}
	if !strings.Contains(out, `Not plotted: 1 risk the upgrade will run into`) || !strings.Contains(out, `<a href="#incident-2">2. api/removed-in-target</a>`) {
		t.Errorf("the page does not say where api/removed-in-target is shown instead")
	}
}
