package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"

	"github.com/unstick-dev/unstick/internal/testbed"
	"github.com/unstick-dev/unstick/internal/testenv"
)

const fleetBDCRD = "bundledeployments.fleet.cattle.io"

// agentPod is the downstream fleet-agent Deployment as Fleet's agent chart renders it, its pod
// placed by the real scheduler on a KWOK node. The real agent runs as a process (testbed's
// Agent); the test plays the kubelet of this pod: the process's output is the container's
// log (served through testenv.LogProxy, the test server having no kubelet) and its exits and
// restarts go to the container status through the pod status subresource.
type agentPod struct {
	r       *realFleet
	name    string
	logsDir string
	runs    int // process runs seen when the pod started
	base    int // index of the run the pod's container started with
}

func startAgentPod(t *testing.T, r *realFleet, logsDir string) *agentPod {
	t.Helper()
	ctx := t.Context()
	ns := testbed.FleetSystemNamespace
	if _, err := r.down.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	one := int32(1)
	no, yes := false, true
	uid := int64(1000)
	labels := map[string]string{"app": "fleet-agent"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-agent", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: "fleet-agent",
					NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:        []corev1.Toleration{{Key: "cattle.io/os", Operator: corev1.TolerationOpEqual, Value: "linux", Effect: corev1.TaintEffectNoSchedule}},
					SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid},
					Containers: []corev1.Container{{
						Name:    "fleet-agent",
						Image:   "rancher/fleet-agent:v0.16.0",
						Command: []string{"fleetagent"},
						Env: []corev1.EnvVar{
							{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "CHECKIN_INTERVAL", Value: "15s"},
						},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, Privileged: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
						VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, {Name: "kube", MountPath: "/.kube"}},
					}},
					Volumes: []corev1.Volume{
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "kube", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	if _, err := r.down.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := &agentPod{r: r, logsDir: logsDir}
	waitUntil(t, "the fleet-agent pod scheduled and running (KWOK)", time.Minute, func() bool {
		p := a.pod(t)
		return p != nil && p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1
	}, func() string { return r.down.Logs("kube-scheduler") + r.down.Logs("kwok") })
	a.name = a.pod(t).Name
	a.sync(t)
	return a
}

