package execute

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/remediate"
)

func objectOf(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	// As the dynamic client decodes it: whole numbers are int64.
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// The shapes system-upgrade-controller v0.20.1 gives a Plan, its nodes and its Jobs
// (pkg/upgrade/job/job.go New: the labels upgrade.cattle.io/plan, upgrade.cattle.io/node and
// plan.upgrade.cattle.io/<plan> = latestHash; handle_batch.go labels the node with the hash
// once the Job completes).
const (
	sucPlan = `
apiVersion: upgrade.cattle.io/v1
kind: Plan
metadata: {name: k3s-server, namespace: system-upgrade}
status: {latestHash: 4ee557c1f0e5c0f3a5a1d7c9e2b7a0d64f1c3e8b2a9d5f7c1e3b8a0d}
`
	sucHash = "4ee557c1f0e5c0f3a5a1d7c9e2b7a0d64f1c3e8b2a9d5f7c1e3b8a0d"
)

func sucNode(t *testing.T, label string) *unstructured.Unstructured {
	t.Helper()
	doc := "apiVersion: v1\nkind: Node\nmetadata:\n  name: prod-eu-1-server-1\n  labels:\n    kubernetes.io/hostname: prod-eu-1-server-1\n"
	if label != "" {
		doc += "    plan.upgrade.cattle.io/k3s-server: " + label + "\n"
	}
	return objectOf(t, doc)
}

func sucJob(t *testing.T, uid, created, hash, cond string) unstructured.Unstructured {
	t.Helper()
	doc := `
apiVersion: batch/v1
kind: Job
metadata:
  name: apply-k3s-server-on-prod-eu-1-server-1-with-4ee557c-0598b
  namespace: system-upgrade
  uid: ` + uid + `
  creationTimestamp: "` + created + `"
  labels:
    upgrade.cattle.io/plan: k3s-server
    upgrade.cattle.io/node: prod-eu-1-server-1
    plan.upgrade.cattle.io/k3s-server: ` + hash + `
status: {}
`
	j := objectOf(t, doc)
	switch cond {
	case "Complete":
		_ = unstructured.SetNestedSlice(j.Object, []any{map[string]any{"type": "Complete", "status": "True"}}, "status", "conditions")
	case "Failed":
		_ = unstructured.SetNestedSlice(j.Object, []any{map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}}, "status", "conditions")
	}
	return *j
}

// What a SUC step waits for after it deleted a Job, patched the image or removed a label:
// the Plan done on the node, not the write.
func TestNodeUpgradedOutcome(t *testing.T) {
	const planned, created = "1de18a77-2dce-5507-be04-e861d487d57d", "2026-12-05T07:00:00Z"
	const fresh = "5f0c2a9e-8d4b-4c1e-9a7f-3b6d2e1c0a94"
	plan := objectOf(t, sucPlan)
	cases := []struct {
		name string
		node *unstructured.Unstructured
		jobs []unstructured.Unstructured
		ok   bool
		says string
	}{
		{"label reads the latest hash", sucNode(t, sucHash), nil, true, ""},
		{"the Job since the step completed, label not yet set", sucNode(t, ""), []unstructured.Unstructured{sucJob(t, fresh, created, sucHash, "Complete")}, true, ""},
		{"only the Job the plan read, complete", sucNode(t, ""), []unstructured.Unstructured{sucJob(t, planned, "2026-11-28T07:30:00Z", sucHash, "Complete")}, false, "no new Job for it"},
		{"the new Job runs", sucNode(t, ""), []unstructured.Unstructured{sucJob(t, fresh, created, sucHash, "")}, false, "has not completed"},
		{"the new Job failed", sucNode(t, ""), []unstructured.Unstructured{sucJob(t, fresh, created, sucHash, "Failed")}, false, "failed: BackoffLimitExceeded: Job has reached the specified backoff limit"},
		{"a Job of an older hash", sucNode(t, "0ld"), []unstructured.Unstructured{sucJob(t, fresh, created, "0ld", "Complete")}, false, `label plan.upgrade.cattle.io/k3s-server is "0ld"`},
		{"the node is gone", nil, nil, false, "does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := nodeUpgraded(plan, "prod-eu-1-server-1", tc.node, newJobs(tc.jobs, []string{planned}))
			if ok != tc.ok || !strings.Contains(why, tc.says) {
				t.Errorf("got %v %q, want %v and %q", ok, why, tc.ok, tc.says)
			}
		})
	}
}

