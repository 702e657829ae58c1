package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// A cluster-info dump: a typed PodList whose items carry no apiVersion or kind, an empty
// DaemonSetList with items null, and a logs.txt with two containers' logs (the second cut
// off before its END marker) and one kubectl could not read.
func TestOfflineReadsAClusterInfoDump(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cattle-fleet-system/pods.json", `{
    "kind": "PodList",
    "apiVersion": "v1",
    "metadata": {"resourceVersion": "409"},
    "items": [
        {"metadata": {"name": "fleet-agent-0", "namespace": "cattle-fleet-system"},
         "spec": {"containers": [{"name": "fleet-agent", "image": "rancher/fleet-agent:v0.13.1"}]}}
    ]
}`)
	write("cattle-fleet-system/daemonsets.json", `{"kind": "DaemonSetList", "apiVersion": "apps/v1", "metadata": {"resourceVersion": "409"}, "items": null}`)
	write("cattle-fleet-system/fleet-agent-0/logs.txt", strings.Join([]string{
		"==== START logs for container init of pod cattle-fleet-system/fleet-agent-0 ====",
		"Request log error: container \"init\" in pod \"fleet-agent-0\" is waiting to start: PodInitializing",
		"==== END logs for container init of pod cattle-fleet-system/fleet-agent-0 ====",
		"==== START logs for container fleet-agent of pod cattle-fleet-system/fleet-agent-0 ====",
		`time="2026-11-28T09:25:03Z" level=info msg="Starting agent"`,
		"==== END logs for container fleet-agent of pod cattle-fleet-system/fleet-agent-0 ====",
		"==== START logs for container sidecar of pod cattle-fleet-system/fleet-agent-0 ====",
		"sidecar line 1",
		"sidecar line 2",
	}, "\n")+"\n")

	snap, err := (&Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Clusters) != 1 {
		t.Fatalf("%d clusters, want the dump's one", len(snap.Clusters))
	}
	c := snap.Clusters[0]
	if len(c.Pods) != 1 || c.Pods[0].Name != "fleet-agent-0" {
		t.Errorf("pods %v, want the PodList's item read as a Pod", c.Pods)
	}
	if len(snap.Errors) > 0 {
		t.Errorf("errors: %+v", snap.Errors)
	}
	for _, s := range snap.Skipped {
		if !strings.Contains(s.Reason, `no log of container init of pod cattle-fleet-system/fleet-agent-0: kubectl could not read it (Request log error: container "init"`) {
			t.Errorf("skipped %s: %s", s.File, s.Reason)
		}
	}
	if len(snap.Skipped) != 1 {
		t.Errorf("skipped %+v, want the one log kubectl could not read", snap.Skipped)
	}
	want := map[string]string{"fleet-agent": `level=info msg="Starting agent"`, "sidecar": "sidecar line 2"}
	for container, line := range want {
		l := c.Logs[snapshot.LogKey("cattle-fleet-system", "fleet-agent-0", container)]
		if l == nil || !strings.Contains(strings.Join(l.Current, "\n"), line) {
			t.Errorf("log of %s: %+v, want a line %q", container, l, line)
		}
	}
	if l := c.Logs[snapshot.LogKey("cattle-fleet-system", "fleet-agent-0", "init")]; l != nil {
		t.Errorf("kubectl's error was read as the init container's log: %+v", l)
	}
}
