package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/unstick-dev/unstick/internal/testbed"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// The fleet-agent Deployment downstream is the one Fleet itself manages: agentmanagement renders
// it into the fleet-agent-<cluster> Bundle (its agent manifest: image, tolerations from the
// Cluster's spec.agentTolerations, resources from spec.agentResources) and the real agent
// applies that bundle with Helm on the downstream bed. The agent process itself runs outside
// the bed (testbed.Register); the Deployment's pods are placed by the real kube-scheduler and
// run by KWOK, the stand-in for the kubelets.
const fleetAgentDeployment = "fleet-agent"

// agentDeploy is the downstream fleet-agent Deployment, nil until the agent applied its bundle.
func (r *realFleet) agentDeploy(t *testing.T) *appsv1.Deployment {
	d, err := r.down.Client.AppsV1().Deployments(testbed.FleetSystemNamespace).Get(t.Context(), fleetAgentDeployment, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return d
}

// agentPods are the downstream fleet-agent Deployment's pods.
func (r *realFleet) agentPods(t *testing.T) []corev1.Pod {
	l, err := r.down.Client.CoreV1().Pods(testbed.FleetSystemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app=fleet-agent"})
	if err != nil {
		return nil
	}
	return l.Items
}

func podsLine(ps []corev1.Pod) string {
	var out []string
	for _, p := range ps {
		img := ""
		if len(p.Spec.Containers) > 0 {
			img = p.Spec.Containers[0].Image
		}
		out = append(out, fmt.Sprintf("%s %s node=%q %s", p.Name, p.Status.Phase, p.Spec.NodeName, img))
	}
	return strings.Join(out, "; ")
}

// rolledOut is true when the Deployment's rollout is complete with every pod on image.
func rolledOut(d *appsv1.Deployment, pods []corev1.Pod, image string) bool {
	if d == nil || d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != *d.Spec.Replicas ||
		d.Status.AvailableReplicas != *d.Spec.Replicas || d.Status.Replicas != *d.Spec.Replicas {
		return false
	}
	running := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase != corev1.PodRunning || p.Spec.Containers[0].Image != image {
			return false
		}
		running++
	}
	return running == int(*d.Spec.Replicas)
}

// upgradeAgentImage is what a Rancher/Fleet upgrade does to the agent: the fleet chart's
// ConfigMap names a new agentImage and the fleet-controller pod restarts with it (here the
// agentmanagement process), which renders every cluster's fleet-agent bundle anew.
func (r *realFleet) upgradeAgentImage(t *testing.T, image string) {
	t.Helper()
	ctx := t.Context()
	cms := r.mgmt.Client.CoreV1().ConfigMaps(testbed.FleetSystemNamespace)
	cm, err := cms.Get(ctx, "fleet-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(cm.Data["config"]), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["agentImage"] = image
	b, _ := json.Marshal(cfg)
	cm.Data["config"] = string(b)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.fleet.AgentManagement.Restart(); err != nil {
		t.Fatal(err)
	}
}

// fleetState lists Fleet's bundles and BundleDeployments, for a failing test's message.
func (r *realFleet) fleetState(t *testing.T) string {
	var b strings.Builder
	var bl fleetv1.BundleList
	_ = r.fleet.Client.List(t.Context(), &bl)
	for _, x := range bl.Items {
		fmt.Fprintf(&b, "bundle %s/%s summary %+v\n", x.Namespace, x.Name, x.Status.Summary)
	}
	var bdl fleetv1.BundleDeploymentList
	_ = r.fleet.Client.List(t.Context(), &bdl)
	for _, x := range bdl.Items {
		fmt.Fprintf(&b, "bd %s/%s deploymentID %s applied %s ready %v nonReady %+v conds %+v\n", x.Namespace, x.Name, x.Spec.DeploymentID, x.Status.AppliedDeploymentID, x.Status.Ready, x.Status.NonReadyStatus, x.Status.Conditions)
	}
	ds, _ := r.down.Client.AppsV1().Deployments("").List(t.Context(), metav1.ListOptions{})
	for _, d := range ds.Items {
		fmt.Fprintf(&b, "downstream deployment %s/%s\n", d.Namespace, d.Name)
	}
	return b.String()
}

// fleetCluster is the registered downstream cluster's Fleet Cluster.
func (r *realFleet) fleetCluster(t *testing.T) *fleetv1.Cluster {
	t.Helper()
	var c fleetv1.Cluster
	if err := r.fleet.Client.Get(t.Context(), types.NamespacedName{Namespace: r.agent.ClusterNamespace, Name: r.agent.ClusterName}, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// A fleet-agent upgrade whose new pod the real kube-scheduler cannot place while the old pod
// keeps running (issue 18), both ways: every node tainted, then the agent's requests beyond
// every node's free capacity. The real Fleet v0.16.0 controller, agentmanagement and agent,
// the real kube-scheduler and kube-controller-manager v1.37; KWOK stands in for the kubelets.
func TestRealSchedulerAgentPodUnschedulable(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	began := time.Now()
	r := startRealFleet(t)
	ctx := t.Context()
	kubectl, err := testenv.Kubectl(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The fleet chart's agent settings, so agentmanagement renders the agent bundle.
	if err := r.fleet.ManageAgentDeployments(); err != nil {
		t.Fatal(err)
	}

	// 1. Fleet's agentmanagement renders the fleet-agent bundle; the real agent applies it: the
	// fleet-agent Deployment downstream, its pod placed by the scheduler and run by KWOK.
	oldImage := ""
	waitUntil(t, "the fleet-agent Deployment Fleet manages rolled out downstream", 100*time.Second, func() bool {
		d := r.agentDeploy(t)
		if d == nil {
			return false
		}
		oldImage = d.Spec.Template.Spec.Containers[0].Image
		return rolledOut(d, r.agentPods(t), oldImage)
	}, func() string { return r.fleetState(t) + r.logs() + "\n" + r.mgmt.Logs("fleet-agentmanagement") })
	oldPods := r.agentPods(t)
	t.Logf("fleet-agent %s running at %s: %s", oldImage, time.Since(began).Round(time.Second), podsLine(oldPods))

	// 2. The node pool changes: every node gets a NoSchedule taint (the running pod stays).
	taint := corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}
	nodes, err := r.down.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		// KWOK writes every node's status on a heartbeat, so re-read on a 409.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := r.down.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Taints = append(cur.Spec.Taints, taint)
			_, err = r.down.Client.CoreV1().Nodes().Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// 3. Fleet is upgraded: a new agent image. The new ReplicaSet's pod stays Pending with the
	// scheduler's message; the old pod keeps running.
	newImage := "rancher/fleet-agent:v0.16.1"
	r.upgradeAgentImage(t, newImage)
	var pending corev1.Pod
	waitUntil(t, "the new agent pod Pending as unschedulable", 3*time.Minute, func() bool {
		for _, p := range r.agentPods(t) {
			if p.Spec.Containers[0].Image != newImage || p.Status.Phase != corev1.PodPending {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					pending = p
					return true
				}
			}
		}
		return false
	}, func() string {
		return podsLine(r.agentPods(t)) + "\n" + r.logs() + "\n" + r.mgmt.Logs("fleet-agentmanagement")
	})
	schedMsg := ""
	for _, c := range pending.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			schedMsg = c.Message
		}
	}
	t.Logf("the real scheduler on %s: %q", pending.Name, schedMsg)
	// kube-scheduler v1.37 names no taint in its message ("1 node(s) had untolerated
	// taint(s)"); the taint is on the nodes.
	if !strings.Contains(schedMsg, "untolerated taint") {
		t.Errorf("scheduler message %q lacks the untolerated taint", schedMsg)
	}
	for _, p := range oldPods {
		cur, err := r.down.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || cur.Status.Phase != corev1.PodRunning {
			t.Errorf("the old agent pod %s does not keep running: %v", p.Name, err)
		}
	}
	evs, _ := r.down.Client.CoreV1().Events(pending.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pending.Name})
	for _, e := range evs.Items {
		t.Logf("event %s %s (%s): %q", e.Type, e.Reason, e.ReportingController, e.Message)
	}

	// 4. unstick scan names the taint as the root cause with the scheduler's message; the
	// pods are seconds old, so pod.pendingAfter and the rollout/agent gauges are lowered.
	thresholds := []string{"--threshold", "pod.pendingAfter=1s", "--threshold", "workload.rolloutStalledAfter=1s", "--threshold", "fleet.agentUpgradeStuckAfter=1s"}
	time.Sleep(2 * time.Second)
	s, raw := r.scan(t, thresholds...)
	t.Logf("scan: root causes %v; findings %v", s.rootCauses(), s.keys())
	if !s.has("pod/unschedulable-taints") || !strings.Contains(strings.Join(s.rootCauses(), " "), "pod/unschedulable-taints") {
		t.Fatalf("scan does not name pod/unschedulable-taints as a root cause:\n%s", raw)
	}
	for _, want := range []string{schedMsg, "dedicated=infra:NoSchedule"} {
		if !strings.Contains(raw, want) {
			t.Errorf("the evidence lacks %q:\n%s", want, raw)
		}
	}
	if s.has("pod/unschedulable-resources") {
		t.Errorf("scan also reports pod/unschedulable-resources:\n%s", raw)
	}
	collectRealSched(t, r, "agent-pod-unschedulable-taints", "pod/unschedulable-taints", "workload/rollout-stalled, fleet/agent-upgrade-stuck", "pod/unschedulable-resources",
		"The fleet-agent Deployment Fleet manages is upgraded to a new image after every node got the NoSchedule taint "+taint.ToString()+
			": the new pod stays Pending with the scheduler's message while the old one keeps running.")

	// 5. fix --apply at the default max-risk: the taint's fix is guided; unstick writes nothing
	// for it (or only observes).
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := run(t, append([]string{"fix", "--kubeconfig", r.kubeconfig, "--all-contexts", "-q", "--apply", "--yes", "--verify-timeout", "15s", "--backup-dir", dir}, thresholds...)...)
	t.Logf("fix --apply (max-risk low): exit %d\n%s%s", code, out, errOut)
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		out, errOut, code := run(t, "restore", dir, "--kubeconfig", r.kubeconfig)
		t.Logf("fix wrote backups %v; restore: exit %d\n%s%s", names(ents), code, out, errOut)
	}

	// 6. The guided command unstick prints, run as printed with kubectl against the bed.
	jout, _, _ := run(t, append([]string{"scan", "--kubeconfig", r.kubeconfig, "--all-contexts", "-o", "json", "-q"}, thresholds...)...)
	cmd := guidedCommand(t, jout, "agentTolerations")
	t.Logf("the guided step unstick prints: %s", cmd)
	sh := exec.CommandContext(ctx, "bash", "-c", cmd)
	sh.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig, "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"))
	if b, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the printed command failed: %v\n%s", err, b)
	} else {
		t.Logf("kubectl: %s", strings.TrimSpace(string(b)))
	}
	t.Logf("Fleet Cluster spec.agentTolerations now %+v", r.fleetCluster(t).Spec.AgentTolerations)

	// 7. The real controllers converge: agentmanagement renders the toleration into the agent
	// bundle, the agent applies it, the scheduler places the new pod, the rollout completes.
	waitUntil(t, "the agent rollout completes with the toleration", 3*time.Minute, func() bool {
		d := r.agentDeploy(t)
		return rolledOut(d, r.agentPods(t), newImage)
	}, func() string {
		return podsLine(r.agentPods(t)) + "\n" + r.logs() + "\n" + r.mgmt.Logs("fleet-agentmanagement")
	})
	d := r.agentDeploy(t)
	t.Logf("converged at %s: tolerations %+v; pods %s", time.Since(began).Round(time.Second), d.Spec.Template.Spec.Tolerations, podsLine(r.agentPods(t)))
	// The old pod goes (KWOK plays its kubelet's stop) and the agent reports its bundle Ready.
	waitUntil(t, "the old agent pod gone and the agent bundle's BundleDeployment Ready", 3*time.Minute, func() bool {
		for _, p := range r.agentPods(t) {
			if p.Spec.Containers[0].Image != newImage {
				return false
			}
		}
		var l fleetv1.BundleDeploymentList
		if err := r.fleet.Client.List(ctx, &l, client.MatchingLabels{"fleet.cattle.io/bundle-name": "fleet-agent-" + r.agent.ClusterName}); err != nil || len(l.Items) == 0 {
			return false
		}
		return bdReady(&l.Items[0])
	}, func() string { return podsLine(r.agentPods(t)) + "\n" + r.fleetState(t) })
	s, raw = r.scan(t, thresholds...)
	for _, id := range []string{"pod/unschedulable-taints", "workload/rollout-stalled", "fleet/agent-upgrade-stuck"} {
		if s.has(id) {
			t.Errorf("scan after convergence still reports %s:\n%s", id, raw)
		}
	}
	t.Logf("taints: wall time %s", time.Since(began).Round(time.Second))

	// 8. The other way the scheduler refuses the new agent pod: its requests raised past every
	// node's free capacity (the Fleet Cluster's agentResources, which Rancher's agent
	// customisation sets). The new pod stays Pending with "Insufficient cpu" while the old
	// one keeps running; unstick names pod/unschedulable-resources, not the taints.
	before := r.agentPods(t)
	fc := r.fleetCluster(t)
	raise := []byte(`{"spec":{"agentResources":{"requests":{"cpu":"64","memory":"1Gi"}}}}`)
	if err := r.fleet.Client.Patch(ctx, fc, client.RawPatch(types.MergePatchType, raise)); err != nil {
		t.Fatal(err)
	}
	var starved corev1.Pod
	waitUntil(t, "the agent pod requesting 64 CPUs Pending as unschedulable", 3*time.Minute, func() bool {
		for _, p := range r.agentPods(t) {
			if p.Spec.Containers[0].Resources.Requests.Cpu().String() != "64" || p.Status.Phase != corev1.PodPending {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					starved = p
					return true
				}
			}
		}
		return false
	}, func() string {
		return podsLine(r.agentPods(t)) + "\n" + r.logs() + "\n" + r.mgmt.Logs("fleet-agentmanagement")
	})
	schedMsg = ""
	for _, c := range starved.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			schedMsg = c.Message
		}
	}
	t.Logf("the real scheduler on %s: %q", starved.Name, schedMsg)
	if !strings.Contains(schedMsg, "Insufficient cpu") {
		t.Errorf("scheduler message %q lacks Insufficient cpu", schedMsg)
	}
	for _, p := range before {
		cur, err := r.down.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil || cur.Status.Phase != corev1.PodRunning {
			t.Errorf("the agent pod %s does not keep running while the new one is Pending: %v", p.Name, err)
		}
	}
	time.Sleep(2 * time.Second)
	s, raw = r.scan(t, thresholds...)
	t.Logf("scan: root causes %v; findings %v", s.rootCauses(), s.keys())
	if !strings.Contains(strings.Join(s.rootCauses(), " "), "pod/unschedulable-resources") {
		t.Fatalf("scan does not name pod/unschedulable-resources as a root cause:\n%s", raw)
	}
	if !strings.Contains(raw, "Insufficient cpu") {
		t.Errorf("the evidence lacks the scheduler's message:\n%s", raw)
	}
	if s.has("pod/unschedulable-taints") {
		t.Errorf("scan reports pod/unschedulable-taints, but the pod tolerates the taint now:\n%s", raw)
	}
	collectRealSched(t, r, "agent-pod-unschedulable-resources", "pod/unschedulable-resources", "workload/rollout-stalled", "pod/unschedulable-taints",
		"The Fleet Cluster's agentResources ask for 64 CPUs, more than any node has free: Fleet renders the new fleet-agent "+
			"Deployment and its new pod stays Pending with the scheduler's message while the old one keeps running.")

	// 9. The guided command, with the requests an operator picks for <cpu-request> and
	// <memory-request> (the only placeholders left), run as printed: Fleet redeploys the agent.
	jout, _, _ = run(t, append([]string{"scan", "--kubeconfig", r.kubeconfig, "--all-contexts", "-o", "json", "-q"}, thresholds...)...)
	cmd = guidedCommand(t, jout, "agentResources")
	cmd = strings.NewReplacer("<cpu-request>", "250m", "<memory-request>", "256Mi").Replace(cmd)
	t.Logf("the guided step unstick prints, requests filled in: %s", cmd)
	if strings.Contains(cmd, "<") {
		t.Errorf("the guided command leaves a placeholder besides the requests: %s", cmd)
	}
	sh = exec.CommandContext(ctx, "bash", "-c", cmd)
	sh.Env = append(os.Environ(), "KUBECONFIG="+r.kubeconfig, "PATH="+filepath.Dir(kubectl)+":"+os.Getenv("PATH"))
	if b, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the printed command failed: %v\n%s", err, b)
	}
	waitUntil(t, "the agent rollout completes with the lowered requests", 3*time.Minute, func() bool {
		pods := r.agentPods(t)
		if !rolledOut(r.agentDeploy(t), pods, newImage) {
			return false
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Resources.Requests.Cpu().String() != "250m" {
				return false
			}
		}
		return true
	}, func() string {
		return podsLine(r.agentPods(t)) + "\n" + r.logs() + "\n" + r.mgmt.Logs("fleet-agentmanagement")
	})
	s, raw = r.scan(t, thresholds...)
	for _, id := range []string{"pod/unschedulable-resources", "workload/rollout-stalled"} {
		if s.has(id) {
			t.Errorf("scan after the lowered requests still reports %s:\n%s", id, raw)
		}
	}
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