func (a *agentPod) pod(t *testing.T) *corev1.Pod {
	t.Helper()
	l, err := a.r.down.Client.CoreV1().Pods(testbed.FleetSystemNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app=fleet-agent"})
	if err != nil || len(l.Items) == 0 {
		return nil
	}
	return &l.Items[0]
}

var procStart = regexp.MustCompile(`(?m)^=== (\S+): starting fleet-agent\n`)

// sync is the kubelet stand-in: the agent process's runs become the container's current and
// previous logs, and the number of runs since the pod started its restart count, with the
// last run's exit as lastState.
func (a *agentPod) sync(t *testing.T) {
	t.Helper()
	all := a.r.agent.Proc.Log()
	idx := procStart.FindAllStringSubmatchIndex(all, -1)
	var runs []string
	var starts []time.Time
	for i, m := range idx {
		end := len(all)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		runs = append(runs, all[m[1]:end])
		ts, _ := time.Parse(time.RFC3339Nano, all[m[2]:m[3]])
		starts = append(starts, ts)
	}
	if a.runs == 0 {
		a.runs = len(runs) // the pod's container starts with the process's current run
		a.base = len(runs) - 1
	}
	dir := filepath.Join(a.logsDir, testbed.FleetSystemNamespace, a.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("fleet-agent.log", runs[len(runs)-1])
	if len(runs)-1 > a.base {
		write("fleet-agent.previous.log", runs[len(runs)-2])
	}
	restarts := int32(len(runs) - 1 - a.base)
	// KWOK writes the pod's status too, so re-read on a 409.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := a.pod(t)
		if p == nil {
			return fmt.Errorf("no fleet-agent pod in %s", testbed.FleetSystemNamespace)
		}
		cs := &p.Status.ContainerStatuses[0]
		if cs.RestartCount == restarts {
			return nil
		}
		cs.RestartCount = restarts
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(starts[len(starts)-1])}}
		// The previous run ended with SIGTERM (the test's restart), on which the agent exits 0
		// ("termination requested, exiting"), as a kubelet records a container it stopped.
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: metav1.NewTime(starts[len(starts)-2]), FinishedAt: metav1.NewTime(starts[len(starts)-1]),
		}}
		_, err := a.r.down.Client.CoreV1().Pods(p.Namespace).UpdateStatus(t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// proxiedKubeconfig is r's kubeconfig with the downstream context through a log proxy.
func proxiedKubeconfig(t *testing.T, r *realFleet, logsDir string) string {
	t.Helper()
	server, closeProxy, err := testenv.ServeLogProxy(r.down.Config, logsDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeProxy() })
	kc, err := clientcmd.LoadFromFile(r.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	name := r.down.ContextName
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{}
	p := filepath.Join(t.TempDir(), "kubeconfig-proxied")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (r *realFleet) scanWith(t *testing.T, kubeconfig string, extra ...string) (scanResult, string) {
	t.Helper()
	args := append([]string{"scan", "--kubeconfig", kubeconfig, "--all-contexts", "-o", "json", "-q"}, extra...)
	out, errOut, _ := run(t, args...)
	return parse(t, out, errOut), out
}

func (s scanResult) findingsOf(id string) []string {
	var out []string
	for _, f := range s.Findings {
		if f.ID == id {
			out = append(out, f.Cluster+" "+f.Object.Kind+"/"+f.Object.Namespace+"/"+f.Object.Name)
		}
	}
	return out
}

// A Fleet CRD removed on the management cluster under a running, registered agent, made with
// the real Fleet v0.16.0 controller and agent, kube-controller-manager and kube-scheduler;
// KWOK stands in for the kubelets, and the test for the kubelet of the agent's pod (its log
// and container status, see agentPod).
func TestRealFleetAgentCRDRemoved(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	began := time.Now()
	r := startRealFleet(t)
	ctx := t.Context()
	r.updateBundle(t, webBundle("1.0.0", map[string]any{"tag": "1.26"}))
	waitUntil(t, "web v1 deployed and its BundleDeployment Ready", 3*time.Minute, func() bool {
		l := r.last(t)
		return l != nil && l.Info.Status == release.StatusDeployed && bdReady(r.bd(t))
	}, r.logs)
	logsDir := filepath.Join(t.TempDir(), "logs")
	pod := startAgentPod(t, r, logsDir)
	kubeconfig := proxiedKubeconfig(t, r, logsDir)
	t.Logf("v1 deployed, agent pod %s running, at %s", pod.name, time.Since(began).Round(time.Second))
	if s, raw := r.scanWith(t, kubeconfig); s.has("crd/missing") || s.has("agent/crd-missing") {
		t.Fatalf("scan before the CRD is removed already reports it:\n%s", raw)
	}

	// 1. The BundleDeployment CRD goes from the management cluster (a failed fleet-crd upgrade,
	// someone "refreshing" the CRDs): the API server deletes every BundleDeployment with it.
	// The running agent does not exit: its informer keeps relisting and logging the 404.
	ext := apiextclient.NewForConfigOrDie(r.mgmt.Config)
	mark := len(r.agent.Proc.Log())
	if err := ext.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, fleetBDCRD, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	failedWatch := regexp.MustCompile(`could not find the requested resource`)
	waitUntil(t, "the agent logging the 404 three times", 2*time.Minute, func() bool {
		return len(lines(r.agent.Proc.Log()[mark:], failedWatch, 3)) == 3
	}, r.logs)
	if ex, err := r.agent.Proc.Exited(); ex {
		t.Fatalf("the agent exited (%v); Fleet v0.16.0's agent keeps running", err)
	}
	t.Logf("the running agent's real lines after the removal:\n  %s", strings.Join(lines(r.agent.Proc.Log()[mark:], regexp.MustCompile(`.`), 6), "\n  "))
	pod.sync(t)
	s, raw := r.scanWith(t, kubeconfig)
	t.Logf("scan (agent running): root causes %v; crd/missing %v; agent/crd-missing %v", s.rootCauses(), s.findingsOf("crd/missing"), s.findingsOf("agent/crd-missing"))
	if !s.has("crd/missing") || !s.has("agent/crd-missing") {
		t.Errorf("scan with the agent failing on the removed CRD lacks crd/missing or agent/crd-missing:\n%s", raw)
	}

	// 2. The agent's container restarts (a node reboot, a redeploy): the restarted agent tests
	// its credential by listing BundleDeployments, gets the 404, falls back to re-registering,
	// and, its bootstrap Secret consumed by the first registration, retries every minute.
	mark = len(r.agent.Proc.Log())
	if err := r.agent.Proc.Restart(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the restarted agent failing its registration", time.Minute, func() bool {
		return strings.Contains(r.agent.Proc.Log()[mark:], "Failed to register agent")
	}, r.logs)
	t.Logf("the restarted agent's real lines:\n  %s", strings.Join(lines(r.agent.Proc.Log()[mark:], regexp.MustCompile(`level=`), 6), "\n  "))
	pod.sync(t)
	s, raw = r.scanWith(t, kubeconfig)
	t.Logf("scan (agent restarted): root causes %v; crd/missing %v; agent/crd-missing %v", s.rootCauses(), s.findingsOf("crd/missing"), s.findingsOf("agent/crd-missing"))
	if got := s.findingsOf("crd/missing"); len(got) != 1 || !strings.Contains(got[0], fleetBDCRD) || !strings.HasPrefix(got[0], r.mgmt.ContextName+" ") {
		t.Errorf("crd/missing findings %v, want exactly %s on %s:\n%s", got, fleetBDCRD, r.mgmt.ContextName, raw)
	}
	// The guided step unstick prints for it: the fleet-crd chart, where Fleet installs it.
	if !strings.Contains(raw, "helm --kubeconfig "+kubeconfig+" --kube-context "+r.mgmt.ContextName+" -n cattle-fleet-system upgrade fleet-crd ") {
		t.Errorf("the scan's remediation does not name the fleet-crd release on %s:\n%s", r.mgmt.ContextName, raw)
	}
	collectRealCRD(t, kubeconfig)

	// 3. What unstick offers, and fix --apply at the default max-risk.
	out, errOut, code := run(t, "fix", "--kubeconfig", kubeconfig, "--all-contexts", "-q")
	t.Logf("fix (plan): exit %d\n%s%s", code, out, errOut)
	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code = run(t, "fix", "--kubeconfig", kubeconfig, "--all-contexts", "-q", "--apply", "--yes", "--verify-timeout", "15s", "--backup-dir", dir)
	t.Logf("fix --apply: exit %d\n%s%s", code, out, errOut)
	// The removed CRD's step is guided: fix cannot re-create it, so the incident is still open
	// when fix --apply ends, and it says so with the printed plan's exit.
	if code != 3 {
		t.Errorf("fix --apply with the CRD still missing: exit %d, want 3 (the incident is open)", code)
	}
	if _, err := os.Stat(filepath.Join(dir)); err == nil {
		out, errOut, code = run(t, "restore", dir, "--kubeconfig", kubeconfig)
		t.Logf("restore: exit %d\n%s%s", code, out, errOut)
	}

	// 4. The guided step: re-create the CRD from the fleet-crd chart of the same Fleet version.
	crds, err := testenv.CRDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range crds {
		if c.Name == fleetBDCRD {
			if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, c.DeepCopy(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	recovered := time.Now()
	waitUntil(t, "the agent registered again, the BundleDeployment re-created and Ready", 4*time.Minute, func() bool {
		return bdReady(r.bd(t))
	}, r.logs)
	t.Logf("recovered %s after the CRD came back", time.Since(recovered).Round(time.Second))
	pod.sync(t)
	s, raw = r.scanWith(t, kubeconfig)
	for _, id := range []string{"crd/missing", "agent/crd-missing", "fleet/registration-broken"} {
		if s.has(id) {
			t.Errorf("scan after recovery still reports %s:\n%s", id, raw)
		}
	}
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

// collectRealCRD writes `unstick collect` of the failure (to testdata/scenarios/real/ when
// UNSTICK_COLLECT_REAL is set) and checks the bundle judged offline names the same root cause.
func collectRealCRD(t *testing.T, kubeconfig string) {
	t.Helper()
	const name = "agent-crd-missing"
	dir := collectLive(t, kubeconfig, name)
	now := time.Now().UTC().Add(time.Minute).Truncate(time.Second).Format(time.RFC3339)
	expect := fmt.Sprintf(`description: "Produced by the real controllers (internal/e2e/realcrd_test.go): Fleet v0.16.0 controller and agent, kube-controller-manager and kube-scheduler v1.37.2, KWOK v0.8.0 as the kubelets. The bundledeployments.fleet.cattle.io CRD deleted on the management cluster under a registered, running agent; the agent's container then restarted, failing its credential check on the 404 and retrying registration."
now: %q
rootCauses: [crd/missing]
forbid: [agent/api-unreachable, fleet/registration-broken]
`, now)
	if err := os.WriteFile(filepath.Join(dir, "expect.yaml"), []byte(expect), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := "# " + name + "\n\nProduced by the real controllers, not written by hand: `unstick collect` of the live failure made by\n" +
		"`TestRealFleetAgentCRDRemoved` (internal/e2e/realcrd_test.go) with the Fleet v0.16.0 controller and agent, kube-controller-manager\n" +
		"and kube-scheduler v1.37.2 and KWOK v0.8.0 standing in for the kubelets. The agent ran as a process; its output is the\n" +
		"fleet-agent pod's log (previous: the run under which the CRD was deleted; current: the restarted run), and its restart\n" +
		"the container status, written by the test as the kubelet would. Regenerate with\n" +
		"`UNSTICK_COLLECT_REAL=1 go test ./internal/e2e -run TestRealFleetAgentCRDRemoved -count=1 -timeout 30m`.\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	if s := parse(t, out, errOut); !s.has("crd/missing") {
		t.Errorf("the collected bundle judged offline lacks crd/missing:\n%s", out)
	}
}