// kubectl rollout status for each workload kind a step can roll out.
func TestRolledOutByKind(t *testing.T) {
	cases := []struct {
		name, doc string
		ok        bool
		says      string
	}{
		{"Deployment done", `{kind: Deployment, metadata: {generation: 3}, spec: {replicas: 2}, status: {observedGeneration: 3, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`, true, ""},
		{"Deployment not observed", `{kind: Deployment, metadata: {generation: 4}, spec: {replicas: 2}, status: {observedGeneration: 3}}`, false, "the deployment controller has not observed generation 4"},
		{"DaemonSet waits on a NotReady node", `{kind: DaemonSet, metadata: {generation: 2}, status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 2, numberAvailable: 2}}`, false, "2 of 3 nodes run the updated pod"},
		{"DaemonSet updated, not available", `{kind: DaemonSet, metadata: {generation: 2}, status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2}}`, false, "2 of 3 updated pods available"},
		{"DaemonSet done", `{kind: DaemonSet, metadata: {generation: 2}, status: {observedGeneration: 2, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}}`, true, ""},
		{"StatefulSet mid-rollout", `{kind: StatefulSet, metadata: {generation: 5}, spec: {replicas: 3}, status: {observedGeneration: 5, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-6d9c, updateRevision: db-7f5b}}`, false, "1 of 3 replicas at update revision db-7f5b"},
		{"StatefulSet replica not ready", `{kind: StatefulSet, metadata: {generation: 5}, spec: {replicas: 3}, status: {observedGeneration: 5, readyReplicas: 2, updatedReplicas: 3, currentRevision: db-7f5b, updateRevision: db-7f5b}}`, false, "2 of 3 replicas ready"},
		{"StatefulSet done", `{kind: StatefulSet, metadata: {generation: 5}, spec: {replicas: 3}, status: {observedGeneration: 5, readyReplicas: 3, updatedReplicas: 3, currentRevision: db-7f5b, updateRevision: db-7f5b}}`, true, ""},
		{"StatefulSet partitioned", `{kind: StatefulSet, metadata: {generation: 5}, spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}}, status: {observedGeneration: 5, readyReplicas: 3, updatedReplicas: 1, currentRevision: db-6d9c, updateRevision: db-7f5b}}`, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := rolledOut(objectOf(t, tc.doc))
			if ok != tc.ok || !strings.Contains(why, tc.says) {
				t.Errorf("got %v %q, want %v and %q", ok, why, tc.ok, tc.says)
			}
		})
	}
}

// A pending revision marked failed only lets the next install or upgrade through: the step's
// outcome is that newer revision deployed.
func TestMarkedThenDeployed(t *testing.T) {
	rel := func(v int, s release.Status) *release.Release {
		return &release.Release{Name: "shop", Namespace: "shop", Version: v, Info: &release.Info{Status: s}}
	}
	h := &remediate.HelmChange{Release: "shop", Namespace: "shop", Current: 1}
	cases := []struct {
		name      string
		cur, last *release.Release
		in, ok    bool
		says      string
	}{
		{"not marked yet", rel(1, release.StatusPendingInstall), rel(1, release.StatusPendingInstall), false, false, "revision 1 is pending-install"},
		{"marked, nothing since", rel(1, release.StatusFailed), rel(1, release.StatusFailed), true, false, "no install or upgrade has deployed the release since"},
		{"marked, the next upgrade failed", rel(1, release.StatusFailed), rel(2, release.StatusFailed), true, false, "the newest revision 2 is failed, not deployed"},
		{"marked, then deployed", rel(1, release.StatusFailed), rel(2, release.StatusDeployed), true, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, ok, why, err := markedThenDeployed(h, tc.cur, tc.last)
			if err != nil || in != tc.in || ok != tc.ok || !strings.Contains(why, tc.says) {
				t.Errorf("got %v %v %q %v, want %v %v and %q", in, ok, why, err, tc.in, tc.ok, tc.says)
			}
		})
	}
}
