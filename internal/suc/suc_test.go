package suc

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWithLatestTag(t *testing.T) {
	// container.go WithLatestTag: only a name-only reference gets the tag, written in its
	// familiar form (reference.FamiliarString).
	for _, c := range []struct{ image, tag, want string }{
		{"rancher/k3s-upgrade", "v1.30.3-k3s1", "rancher/k3s-upgrade:v1.30.3-k3s1"},
		{"docker.io/rancher/k3s-upgrade", "v1.30.3-k3s1", "rancher/k3s-upgrade:v1.30.3-k3s1"},
		{"docker.io/library/busybox", "1.36", "busybox:1.36"},
		{"registry.example.com:5000/ops/os-upgrade", "v2", "registry.example.com:5000/ops/os-upgrade:v2"},
		{"rancher/k3s-upgrade:v1.29.9-k3s1", "v1.30.3-k3s1", "rancher/k3s-upgrade:v1.29.9-k3s1"},
		{"rancher/k3s-upgrade@sha256:" + strings.Repeat("ab", 32), "v1", "rancher/k3s-upgrade@sha256:" + strings.Repeat("ab", 32)},
		{"rancher/k3s-upgrade", "", "rancher/k3s-upgrade"},
		{"Not/A/Valid/Ref", "v1", "Not/A/Valid/Ref"},
	} {
		if got := WithLatestTag(c.image, c.tag); got != c.want {
			t.Errorf("WithLatestTag(%q, %q) = %q, want %q", c.image, c.tag, got, c.want)
		}
	}
	if got := MungeVersion("v1.30.3+rke2r1"); got != "v1.30.3-rke2r1" {
		t.Errorf("MungeVersion = %q", got)
	}
}

func TestJobName(t *testing.T) {
	if got := JobName("k3s-server", "cp-1", "abc"); got != "apply-k3s-server-on-cp-1-with-abc" {
		t.Errorf("short name: %q", got)
	}
	hash := "4ee557c408e2cb53f60aaf9795a896bff6f84e957fbb4740fbeed93d"
	got := JobName("os-upgrade", "prod-eu-1-worker-1.example.internal", hash)
	// The node name is cut at its first dot, the whole cut to 63 characters with a hash
	// suffix (wrangler name.SafeConcatName).
	if len(got) > 63 || !strings.HasPrefix(got, "apply-os-upgrade-on-prod-eu-1-worker-1-with-4ee557c") || strings.Contains(got, "example") {
		t.Errorf("long name: %q (%d)", got, len(got))
	}
}

func TestDrainArgs(t *testing.T) {
	yes, no := true, false
	grace := int32(60)
	for _, c := range []struct {
		drain DrainSpec
		want  string
	}{
		{DrainSpec{}, "drain n1 --pod-selector !upgrade.cattle.io/controller --ignore-daemonsets --delete-emptydir-data"},
		{DrainSpec{IgnoreDaemonSets: &no, DeleteEmptydirData: &no}, "drain n1 --pod-selector !upgrade.cattle.io/controller"},
		{DrainSpec{DeleteLocalData: &yes, Force: true, Timeout: &DrainTimeout{D: 600e9}, GracePeriod: &grace, DisableEviction: true, SkipWaitForDeleteTimeout: 60},
			"drain n1 --pod-selector !upgrade.cattle.io/controller --ignore-daemonsets --delete-emptydir-data --force --timeout 10m0s --grace-period 60 --disable-eviction=true --skip-wait-for-delete-timeout 60"},
		{DrainSpec{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "longhorn"}}},
			"drain n1 --pod-selector app=longhorn,!upgrade.cattle.io/controller --ignore-daemonsets --delete-emptydir-data"},
	} {
		p := &Plan{Spec: PlanSpec{Drain: &c.drain}}
		if got := strings.Join(p.DrainArgs("n1"), " "); got != c.want {
			t.Errorf("DrainArgs(%+v)\n got %s\nwant %s", c.drain, got, c.want)
		}
	}
}

