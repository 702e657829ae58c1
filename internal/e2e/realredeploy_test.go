package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/testbed"
)

// The restart and resync rungs for an agent, on the real Fleet v0.16.0 agentmanagement and the
// real Deployment controller (issue 18). The downstream cluster is registered as Rancher
// registers the clusters it manages (manager-initiated: a Fleet Cluster with
// spec.kubeConfigSecret), the only registration for which Fleet acts on
// spec.redeployAgentGeneration. First the agent wedges (its process stops, its pod runs): the
// heartbeat goes stale, fix's restart rung rolls the Deployment and the agent checks in from
// the new pod. Then the agent's Deployment is deleted downstream, as a wiped
// cattle-fleet-system leaves it: nothing on the downstream side can bring the agent back.
// unstick names fleet/agent-heartbeat-stale; fix --apply at the default --max-risk bumps
// redeployAgentGeneration; agentmanagement deploys the agent again (Deployment, ConfigMap,
// bootstrap Secret with a new registration token); the agent registers again and checks in;
// the scan is clean. KWOK stands in for the kubelets, and the test for the kubelet of the
// agent's pod: it stops the agent process when its pod goes and starts it when a new pod runs.
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

	agentSettled(t, r)
	kubelet := startAgentKubelet(t, r)

	// The heartbeat goes stale: fleet.heartbeatStaleAfter is lowered from 30m to 40s (the agent
	// checks in every 15s here).
	thresholds := []string{"--threshold", "fleet.heartbeatStaleAfter=40s"}
	staleScan := func(what string) (scanResult, string) {
		t.Helper()
		waitUntil(t, "the agent's last check-in is older than the threshold", 2*time.Minute, func() bool {
			return time.Since(r.fleetCluster(t).Status.Agent.LastSeen.Time) > 45*time.Second
		}, r.logs)
		s, raw := r.scan(t, thresholds...)
		t.Logf("scan (%s): root causes %v; findings %v", what, s.rootCauses(), s.keys())
		if !strings.Contains(strings.Join(s.rootCauses(), " "), "fleet/agent-heartbeat-stale") {
			t.Fatalf("scan (%s) does not name fleet/agent-heartbeat-stale as a root cause:\n%s\n%s", what, raw, kubelet.events())
		}
		return s, raw
	}
	fixArgs := append([]string{"fix", "--kubeconfig", r.kubeconfig, "--all-contexts", "-q", "--apply", "--yes", "--verify-timeout", "75s"}, thresholds...)

	// 0. A wedged agent: the process stops while its pod keeps running (KWOK keeps the pod
	// Running, as a kubelet does a container whose process hangs). The resync rung comes
	// first: agentmanagement deletes the agent's objects downstream and applies them again,
	// which replaces the pod; the kubelet stand-in starts the agent in the new one, the agent
	// registers again with the new bootstrap Secret and checks in, and the step verifies.
	kubelet.wedge()
	staleScan("agent wedged, pod running")
	restartDir := filepath.Join(t.TempDir(), "backup-wedged")
	out, errOut, code := run(t, append(fixArgs, "--backup-dir", restartDir)...)
	t.Logf("fix --apply (wedged agent): exit %d\n%s%s", code, out, errOut)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("verified: status.agentDeployedGeneration reaches %d: the controller redeployed the agent; and the agent of Fleet Cluster %s/%s checks in", gen+1, fc.Namespace, fc.Name)) {
		t.Fatalf("fix --apply on the wedged agent: exit %d, want 0 with the redeploy verified by the agent's check-in\n%s%s\n%s", code, out, errOut, kubelet.events())
	}
	if s, raw := r.scan(t, thresholds...); s.has("fleet/agent-heartbeat-stale") {
		t.Errorf("scan after the redeploy still reports fleet/agent-heartbeat-stale:\n%s", raw)
	}
	t.Logf("redeploy verified at %s (the agent checked in from the new pod); %s", time.Since(began).Round(time.Second), kubelet.events())

	// restore puts spec.redeployAgentGeneration back. Fleet compares the two generations for
	// equality, so agentmanagement deploys the agent once more, at the old generation:
	// restoring a redeploy is itself a redeploy (said in docs/fix.md). The agent comes back.
	restored := time.Now()
	out, errOut, code = run(t, "restore", restartDir, "--kubeconfig", r.kubeconfig)
	t.Logf("restore: exit %d\n%s%s", code, out, errOut)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("spec.redeployAgentGeneration back to %d: Fleet redeploys the agent once more", gen)) {
		t.Errorf("restore exit %d, want 0 and the redeploy it causes said: only the controllers' status moved since unstick's writes", code)
	}
	if err := r.fleet.WaitAgentDeployed(ctx, fc.Name, gen, 90*time.Second); err != nil {
		t.Errorf("after restore: %v\n%s", err, r.mgmt.Logs("fleet-agentmanagement"))
	}
	waitUntil(t, "the agent checks in after the restore", 2*time.Minute, func() bool {
		return r.fleetCluster(t).Status.Agent.LastSeen.After(restored)
	}, func() string { return kubelet.events() + "\n" + r.logs() })

	// 1. The agent's Deployment is deleted downstream; its pod goes, and the kubelet stand-in
	// stops the agent with it.
	bg := metav1.DeletePropagationBackground
	if err := r.down.Client.AppsV1().Deployments(testbed.FleetSystemNamespace).Delete(ctx, fleetAgentDeployment, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the agent's pod is gone", time.Minute, func() bool { return len(r.agentPods(t)) == 0 }, func() string { return podsLine(r.agentPods(t)) })

	// 2. The heartbeat goes stale; with no Deployment there is nothing to restart.
	s, raw := staleScan("agent Deployment deleted")
	if want := fmt.Sprintf(`-n %s patch clusters.fleet.cattle.io %s --type merge -p '{\"spec\":{\"redeployAgentGeneration\":%d}}'`, fc.Namespace, fc.Name, gen+1); !strings.Contains(raw, want) {
		t.Errorf("the scan's resync step lacks %q:\n%s", want, raw)
	}
	collectRealRedeploy(t, r)

	// 3. fix --apply at the default --max-risk (low): the resync rung. agentmanagement deploys
	// the agent again (the Deployment, its ConfigMap and a bootstrap Secret with a new
	// registration token); the scheduler places its pod, KWOK runs it, the kubelet stand-in
	// starts the agent, which registers again and checks in: the step verifies.
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code = run(t, append(fixArgs, "--backup-dir", dir)...)
	t.Logf("fix --apply: exit %d\n%s%s", code, out, errOut)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("verified: status.agentDeployedGeneration reaches %d", gen+1)) {
		t.Fatalf("fix --apply: exit %d, want 0 with the redeploy verified\n%s%s\n%s\n%s", code, out, errOut, kubelet.events(), r.mgmt.Logs("fleet-agentmanagement"))
	}
	if c := r.fleetCluster(t); c.Spec.RedeployAgentGeneration != gen+1 || c.Status.AgentDeployedGeneration == nil || *c.Status.AgentDeployedGeneration != gen+1 {
		t.Fatalf("after the fix spec.redeployAgentGeneration %d, status.agentDeployedGeneration %v; want both %d", c.Spec.RedeployAgentGeneration, c.Status.AgentDeployedGeneration, gen+1)
	}
	s, raw = r.scan(t, thresholds...)
	if s.has("fleet/agent-heartbeat-stale") {
		t.Errorf("scan after the redeploy still reports fleet/agent-heartbeat-stale:\n%s", raw)
	}
	t.Logf("converged at %s: findings %v", time.Since(began).Round(time.Second), s.keys())
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

