package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/testbed"
)

// The resync rung for an agent, on the real Fleet v0.16.0 agentmanagement (issue 18). The
// downstream cluster is registered as Rancher registers the clusters it manages
// (manager-initiated: a Fleet Cluster with spec.kubeConfigSecret), the only registration for
// which Fleet acts on spec.redeployAgentGeneration. The agent's Deployment is deleted
// downstream, as a wiped cattle-fleet-system leaves it: the agent is gone, nothing on the
// downstream side can bring it back, and its heartbeat goes stale. unstick names
// fleet/agent-heartbeat-stale; fix --apply at the default --max-risk bumps
// redeployAgentGeneration; agentmanagement deploys the agent again (Deployment, ConfigMap,
// bootstrap Secret with a new registration token); the agent registers again and checks in;
// the scan is clean. KWOK stands in for the kubelets, and the test for the kubelet of the
// agent's pod: it stops the agent process when its pod goes and starts it when a pod of the
// redeployed Deployment runs.
func TestRealFleetAgentRedeploy(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	began := time.Now()
	r := startRealFleetWith(t, func(f *testbed.Fleet, down *testbed.Bed) *testbed.Agent {
		// The fleet chart's agent settings: agentmanagement needs them to render the agent.
		if err := f.ManageAgentDeployments(); err != nil {
			t.Fatal(err)
		}
		return f.Import(t, down, down.ContextName, map[string]string{"env": "real"})
	})
	ctx := t.Context()
	fc := r.fleetCluster(t)
	if fc.Spec.KubeConfigSecret == "" || fc.Status.AgentDeployedGeneration == nil {
		t.Fatalf("Fleet Cluster %s/%s was not imported by agentmanagement: spec.kubeConfigSecret %q, status.agentDeployedGeneration %v",
			fc.Namespace, fc.Name, fc.Spec.KubeConfigSecret, fc.Status.AgentDeployedGeneration)
	}
	gen := fc.Spec.RedeployAgentGeneration
	waitUntil(t, "the imported agent checks in", time.Minute, func() bool {
		c := r.fleetCluster(t)
		return c.Status.Agent.LastSeen.After(began)
	}, r.logs)
	waitUntil(t, "a pod of the fleet-agent Deployment agentmanagement applied runs", 2*time.Minute, func() bool {
		return runningAgentPod(r.agentPods(t))
	}, func() string { return podsLine(r.agentPods(t)) + "\n" + r.mgmt.Logs("fleet-agentmanagement") })
	t.Logf("agent deployed by agentmanagement (generation %d) and checked in at %s", gen, time.Since(began).Round(time.Second))

	// 1. The agent's Deployment is deleted downstream; its pod goes, and with it the agent (the
	// kubelet stand-in stops the process first, so the agent cannot put its bundle back).
	if err := r.agent.Proc.Kill(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	bg := metav1.DeletePropagationBackground
	if err := r.down.Client.AppsV1().Deployments(testbed.FleetSystemNamespace).Delete(ctx, fleetAgentDeployment, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the agent's pod is gone", time.Minute, func() bool { return len(r.agentPods(t)) == 0 }, func() string { return podsLine(r.agentPods(t)) })

	// 2. The heartbeat goes stale: fleet.heartbeatStaleAfter is lowered from 30m to 40s (the
	// agent checks in every 15s here).
	thresholds := []string{"--threshold", "fleet.heartbeatStaleAfter=40s"}
	waitUntil(t, "the agent's last check-in is older than the threshold", 2*time.Minute, func() bool {
		return time.Since(r.fleetCluster(t).Status.Agent.LastSeen.Time) > 45*time.Second
	}, r.logs)
	s, raw := r.scan(t, thresholds...)
	t.Logf("scan: root causes %v; findings %v", s.rootCauses(), s.keys())
	if !strings.Contains(strings.Join(s.rootCauses(), " "), "fleet/agent-heartbeat-stale") {
		t.Fatalf("scan does not name fleet/agent-heartbeat-stale as a root cause:\n%s", raw)
	}
	if want := fmt.Sprintf(`-n %s patch clusters.fleet.cattle.io %s --type merge -p '{\"spec\":{\"redeployAgentGeneration\":%d}}'`, fc.Namespace, fc.Name, gen+1); !strings.Contains(raw, want) {
		t.Errorf("the scan's resync step lacks %q:\n%s", want, raw)
	}
	collectRealRedeploy(t, r)

	// 3. fix --apply at the default --max-risk (low): no Deployment to restart, so the resync
	// rung runs: the bump, verified when agentmanagement reports the new generation deployed.
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := run(t, append([]string{"fix", "--kubeconfig", r.kubeconfig, "--all-contexts", "-q", "--apply", "--yes",
		"--verify-timeout", "90s", "--backup-dir", dir}, thresholds...)...)
	t.Logf("fix --apply: exit %d\n%s%s", code, out, errOut)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("verified: status.agentDeployedGeneration reaches %d", gen+1)) {
		t.Fatalf("fix --apply: exit %d, want 0 with the redeploy verified\n%s%s\n%s", code, out, errOut, r.mgmt.Logs("fleet-agentmanagement"))
	}
	if c := r.fleetCluster(t); c.Spec.RedeployAgentGeneration != gen+1 || c.Status.AgentDeployedGeneration == nil || *c.Status.AgentDeployedGeneration != gen+1 {
		t.Fatalf("after the fix spec.redeployAgentGeneration %d, status.agentDeployedGeneration %v; want both %d", c.Spec.RedeployAgentGeneration, c.Status.AgentDeployedGeneration, gen+1)
	}

	// 4. The redeployed agent: agentmanagement applied the Deployment again downstream, the
	// scheduler placed its pod and KWOK runs it; the kubelet stand-in starts the agent, which
	// registers again with the new bootstrap token and checks in.
	waitUntil(t, "a pod of the redeployed fleet-agent Deployment runs", 2*time.Minute, func() bool {
		return r.agentDeploy(t) != nil && runningAgentPod(r.agentPods(t))
	}, func() string { return podsLine(r.agentPods(t)) + "\n" + r.mgmt.Logs("fleet-agentmanagement") })
	if err := r.agent.Proc.Restart(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the redeployed agent checks in", 2*time.Minute, func() bool {
		return r.fleetCluster(t).Status.Agent.LastSeen.After(stopped)
	}, r.logs)
	time.Sleep(2 * time.Second)
	s, raw = r.scan(t, thresholds...)
	if s.has("fleet/agent-heartbeat-stale") {
		t.Errorf("scan after the redeploy still reports fleet/agent-heartbeat-stale:\n%s", raw)
	}
	t.Logf("converged at %s: findings %v", time.Since(began).Round(time.Second), s.keys())

	// 5. restore puts spec.redeployAgentGeneration back. Fleet compares the two generations for
	// equality, so agentmanagement deploys the agent once more, at the old generation: restoring
	// a redeploy is itself a redeploy (said in docs/fix.md).
	out, errOut, code = run(t, "restore", dir, "--kubeconfig", r.kubeconfig)
	t.Logf("restore: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Errorf("restore exit %d, want 0: only the controller's status moved since unstick's write", code)
	}
	if err := r.fleet.WaitAgentDeployed(ctx, fc.Name, gen, 90*time.Second); err != nil {
		t.Errorf("after restore: %v\n%s", err, r.mgmt.Logs("fleet-agentmanagement"))
	}
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

// runningAgentPod reports whether one of the fleet-agent pods runs.
func runningAgentPod(pods []corev1.Pod) bool {
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			return true
		}
	}
	return false
}

// collectRealRedeploy collects the stale agent, judged past fleet.heartbeatStaleAfter's
// default (30m).
func collectRealRedeploy(t *testing.T, r *realFleet) {
	t.Helper()
	collectRealBundle(t, r, realBundle{name: "agent-heartbeat-stale-deployment-deleted", test: "TestRealFleetAgentRedeploy", file: "realredeploy_test.go",
		after: 35 * time.Minute, root: "fleet/agent-heartbeat-stale", findings: "fleet/agent-heartbeat-stale", forbid: "pod/crashloop",
		what:        "A cluster registered as Rancher registers the clusters it manages (spec.kubeConfigSecret); its fleet-agent Deployment deleted downstream: the agent is gone and its heartbeat stale.",
		controllers: "the Fleet v0.16.0 controller, agentmanagement (which deployed the agent: manager-initiated registration) and agent"})
}
