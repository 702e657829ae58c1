package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// liveScenarios are catalogue scenarios, one or two per family, replayed into real API servers
// (one per cluster of the scenario) and scanned live: each must give the findings its offline
// scan gives. (pod/terminating-stuck cannot be replayed: the server stamps deletionTimestamp
// with the time of the replay, not the time recorded in the bundle.)
var liveScenarios = []string{
	"helm/release-pending-positive",
	"fleet/agent-heartbeat-stale-positive",
	"fleet/bundle-err-applied-positive",
	"fleet/registration-broken-positive",
	"pod/unschedulable-taints-positive",
	"pod/crashloop-positive",
	"image/pull-not-found-positive",
	"workload/quota-exceeded-positive",
	"agent/tls-positive",
	"crd/missing-downstream-agent-positive",
	"crd/version-not-served-positive",
	"cluster/clock-skew-node-heartbeat-positive",
	// Rancher's own upgrades: the management cluster's provisioning, rke.cattle.io, CAPI
	// (v1beta2) and management.cattle.io objects and machine-plan Secrets, the downstream
	// PodDisruptionBudget; an imported cluster's Rancher-managed Plans.
	"rancher/drain-blocked-positive",
	"rancher/plan-failing-positive",
	"rancher/plans-disabled-by-rancher-positive",
	"rancher/plans-disabled-by-rancher-stuck-upgrade-positive",
	"rancher/node-not-ready-positive",
}

func TestScenariosScanTheSameLive(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	for _, name := range liveScenarios {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "scenarios", name)
			// The offline scan names the clusters; the live contexts get the same names.
			snap, err := (&source.Offline{Path: dir}).Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			bundleHasClusters := false
			_ = source.ReadRawObjects(dir, func(o source.RawObject) error {
				bundleHasClusters = bundleHasClusters || o.Cluster != ""
				return nil
			})
			kc := clientcmdapi.NewConfig()
			for _, c := range snap.Clusters {
				env := testenv.Start(t, testenv.WithContextName(c.Name))
				pick := ""
				if bundleHasClusters {
					pick = c.Name
				}
				if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{Cluster: pick}); err != nil {
					t.Fatalf("loading %s: %v", c.Name, err)
				}
				logs := filepath.Join(t.TempDir(), "logs")
				if _, err := testenv.CopyLogs(dir, pick, logs); err != nil {
					t.Fatal(err)
				}
				addProxiedContext(t, kc, c.Name, env.Config, logs)
				kc.CurrentContext = c.Name
			}
			path := writeKubeconfig(t, kc)
			at := snap.CollectedAt.UTC().Format("2006-01-02T15:04:05Z")
			offOut, offErr, _ := run(t, "scan", "--from", dir, "--now", at, "-o", "json")
			liveOut, liveErr, _ := run(t, "scan", "--kubeconfig", path, "--all-contexts", "--now", at, "-o", "json", "-q")
			off, live := parse(t, offOut, offErr), parse(t, liveOut, liveErr)
			if len(off.Findings) == 0 {
				t.Fatal("the scenario has no findings offline")
			}
			if d := diff(off.keys(), live.keys()); d != "" {
				t.Errorf("live findings differ from offline (- offline only, + live only):\n%s", d)
			}
			if d := diff(off.roots(), live.roots()); d != "" {
				t.Errorf("live incidents differ from offline:\n%s", d)
			}
			// The next safe step is chosen from the same facts live: the same rung.
			if d := diff(off.nextSteps(), live.nextSteps()); d != "" {
				t.Errorf("live next steps differ from offline:\n%s", d)
			}
			if name == "helm/release-pending-positive" {
				handInstalledNextStep(t, live)
			}
			if t.Failed() {
				t.Logf("live scan errors: %+v\nstderr: %s", live.Errors, liveErr)
			}
		})
	}
}

// A release installed by hand on a cluster without a Fleet agent, replayed into a real API
// server: its next step is the Helm rollback fix plans, with no Fleet command.
func handInstalledNextStep(t *testing.T, live scanResult) {
	t.Helper()
	for _, i := range live.Incidents {
		if i.RootCause.ID != "helm/release-pending" {
			continue
		}
		if i.NextStep == nil || i.NextStep.Rung != "repair" || len(i.NextStep.Commands) != 1 ||
			!strings.Contains(i.NextStep.Commands[0], " -n ingress-nginx rollback ingress-nginx 7") {
			t.Errorf("live next step %+v, want the repair rung rolling ingress-nginx back to revision 7", i.NextStep)
		}
		return
	}
	t.Error("no helm/release-pending incident live")
}