// The restart rung, on the real Deployment controller and the real Fleet v0.16.0 agent (issue
// 18). The downstream cluster registered itself (agent-initiated, no spec.kubeConfigSecret):
// Fleet ignores redeployAgentGeneration for it, so unstick offers no redeploy and says why,
// and the restart rung is the first. The agent wedges (process stopped, pod running); fix
// rolls the Deployment Fleet's agent bundle made; the kubelet stand-in starts the agent in
// the new pod; the step verifies on the agent's check-in; the scan is clean; restore takes
// the restartedAt annotation back off the template (itself a rollout).
func TestRealFleetAgentRestart(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	began := time.Now()
	r := startRealFleet(t)
	// The fleet chart's agent settings, so agentmanagement renders the agent bundle and the
	// agent applies it: the fleet-agent Deployment downstream, its pod run by KWOK.
	if err := r.fleet.ManageAgentDeployments(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a pod of the fleet-agent Deployment Fleet manages runs", 2*time.Minute, func() bool {
		return runningAgentPod(r.agentPods(t))
	}, func() string {
		return podsLine(r.agentPods(t)) + "\n" + r.logs() + "\n" + r.mgmt.Logs("fleet-agentmanagement")
	})
	fc := r.fleetCluster(t)
	if fc.Spec.KubeConfigSecret != "" {
		t.Fatalf("Fleet Cluster %s/%s has spec.kubeConfigSecret %q: not an agent-initiated registration", fc.Namespace, fc.Name, fc.Spec.KubeConfigSecret)
	}
	waitUntil(t, "the agent checks in", time.Minute, func() bool {
		return r.fleetCluster(t).Status.Agent.LastSeen.After(began)
	}, r.logs)
	agentSettled(t, r)
	kubelet := startAgentKubelet(t, r)
	thresholds := []string{"--threshold", "fleet.heartbeatStaleAfter=40s"}

	kubelet.wedge()
	waitUntil(t, "the agent's last check-in is older than the threshold", 2*time.Minute, func() bool {
		return time.Since(r.fleetCluster(t).Status.Agent.LastSeen.Time) > 45*time.Second
	}, r.logs)
	s, raw := r.scan(t, thresholds...)
	t.Logf("scan: root causes %v; findings %v", s.rootCauses(), s.keys())
	if !strings.Contains(strings.Join(s.rootCauses(), " "), "fleet/agent-heartbeat-stale") {
		t.Fatalf("scan does not name fleet/agent-heartbeat-stale as a root cause:\n%s\n%s", raw, kubelet.events())
	}
	if strings.Contains(raw, "redeployAgentGeneration\\\":") || !strings.Contains(raw, "was registered by its agent (no spec.kubeConfigSecret)") {
		t.Errorf("scan offers a redeploy Fleet would ignore, or does not say why it offers none:\n%s", raw)
	}

	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := run(t, append([]string{"fix", "--kubeconfig", r.kubeconfig, "--all-contexts", "-q", "--apply", "--yes", "--verify-timeout", "90s",
		"--backup-dir", dir}, thresholds...)...)
	t.Logf("fix --apply: exit %d\n%s%s", code, out, errOut)
	if code != 0 || strings.Contains(out, "redeployAgentGeneration") ||
		!strings.Contains(out, fmt.Sprintf("verified: the rollout completes: status.observedGeneration catches up and every replica is updated and available; and the agent of Fleet Cluster %s/%s checks in", fc.Namespace, fc.Name)) {
		t.Fatalf("fix --apply: exit %d, want 0 with the restart verified by the agent's check-in and no redeploy\n%s%s\n%s", code, out, errOut, kubelet.events())
	}
	if s, raw := r.scan(t, thresholds...); s.has("fleet/agent-heartbeat-stale") {
		t.Errorf("scan after the restart still reports fleet/agent-heartbeat-stale:\n%s", raw)
	}
	t.Logf("restart verified at %s; %s", time.Since(began).Round(time.Second), kubelet.events())

	out, errOut, code = run(t, "restore", dir, "--kubeconfig", r.kubeconfig)
	t.Logf("restore: exit %d\n%s%s", code, out, errOut)
	if code != 0 || !strings.Contains(out, "the pod template is changed back, so the Deployment rolls out once more") {
		t.Errorf("restore exit %d, want 0 and the rollout it causes said: only the Deployment controller's status moved since unstick's write", code)
	}
	if d := r.agentDeploy(t); d == nil || d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "" {
		t.Errorf("after restore the Deployment's template still carries restartedAt (or is gone)")
	}
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

