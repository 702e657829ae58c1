package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// A fleet of 50 downstream clusters read through the Rancher stand-in (testenv.RancherBed):
// 48 cluster IDs routed over two real API servers holding the example's two healthy
// downstream clusters, one cluster whose API server refuses connections (Rancher answers
// 502) and one whose requests never get an answer. `scan --rancher --max-inflight 4` must
// judge every cluster, report the two it could not read (exit 4), and never have more than
// 4 requests at Rancher at once. hack/bench/rancher.sh runs the same bed at 200 to 2,000.
func TestRancherFleetScale(t *testing.T) {
	const limit, healthy = 4, 48
	bed, err := testenv.StartRancherBed(t.Context(), t.TempDir(), example, []string{"staging-1", "dev-1"}, healthy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bed.Stop(); err != nil {
			t.Errorf("stopping the bed: %v", err)
		}
	})
	down, err := testenv.UnreachableCluster("c-m-down0001")
	if err != nil {
		t.Fatal(err)
	}
	bed.StandIn.ListCluster("c-m-down0001", "offline-1", down)
	bed.StandIn.ListCluster("c-m-hang0001", "stuck-tunnel-1", testenv.HangingCluster())
	bed.StandIn.Allow(bed.Token, "c-m-down0001", "c-m-hang0001")
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := bed.Kubeconfig(kc); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	out, errOut, code := run(t, "scan", "--kubeconfig", kc, "--rancher", "--max-inflight", "4", "--timeout", "30s",
		"--now", now, "--fail-on", "none", "-o", "json", "-q")
	st := bed.StandIn.Stats()
	t.Logf("scan --rancher of %d clusters: %s, %d requests, %d bytes, at most %d at once", healthy+2, time.Since(start).Round(time.Millisecond), st.Requests, st.Bytes, st.MaxInFlight)
	if code != 4 {
		t.Fatalf("exit %d, want 4 (two clusters could not be read); stderr: %s", code, errOut)
	}
	if st.MaxInFlight > limit {
		t.Errorf("the stand-in saw %d requests at once; --max-inflight is %d", st.MaxInFlight, limit)
	}
	var rep struct {
		Clusters []struct{ Name, Status string }
		Errors   []struct{ Cluster, Message string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	failed := map[string]bool{}
	for _, e := range rep.Errors {
		failed[e.Cluster] = true
	}
	status := map[string]string{}
	for _, c := range rep.Clusters {
		status[c.Name] = c.Status
	}
	judgedEvery(t, bed, status, failed, st.PerCluster)
	for _, name := range []string{"offline-1", "stuck-tunnel-1"} {
		if !failed[name] || status[name] != "incomplete" && status[name] != "no data" {
			t.Errorf("%s: status %q, errors %v; want it reported as not read", name, status[name], failed[name])
		}
	}
}

// judgedEvery checks that each healthy cluster of the bed was read through its proxy path,
// appears in the report with a status and has no error.
func judgedEvery(t *testing.T, bed *testenv.RancherBed, status map[string]string, failed map[string]bool, per map[string]testenv.ClusterStats) {
	t.Helper()
	for i, id := range bed.IDs {
		name := bed.Names[i]
		switch {
		case status[name] == "" || status[name] == "no data" || status[name] == "incomplete":
			t.Errorf("%s (%s) was not judged: status %q", name, id, status[name])
		case failed[name]:
			t.Errorf("%s (%s) has a read error", name, id)
		case per[id].Requests == 0:
			t.Errorf("%s (%s): no request reached its proxy path", name, id)
		}
	}
}