func TestDrainTimeoutForms(t *testing.T) {
	for _, raw := range []string{`{"spec":{"drain":{"timeout":"15m"}}}`, `{"spec":{"drain":{"timeout":900000000000}}}`} {
		p, err := Decode([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if p.Spec.Drain.Timeout.D.String() != "15m0s" {
			t.Errorf("%s: timeout %s", raw, p.Spec.Drain.Timeout.D)
		}
	}
	if _, err := Decode([]byte(`{"spec":{"drain":{"timeout":"soon"}}}`)); err == nil {
		t.Error("a bad duration must be an error")
	}
}

func TestCheckDrainArgs(t *testing.T) {
	args := (&Plan{Spec: PlanSpec{Drain: &DrainSpec{SkipWaitForDeleteTimeout: 30}}}).DrainArgs("n")
	v118, _ := ParseKubectlTag("v1.18.20")
	v130, _ := ParseKubectlTag("v1.30.3")
	v131, _ := ParseKubectlTag("1.31.0-rancher1")
	if p := CheckDrainArgs(args, v118); len(p) != 1 || p[0].Flag.Name != "--delete-emptydir-data" || p[0].Why != "unknown" {
		t.Errorf("1.18: %v", p)
	}
	if p := CheckDrainArgs(args, v130); len(p) != 0 {
		t.Errorf("1.30: %v", p)
	}
	old := []string{"drain", "n", "--pod-selector", "!upgrade.cattle.io/controller", "--ignore-daemonsets", "--delete-local-data"}
	if p := CheckDrainArgs(old, v131); len(p) != 1 || p[0].Why != "removed" {
		t.Errorf("1.31 with --delete-local-data: %v", p)
	}
	if p := CheckDrainArgs(old, v130); len(p) != 1 || p[0].Why != "deprecated" {
		t.Errorf("1.30 with --delete-local-data: %v", p)
	}
	if _, ok := ParseKubectlTag("latest"); ok {
		t.Error("latest is not a version")
	}
}

func TestReadController(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "system-upgrade-controller", Namespace: "system-upgrade"}}
	d.Spec.Template.Labels = map[string]string{LabelController: "system-upgrade-controller"}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "system-upgrade-controller", Image: "rancher/system-upgrade-controller:v0.20.1",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: DefaultConfigMap}}}}}}
	cms := map[string]map[string]string{"system-upgrade/" + DefaultConfigMap: {EnvKubectlImage: "mirror.local/rancher/kubectl:v1.31.2"}}
	lookup := func(ns, name string) map[string]string { return cms[ns+"/"+name] }
	if !IsController(d) {
		t.Fatal("IsController")
	}
	img, src := ReadController(d, lookup).KubectlImage()
	if img != "mirror.local/rancher/kubectl:v1.31.2" || !strings.Contains(src, "configmap") {
		t.Errorf("from the ConfigMap: %s (%s)", img, src)
	}
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: EnvKubectlImage, Value: "rancher/kubectl:v1.30.9"}}
	if img, _ := ReadController(d, lookup).KubectlImage(); img != "rancher/kubectl:v1.30.9" {
		t.Errorf("env must override envFrom: %s", img)
	}
	d.Spec.Template.Spec.Containers[0].Env = nil
	c := ReadController(d, func(string, string) map[string]string { return nil })
	if img, _ := c.KubectlImage(); img != DefaultKubectlImage || !slices.Contains(c.MissingConfigMaps, "system-upgrade/"+DefaultConfigMap) {
		t.Errorf("missing ConfigMap: %s %v", img, c.MissingConfigMaps)
	}
	var nilCtrl *Controller
	if img, _ := nilCtrl.KubectlImage(); img != "rancher/kubectl:v1.30.3" {
		t.Errorf("no controller read: %s", img)
	}
}

func TestPlanNodesAndImages(t *testing.T) {
	raw := `{"metadata":{"name":"k3s-agent","namespace":"system-upgrade"},
	"spec":{"concurrency":1,"nodeSelector":{"matchExpressions":[{"key":"node-role.kubernetes.io/control-plane","operator":"DoesNotExist"}]},
	"prepare":{"image":"rancher/k3s-upgrade","args":["prepare","k3s-server"]},"drain":{"force":true},"upgrade":{"image":"rancher/k3s-upgrade"},"version":"v1.30.3+k3s1"},
	"status":{"latestVersion":"v1.30.3-k3s1","latestHash":"h1","conditions":[{"type":"Complete","status":"False","reason":"JobFailed","lastUpdateTime":"2026-11-28T08:00:00Z"}]}}`
	p, err := Decode([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string, labels map[string]string) *corev1.Node {
		l := map[string]string{corev1.LabelHostname: name}
		for k, v := range labels {
			l[k] = v
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	nodes := []*corev1.Node{
		node("cp", map[string]string{"node-role.kubernetes.io/control-plane": "true"}),
		node("w1", map[string]string{LabelPlanName("k3s-agent"): "h1"}),
		node("w2", map[string]string{LabelPlanName("k3s-agent"): "disabled"}),
		node("w3", nil),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-hostname"}},
	}
	sel, err := p.SelectedNodes(nodes)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range sel {
		names = append(names, n.Name+"="+string(p.StateOf(n)))
	}
	if got := strings.Join(names, " "); got != "w1=done w2=disabled w3=pending" {
		t.Errorf("selected: %s", got)
	}
	var imgs []string
	for _, si := range p.Images(DefaultKubectlImage) {
		imgs = append(imgs, string(si.Stage)+"="+si.Image)
	}
	if got := strings.Join(imgs, " "); got != "prepare=rancher/k3s-upgrade:v1.30.3-k3s1 drain=rancher/kubectl:v1.30.3 upgrade=rancher/k3s-upgrade:v1.30.3-k3s1" {
		t.Errorf("images: %s", got)
	}
	if v := p.VersionFor("v1.31.4+k3s1"); v != "v1.31.4-k3s1" || !p.UpgradesKubernetes() {
		t.Errorf("VersionFor target: %s", v)
	}
	if c := p.Condition(CondComplete); c == nil || c.Reason != "JobFailed" || ConditionUpdated(c).IsZero() {
		t.Errorf("Complete condition: %+v", c)
	}
	b, _ := json.Marshal(p.Spec.Drain)
	if !strings.Contains(string(b), `"force":true`) {
		t.Errorf("drain round trip: %s", b)
	}
}

// An OS or tool Plan versioned v1.4.2 is not a Kubernetes upgrade: its version must not be
// compared with the kubelet's (a node labelled done for it would read as "still on another
// Kubernetes version"). Seen on the test bed with an os-hardening Plan.
func TestIsKubernetesVersion(t *testing.T) {
	for v, want := range map[string]bool{
		"v1.30.3": true, "v1.30.3+rke2r1": true, "v1.30.3-k3s1": true, "1.33.0": true, "v1.16.0": true,
		"v1.4.2": false, "v1.15.12": false, "v2.4.0": false, "latest": false, "": false,
	} {
		if got := IsKubernetesVersion(v); got != want {
			t.Errorf("IsKubernetesVersion(%q) = %v, want %v", v, got, want)
		}
	}
}
