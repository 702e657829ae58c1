package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// liveScenarios are catalogue scenarios, one or two per family, replayed into real API servers
// (one per cluster of the scenario) and scanned live: each must give the findings its offline
// scan gives, and serve on the same servers the incidents, statuses and verdict of the live
// scan. Logs decide the root cause in crd/missing-downstream-agent (an agent crash-looping on a
// missing CRD), agent/tls and pod/crashloop. (pod/terminating-stuck cannot be replayed: the server stamps deletionTimestamp
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
	"workload/webhook-unavailable-positive",
	"helm/helmchart-job-failed-positive",
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
			serveTellsWhatScanTells(t, path, at, liveOut)
		})
	}
}

// viewResult is what every view must agree on: the incidents (root cause and the object it
// is about), each cluster's status and the verdict.
type viewResult struct {
	Verdict   string                          `json:"verdict"`
	FailOn    string                          `json:"failOn"`
	Clock     struct{ Source string }         `json:"clock"`
	Clusters  []struct{ Name, Status string } `json:"clusters"`
	Incidents []struct {
		RootCause struct {
			ID, Cluster string
			Object      struct{ Kind, Namespace, Name string }
		} `json:"rootCause"`
		Clusters []string `json:"clusters"`
	} `json:"incidents"`
}

func parseView(t *testing.T, what string, b []byte) viewResult {
	t.Helper()
	var r viewResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s is not a JSON report: %v\n%s", what, err, b)
	}
	return r
}

// incidents are "id cluster kind/ns/name → affected clusters" lines, sorted.
func (r viewResult) incidents() []string {
	var out []string
	for _, i := range r.Incidents {
		o := i.RootCause.Object
		out = append(out, fmt.Sprintf("%s %s %s/%s/%s → %s", i.RootCause.ID, i.RootCause.Cluster, o.Kind, o.Namespace, o.Name, strings.Join(i.Clusters, ",")))
	}
	sort.Strings(out)
	return out
}

func (r viewResult) statuses() []string {
	var out []string
	for _, c := range r.Clusters {
		out = append(out, c.Name+" "+c.Status)
	}
	sort.Strings(out)
	return out
}

// serveTellsWhatScanTells runs serve on the same kubeconfig (the same API servers, the
// same log proxies), judged at the scenario's collection time, and holds its
// /api/v1/findings to the live scan's report: the same incidents, cluster statuses and
// verdict, read at the same clock. Scenarios whose root cause only a log names (a crash-looping
// agent's missing CRD, its TLS failure) hold serve to reading logs as scan does.
func serveTellsWhatScanTells(t *testing.T, kubeconfig, at, scanOut string) {
	t.Helper()
	addr, stderr := runServe(t, "--kubeconfig", kubeconfig, "--all-contexts", "--now", at)
	scan := parseView(t, "scan -o json", []byte(scanOut))
	serve := parseView(t, "/api/v1/findings", httpGet(t, "http://"+addr+"/api/v1/findings"))
	if d := diff(scan.incidents(), serve.incidents()); d != "" {
		t.Errorf("serve's incidents differ from scan's (- scan only, + serve only):\n%s", d)
	}
	if d := diff(scan.statuses(), serve.statuses()); d != "" {
		t.Errorf("serve's cluster statuses differ from scan's:\n%s", d)
	}
	if scan.Verdict != serve.Verdict || scan.FailOn != serve.FailOn || serve.Clock.Source != scan.Clock.Source {
		t.Errorf("serve: verdict %q at --fail-on %s, clock %s; scan: %q at %s, clock %s", serve.Verdict, serve.FailOn, serve.Clock.Source, scan.Verdict, scan.FailOn, scan.Clock.Source)
	}
	metrics := string(httpGet(t, "http://"+addr+"/metrics"))
	for _, c := range serve.Clusters {
		if want := fmt.Sprintf("unstick_cluster_status{cluster=%q,status=%q} 1", c.Name, c.Status); !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if want := fmt.Sprintf("unstick_verdict{verdict=%q} 1", serve.Verdict); !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	if t.Failed() {
		t.Logf("serve stderr:\n%s", stderr.String())
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
