package e2e

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// traceView is what a user reads in a trace: where the change stopped, each stage's status,
// time and detail, and the incident that says why.
type traceView struct {
	Verdict   string `json:"verdict"`
	StoppedAt string `json:"stoppedAt"`
	Commit    string `json:"commit"`
	Stages    []struct {
		Name    string  `json:"stage"`
		Status  string  `json:"status"`
		At      *string `json:"at"`
		Detail  string  `json:"detail"`
		Stopped bool    `json:"stopped"`
	} `json:"stages"`
	Incident *struct {
		Number    int    `json:"number"`
		RootCause string `json:"rootCause"`
		Object    string `json:"object"`
	} `json:"incident"`
}

func parseTraceView(t *testing.T, what, out, errOut string) traceView {
	t.Helper()
	var v traceView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s: trace -o json: %v\nstdout: %s\nstderr: %s", what, err, out, errOut)
	}
	return v
}

// TestTraceLiveMatchesOffline traces the GitRepo whose gitjob a ResourceQuota refuses, read
// from the real API server — through the kubeconfig, and through the Rancher stand-in with
// --rancher — and from the scenario's files: the three traces are one story, stopped at the
// job with the quota's incident. One API server serves all three.
func TestTraceLiveMatchesOffline(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "scenarios", "fleet", "gitrepo-not-syncing-quota-positive")
	env := testenv.Start(t, testenv.WithContextName("local"))
	if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{Cluster: "local"}); err != nil {
		t.Fatal(err)
	}
	at := "2026-11-28T09:30:00Z"
	offOut, offErr, offCode := run(t, "trace", "gitrepo/fleet-default/platform", "--from", dir, "--now", at, "-o", "json")
	off := parseTraceView(t, "offline", offOut, offErr)
	if offCode != 3 || off.StoppedAt != "job" || off.Incident == nil || off.Incident.RootCause != "workload/quota-exceeded" {
		t.Fatalf("offline: exit %d, stopped at %q, incident %+v; want 3, job, workload/quota-exceeded\n%s", offCode, off.StoppedAt, off.Incident, offOut)
	}

	kc := clientcmdapi.NewConfig()
	addProxiedContext(t, kc, "local", env.Config, t.TempDir())
	kc.CurrentContext = "local"
	liveOut, liveErr, liveCode := run(t, "trace", "gitrepo/fleet-default/platform", "--kubeconfig", writeKubeconfig(t, kc), "--now", at, "-o", "json", "-q")
	if live := parseTraceView(t, "live", liveOut, liveErr); liveCode != offCode || !reflect.DeepEqual(live, off) {
		t.Errorf("live trace (exit %d) differs from offline (exit %d):\nlive:    %+v\noffline: %+v", liveCode, offCode, live, off)
	}

	rancher := rancherStandInFor(t, env)
	rOut, rErr, rCode := run(t, "trace", "platform", "--kubeconfig", rancher, "--context", "rancher", "--rancher", "--now", at, "-o", "json", "-q")
	if viaRancher := parseTraceView(t, "--rancher", rOut, rErr); rCode != offCode || !reflect.DeepEqual(viaRancher, off) {
		t.Errorf("trace through Rancher (exit %d) differs from offline (exit %d):\nrancher: %+v\noffline: %+v\n%s", rCode, offCode, viaRancher, off, rErr)
	}
	if tokenSecret.MatchString(rOut + rErr) {
		t.Error("the trace through Rancher prints the token's secret")
	}
}

// rancherStandInFor serves env's API server as Rancher's "local" cluster behind the stand-in
// and returns a kubeconfig whose "rancher" context reaches it with a token allowed to see it.
func rancherStandInFor(t *testing.T, env *testenv.Env) string {
	t.Helper()
	const token = "token-trace:RANCHER-CANARY-trace-4b1d"
	h, err := testenv.LogProxy(env.Config, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	standIn := testenv.NewRancherStandIn()
	t.Cleanup(standIn.Close)
	standIn.AddCluster("local", h)
	standIn.Allow(token, "local")
	if err := testenv.InstallCRDs(t.Context(), env.Config, testenv.RancherManagementClusterCRD()); err != nil {
		t.Fatal(err)
	}
	mgmt := dynamic.NewForConfigOrDie(env.Config).Resource(schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "clusters"})
	local := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "management.cattle.io/v3", "kind": "Cluster",
		"metadata": map[string]any{"name": "local"}, "spec": map[string]any{"displayName": "local"},
	}}
	if _, err := mgmt.Create(t.Context(), local, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f := &rancherFleet{standIn: standIn}
	return f.kubeconfig(t, token)
}
