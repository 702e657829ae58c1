package check_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

// A refused apply is cleared by the steps that change what refused it, filled in with the
// object, its cluster and the release, and never by a resync or rollback that replays it.
func TestRefusedApplyOffersItsWayOut(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		scenario, root string
		next           []string // commands of the next safe step, in order
		alsoRung       string   // another rung the ladder must offer ("" for none)
	}{
		{
			// A field kubectl-create set to another value stays in conflict after adoption (seen on
			// the test bed): deleting the object is the step that clears it.
			scenario: "helm/quoted-ssa-conflict-positive", root: "helm/release-failed",
			next: []string{
				"kubectl --context shop-eu-1 -n shop get configmap shop-config -o yaml > configmap-shop-config.saved.yaml",
				"kubectl --context shop-eu-1 -n shop delete configmap shop-config",
				`kubectl --context local -n fleet-default patch bundles.fleet.cattle.io shop-app --type merge -p '{"spec":{"forceSyncGeneration":3}}'`,
			},
			alsoRung: "kubectl --context shop-eu-1 -n shop annotate configmap shop-config meta.helm.sh/release-name=shop-app meta.helm.sh/release-namespace=shop --overwrite",
		},
		{
			scenario: "fleet/quoted-install-refused-positive", root: "fleet/bundle-err-applied",
			next: []string{
				"kubectl --context shop-eu-1 -n shop get configmap shop-config -o yaml > configmap-shop-config.saved.yaml",
				"kubectl --context shop-eu-1 -n shop delete configmap shop-config",
				`kubectl --context local -n fleet-default patch bundles.fleet.cattle.io shop-app --type merge -p '{"spec":{"forceSyncGeneration":3}}'`,
			},
			alsoRung: "kubectl --context shop-eu-1 -n shop label configmap shop-config app.kubernetes.io/managed-by=Helm --overwrite",
		},
		{
			scenario: "fleet/quoted-immutable-field-positive", root: "fleet/bundle-err-applied",
			next: []string{
				"kubectl --context shop-eu-1 -n shop get deployment.apps shop-api -o yaml > deployment-shop-api.saved.yaml",
				"kubectl --context shop-eu-1 -n shop delete deployment.apps shop-api",
				`kubectl --context local -n fleet-default patch bundles.fleet.cattle.io shop-app --type merge -p '{"spec":{"forceSyncGeneration":3}}'`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			rep := scanDir(t, filepath.Join("..", "..", "testdata", "scenarios", tt.scenario), now)
			inc := incidentOf(rep.Incidents, tt.root)
			if inc == nil {
				t.Fatalf("no incident with root cause %s", tt.root)
			}
			if inc.NextStep == nil || strings.Join(inc.NextStep.Commands, "\n") != strings.Join(tt.next, "\n") {
				t.Errorf("next step:\n%v\nwant commands:\n%s", inc.NextStep, strings.Join(tt.next, "\n"))
			}
			for _, st := range inc.RootCause.Remediation {
				if st.Rung == "resync" || st.Rung == "restart" {
					t.Errorf("the ladder offers %s, which replays the refusal: %v", st.Rung, st.Commands)
				}
				for _, c := range st.Commands {
					if strings.Contains(c, " rollback ") {
						t.Errorf("the ladder offers a rollback: %s", c)
					}
				}
			}
			if tt.alsoRung != "" && !offers(inc.RootCause, tt.alsoRung) {
				t.Errorf("the ladder does not offer %q", tt.alsoRung)
			}
		})
	}
}

// The finding a quoted message yields names what the message names and joins the incident of
// the object that quoted it.
func TestQuotedMessageNamesItsObject(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	tests := []struct {
		scenario, root, symptom string
		summary                 []string
	}{
		{"crd/quoted-missing-kind-positive", "crd/missing", "fleet/bundle-err-applied",
			[]string{"servicemonitors.monitoring.coreos.com", "shop-eu-1", "kind ServiceMonitor (monitoring.coreos.com/v1)", "bundle shop-app"}},
		{"workload/quoted-webhook-service-missing-positive", "workload/webhook-unavailable", "fleet/bundle-err-applied",
			[]string{`"validate.nginx.ingress.kubernetes.io"`, "Service ingress-nginx/ingress-nginx-controller-admission does not exist"}},
		{"helm/quoted-ssa-conflict-positive", "helm/release-failed", "fleet/bundle-wait-applied-stuck",
			[]string{"revision 7", "ConfigMap shop/shop-config", `field manager "kubectl-create"`, ".data.color, .data.size"}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			rep := scanDir(t, filepath.Join("..", "..", "testdata", "scenarios", tt.scenario), now)
			inc := incidentOf(rep.Incidents, tt.root)
			if inc == nil {
				t.Fatalf("no incident with root cause %s", tt.root)
			}
			for _, s := range tt.summary {
				if !strings.Contains(inc.RootCause.Summary, s) {
					t.Errorf("summary %q does not name %s", inc.RootCause.Summary, s)
				}
			}
			found := false
			for _, f := range inc.Symptoms {
				found = found || f.ID == tt.symptom
			}
			if !found {
				t.Errorf("%s is not a symptom of the incident", tt.symptom)
			}
		})
	}
}

func incidentOf(incs []finding.Incident, root string) *finding.Incident {
	for i := range incs {
		if incs[i].RootCause.ID == root {
			return &incs[i]
		}
	}
	return nil
}

func offers(f finding.Finding, cmd string) bool {
	for _, st := range f.Remediation {
		for _, c := range st.Commands {
			if c == cmd {
				return true
			}
		}
	}
	return false
}