func names(ents []os.DirEntry) []string {
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// guidedCommand is the first command of a JSON scan report containing want.
func guidedCommand(t *testing.T, report, want string) string {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(report), &doc); err != nil {
		t.Fatalf("no JSON report: %v", err)
	}
	var found string
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, k)
			}
		case []any:
			for _, e := range x {
				walk(e, key)
			}
		case string:
			if key == "commands" && found == "" && strings.Contains(x, want) {
				found = x
			}
		}
	}
	walk(doc, "")
	if found == "" {
		t.Fatalf("no command with %q in the report:\n%s", want, report)
	}
	return found
}

// realBundle is a failure made by the real controllers, to be collected as a scenario bundle.
type realBundle struct {
	name, test, file string
	// after is how long past the collection the bundle is judged (expect.yaml's now): past the
	// default threshold of the root cause, since the live test lowered it.
	after                  time.Duration
	root, findings, forbid string
	what                   string
	controllers            string
}

// collectRealBundle writes `unstick collect` of the live failure like collectReal does, with an
// expect.yaml judged b.after later, and checks the bundle judged offline names the same root
// cause.
func collectRealBundle(t *testing.T, r *realFleet, b realBundle) {
	t.Helper()
	dir := collectLive(t, r.kubeconfig, b.name)
	now := time.Now().UTC().Add(b.after).Truncate(time.Second).Format(time.RFC3339)
	expect := fmt.Sprintf(`description: "Produced by the real controllers (internal/e2e/%s): %s, kube-controller-manager and kube-scheduler v1.37.2, KWOK v0.8.0 as the kubelets. %s"
now: %q
rootCauses: [%s]
findings: [%s]
forbid: [%s]
`, b.file, b.controllers, b.what, now, b.root, b.findings, b.forbid)
	if err := os.WriteFile(filepath.Join(dir, "expect.yaml"), []byte(expect), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := "# " + b.name + "\n\nProduced by the real controllers, not written by hand: `unstick collect` of the live failure made by\n" +
		"`" + b.test + "` (internal/e2e/" + b.file + ") with " + b.controllers + ", kube-controller-manager and\n" +
		"kube-scheduler v1.37.2, and KWOK v0.8.0 standing in for the kubelets. Regenerate with\n" +
		"`UNSTICK_COLLECT_REAL=1 go test ./internal/e2e -run " + b.test + " -count=1 -timeout 30m`.\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	if s := parse(t, out, errOut); !s.has(b.root) {
		t.Errorf("the collected bundle judged offline lacks %s:\n%s", b.root, out)
	}
}

// collectRealSched collects a failure of TestRealSchedulerAgentPodUnschedulable, judged past
// pod.pendingAfter's default.
func collectRealSched(t *testing.T, r *realFleet, name, root, findings, forbid, what string) {
	t.Helper()
	collectRealBundle(t, r, realBundle{name: name, test: "TestRealSchedulerAgentPodUnschedulable", file: "realsched_test.go", after: 20 * time.Minute,
		root: root, findings: findings, forbid: forbid, what: what,
		controllers: "the Fleet v0.16.0 controller, agentmanagement and agent (the fleet-agent Deployment is the one Fleet renders and its agent applies)"})
}
