package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/testbed"
)

var planGVR = schema.GroupVersionResource{Group: "upgrade.cattle.io", Version: "v1", Resource: "plans"}

// TestRealSUC runs the real system-upgrade-controller v0.20.1 with the real kube-controller-
// manager (its Job controller creates the pods) and kube-scheduler (it places them) on KWOK
// nodes of two architectures. KWOK is the stand-in for the kubelets: its stages
// (testbed.ImageStages) pull from the test registry — go-containerregistry's, whose content is
// the truth about which image exists for which platform — and perform the effect of SUC's
// cordon container, which no kubelet runs here. One bed holds every incident, each on its own
// Plan and nodes:
//
//   - k3s-missing: the upgrade image's tag (the Plan's version) is not in the registry, the
//     Job's pod waits in ErrImagePull/ImagePullBackOff until the Job's deadline;
//   - os-patch: the upgrade image is amd64 only and the Plan selects an arm64 node: the
//     cordon container runs, the upgrade container dies with exec format error, the Job fails
//     and leaves the node cordoned.
func TestRealSUC(t *testing.T) {
	start := time.Now()
	ctx := t.Context()
	reg := startFixRegistry(t)
	both := []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
	kubectl := reg.pushIndex(t, "rancher/kubectl:v1.30.3", both...)
	reg.pushIndex(t, "rancher/k3s-upgrade:v1.33.5-k3s1", both...)
	mirror := reg.pushIndex(t, "mirror/k3s-upgrade:v1.33.6-k3s1", both...)
	multi := reg.pushIndex(t, "acme/os-patch:v2.1.1", both...)
	reg.pushImage(t, "acme/os-patch:v2.1.0-amd64", "amd64") // a single amd64 image: pulled, then cannot exec

	nodes := []testbed.Node{
		{Name: "cp-1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": "true", "node-role.kubernetes.io/master": "true"}},
		{Name: "worker-a1", Labels: map[string]string{"pool": "amd"}},
		{Name: "worker-r1", Arch: "arm64", Labels: map[string]string{"pool": "arm"}},
	}
	images, err := testbed.ReadRegistry(ctx, reg.host)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := testbed.ImageStages(reg.host, images, nodes)
	if err != nil {
		t.Fatal(err)
	}
	bed := testbed.Start(t, testbed.Options{Name: "suc-bed", Nodes: nodes, Stages: stages})
	suc := bed.StartSUC(t, testbed.SUCSettings(kubectl))
	t.Logf("bed and controller up in %s", time.Since(start).Round(time.Second))
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		jobs, _ := bed.Client.BatchV1().Jobs("system-upgrade").List(ctx, metav1.ListOptions{})
		pods, _ := bed.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		var b strings.Builder
		for _, j := range jobs.Items {
			fmt.Fprintf(&b, "job %s parallelism=%v conditions=%v\n", j.Name, *j.Spec.Parallelism, j.Status.Conditions)
		}
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "pod %s/%s node=%s phase=%s init=%v ctr=%v\n", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
		}
		t.Logf("state at failure:\n%s\n--- controller ---\n%s\n%s", b.String(), suc.Log(), bed.Logs("kwok"))
	})

	dyn, err := dynamic.NewForConfig(bed.Config)
	if err != nil {
		t.Fatal(err)
	}
	plan := func(name, pool, version, image string) {
		doc := fmt.Sprintf(`apiVersion: upgrade.cattle.io/v1
kind: Plan
metadata:
  name: %s
  namespace: system-upgrade
spec:
  concurrency: 1
  cordon: true
  nodeSelector:
    matchLabels:
      pool: %s
  serviceAccountName: system-upgrade
  version: %s
  upgrade:
    image: %s
`, name, pool, version, image)
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(planGVR).Namespace("system-upgrade").Create(ctx, &u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Plan %s: %v", name, err)
		}
	}
	plan("k3s-missing", "amd", "v1.33.6+k3s1", reg.host+"/rancher/k3s-upgrade")
	plan("os-patch", "arm", "v2.1.0-amd64", reg.host+"/acme/os-patch")

	// The failures, as the controllers leave them.
	waitUntil(t, 3*time.Minute, "k3s-missing's pod in an image pull back-off", func() (bool, string) {
		pods, err := bed.Client.CoreV1().Pods("system-upgrade").List(ctx, metav1.ListOptions{LabelSelector: "upgrade.cattle.io/plan=k3s-missing"})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
					return true, w.Message
				}
			}
		}
		return false, fmt.Sprintf("%d pods", len(pods.Items))
	})
	waitUntil(t, 3*time.Minute, "os-patch's Job failed and worker-r1 left cordoned", func() (bool, string) {
		n, err := bed.Client.CoreV1().Nodes().Get(ctx, "worker-r1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		jobs, err := bed.Client.BatchV1().Jobs("system-upgrade").List(ctx, metav1.ListOptions{LabelSelector: "upgrade.cattle.io/plan=os-patch"})
		if err != nil {
			return false, err.Error()
		}
		for _, j := range jobs.Items {
			for _, c := range j.Status.Conditions {
				if c.Type == "Failed" && c.Status == corev1.ConditionTrue && n.Spec.Unschedulable {
					return true, c.Reason + ": " + c.Message
				}
			}
		}
		return false, fmt.Sprintf("unschedulable=%v, %d jobs", n.Spec.Unschedulable, len(jobs.Items))
	})
	for _, name := range []string{"k3s-missing", "os-patch"} {
		u, err := dyn.Resource(planGVR).Namespace("system-upgrade").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		t.Logf("Plan %s as SUC wrote it: %v", name, conds)
	}
	t.Logf("failures produced in %s", time.Since(start).Round(time.Second))

	// unstick scan, live, as an operator two hours later.
	later := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	scan := func() scanResult {
		out, errOut, _ := run(t, "scan", "--kubeconfig", bed.Kubeconfig, "--insecure-registry", reg.host, "-o", "json", "--now", later)
		return parse(t, out, errOut)
	}
	r := scan()
	roots := strings.Join(r.roots(), "\n")
	for _, want := range []string{"suc/image-missing", "suc/image-arch"} {
		if !strings.Contains(roots, want) {
			t.Errorf("live scan: no %s incident; roots:\n%s\nfindings:\n%s", want, roots, strings.Join(r.keys(), "\n"))
		}
	}
	if !contains(r.keys(), "suc/node-left-cordoned") && !strings.Contains(strings.Join(r.keys(), "\n"), "suc/node-left-cordoned") {
		t.Errorf("live scan: worker-r1 left cordoned is not reported:\n%s", strings.Join(r.keys(), "\n"))
	}

	// fix at the default --max-risk low, then medium with the images that exist.
	dir := t.TempDir()
	out, errOut, code := run(t, "fix", "--kubeconfig", bed.Kubeconfig, "--insecure-registry", reg.host, "--now", later,
		"--apply", "--yes", "--backup-dir", dir+"/low")
	t.Logf("fix (low): exit %d\n%s\n%s", code, out, errOut)
	out, errOut, code = run(t, "fix", "--kubeconfig", bed.Kubeconfig, "--insecure-registry", reg.host, "--now", later,
		"--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir+"/medium",
		"--image=system-upgrade/k3s-missing:upgrade="+mirror, "--image=system-upgrade/os-patch:upgrade="+multi)
	t.Logf("fix (medium): exit %d\n%s\n%s", code, out, errOut)

	// The real controller converges.
	waitUntil(t, 4*time.Minute, "both Plans complete, nodes labelled and schedulable", func() (bool, string) {
		var why []string
		for _, name := range []string{"k3s-missing", "os-patch"} {
			u, err := dyn.Resource(planGVR).Namespace("system-upgrade").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			hash, _, _ := unstructured.NestedString(u.Object, "status", "latestHash")
			applying, _, _ := unstructured.NestedStringSlice(u.Object, "status", "applying")
			if len(applying) > 0 {
				why = append(why, name+" applying "+strings.Join(applying, ","))
			}
			node := map[string]string{"k3s-missing": "worker-a1", "os-patch": "worker-r1"}[name]
			n, err := bed.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if n.Labels["plan.upgrade.cattle.io/"+name] != hash || n.Spec.Unschedulable {
				why = append(why, fmt.Sprintf("%s label %q (want %q), unschedulable %v", node, n.Labels["plan.upgrade.cattle.io/"+name], hash, n.Spec.Unschedulable))
			}
		}
		return len(why) == 0, strings.Join(why, "; ")
	})
	r = scan()
	for _, k := range r.keys() {
		if strings.HasPrefix(k, "suc/image-") || strings.HasPrefix(k, "suc/node-left-cordoned") || strings.HasPrefix(k, "suc/plan-stuck") {
			t.Errorf("after the fix the scan still reports %s", k)
		}
	}
	out, errOut, code = run(t, "restore", dir+"/medium", "--kubeconfig", bed.Kubeconfig)
	if code != 0 {
		t.Errorf("restore: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("controller restarts: %d; wall time %s", suc.Restarts(), time.Since(start).Round(time.Second))
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			t.Logf("%s: %s", what, state)
			return
		}
		last = state
		time.Sleep(time.Second)
	}
	t.Fatalf("waited %s for %s; last: %s", d, what, last)
}

// pushImage pushes a single (not multi-platform) image built for linux/arch.
func (r *fixRegistry) pushImage(t *testing.T, repoTag, arch string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return ref.String()
}
