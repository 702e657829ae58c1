package check

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// stsSnapshot is a cluster "edge" whose node edge-w2 stopped posting status at 08:00 (Ready
// Unknown, tainted unreachable by the node lifecycle controller) and a StatefulSet in
// cattle-monitoring-system whose update (revision -7c9d) replaced pod 2 on edge-w1 and waits for
// pod 1, at the old revision on edge-w2, not Ready since the node went down. up says whether the
// node came back (Ready True, no taint, pod 1 Ready).
func stsSnapshot(t *testing.T, up bool) *snapshot.Snapshot {
	t.Helper()
	b := snapshot.NewBuilder()
	b.DeclareCluster(snapshot.ClusterInfo{Name: "edge", Role: snapshot.Downstream})
	add := func(doc string) {
		var h snapshot.Header
		if err := json.Unmarshal([]byte(doc), &h); err != nil {
			t.Fatal(err)
		}
		if err := b.AddJSON("edge", "test", &h, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	ready, taints, podReady := `"Unknown","reason":"NodeStatusUnknown","message":"Kubelet stopped posting node status."`,
		`[{"key":"node.kubernetes.io/unreachable","effect":"NoExecute","timeAdded":"2026-11-28T08:00:40Z"},{"key":"node.kubernetes.io/unreachable","effect":"NoSchedule","timeAdded":"2026-11-28T08:00:40Z"}]`,
		`"False"`
	if up {
		ready, taints, podReady = `"True","reason":"KubeletReady","message":"kubelet is posting ready status"`, `[]`, `"True"`
	}
	add(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-w1"},"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastTransitionTime":"2026-11-01T00:00:00Z"}]}}`)
	add(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-w2"},"spec":{"taints":` + taints + `},"status":{"conditions":[{"type":"Ready","status":` + ready + `,"lastHeartbeatTime":"2026-11-28T07:59:50Z","lastTransitionTime":"2026-11-28T08:00:40Z"}],"nodeInfo":{"kubeletVersion":"v1.32.5+rke2r1","containerRuntimeVersion":"containerd://2.0.5-k3s1"}}}`)
	add(`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"alertmanager","namespace":"cattle-monitoring-system","generation":4},"spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate"}},"status":{"observedGeneration":4,"replicas":3,"readyReplicas":2,"currentReplicas":1,"updatedReplicas":2,"currentRevision":"alertmanager-5b8f","updateRevision":"alertmanager-7c9d"}}`)
	pod := func(name, node, rev, ready string) {
		add(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"cattle-monitoring-system","creationTimestamp":"2026-11-20T10:00:00Z","labels":{"controller-revision-hash":"` + rev + `"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"alertmanager","uid":"s1","controller":true}]},"spec":{"nodeName":"` + node + `","containers":[{"name":"alertmanager","image":"rancher/mirrored-prometheus-alertmanager:v0.28.1"}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":` + ready + `,"lastTransitionTime":"2026-11-28T08:00:45Z"}]}}`)
	}
	pod("alertmanager-0", "edge-w1", "alertmanager-7c9d", `"True"`)
	pod("alertmanager-1", "edge-w2", "alertmanager-5b8f", podReady)
	pod("alertmanager-2", "edge-w1", "alertmanager-7c9d", `"True"`)
	return b.Build()
}

// A StatefulSet rollout held by a pod on a node that is down names the node and joins its
// incident; the node is the root cause, on a cluster no Rancher provisions. Once the node is
// back, the pod at the old revision still holds the rollout, and nothing names the node.
func TestStatefulSetRolloutWaitsOnDownNode(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	for _, up := range []bool{false, true} {
		ctx := &Context{Snap: stsSnapshot(t, up), Now: now, Thresholds: NewThresholds(cat), Catalog: cat}
		incs, fs, _ := Evaluate(ctx, Filter{})
		byID := map[string]finding.Finding{}
		for _, f := range fs {
			byID[f.ID] = f
		}
		rollout, stalled := byID["workload/rollout-stalled"]
		_, nodeDown := byID["node/not-ready"]
		if up {
			if nodeDown || stalled && strings.Contains(rollout.Summary, "edge-w2") {
				t.Errorf("node back: still named: %v %q", nodeDown, rollout.Summary)
			}
			continue
		}
		if !nodeDown || !stalled {
			t.Fatalf("want node/not-ready and workload/rollout-stalled, got %v", findingIDs(fs))
		}
		if !strings.Contains(rollout.Summary, "StatefulSet cattle-monitoring-system/alertmanager") || !strings.Contains(rollout.Summary, "waiting on node edge-w2") {
			t.Errorf("rollout summary = %q", rollout.Summary)
		}
		if len(incs) != 1 || incs[0].RootCause.ID != "node/not-ready" || len(incs[0].Symptoms) != 1 {
			t.Errorf("want one incident rooted in node/not-ready with the rollout as symptom, got %d: %+v", len(incs), incs)
		}
	}
}

func findingIDs(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}