// agentSettled waits until the agent has applied its own bundle (the fleet-agent-<cluster>
// BundleDeployment Ready) and the fleet-agent Deployment's rollout is complete: no further
// rollout is coming that would give the agent a new pod (and the kubelet stand-in a reason to
// start it) while a test keeps it wedged.
func agentSettled(t *testing.T, r *realFleet) {
	t.Helper()
	waitUntil(t, "the agent's own bundle Ready and its Deployment rolled out", 3*time.Minute, func() bool {
		var l fleetv1.BundleDeploymentList
		if err := r.fleet.Client.List(t.Context(), &l); err != nil {
			return false
		}
		ready := false
		for i := range l.Items {
			if strings.HasPrefix(l.Items[i].Labels["fleet.cattle.io/bundle-name"], "fleet-agent-") {
				ready = bdReady(&l.Items[i])
			}
		}
		d := r.agentDeploy(t)
		if !ready || d == nil || len(d.Spec.Template.Spec.Containers) == 0 {
			return false
		}
		return rolledOut(d, r.agentPods(t), d.Spec.Template.Spec.Containers[0].Image)
	}, func() string { return podsLine(r.agentPods(t)) + "\n" + r.fleetState(t) })
}

// agentKubelet is the kubelet of the agent's pod, as a test stand-in: while a fleet-agent pod
// runs, the agent process runs; when a new pod starts running (a rollout, a Deployment
// created again) the process starts again in it; when no pod runs it is killed. wedge kills
// the process but leaves the pod running, as a hung container is.
type agentKubelet struct {
	proc *testbed.Proc
	mu   sync.Mutex
	log  []string
}

func startAgentKubelet(t *testing.T, r *realFleet) *agentKubelet {
	k := &agentKubelet{}
	cur := ""
	for _, p := range r.agentPods(t) {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			cur = p.Name // the process already runs for it
		}
	}
	ctx := t.Context()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			l, err := r.down.Client.CoreV1().Pods(testbed.FleetSystemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=fleet-agent"})
			if err == nil {
				running := ""
				for _, p := range l.Items {
					if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
						running = p.Name
					}
				}
				switch {
				case running == "" && cur != "":
					_ = r.agent.Proc.Kill()
					k.say("no agent pod runs: agent stopped")
					cur = ""
				case running != "" && running != cur:
					_ = r.agent.Proc.Restart()
					k.say("pod " + running + " runs: agent started")
					cur = running
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { <-done })
	k.proc = r.agent.Proc
	return k
}

func (k *agentKubelet) say(s string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.log = append(k.log, time.Now().UTC().Format(time.TimeOnly)+" "+s)
}

func (k *agentKubelet) wedge() {
	_ = k.proc.Kill()
	k.say("agent wedged: process stopped, pod left running")
}

func (k *agentKubelet) events() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return "kubelet stand-in:\n  " + strings.Join(k.log, "\n  ")
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
