package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// drainErrorText matches the eviction error of the drain-blocked scenario wherever Rancher
// recorded it: the plan Secret's drain-error annotation, the planner's conditions and its
// provisioning log.
var (
	drainErrorAnnotation = regexp.MustCompile(`,\s*"rke\.cattle\.io/drain-error": "(?:[^"\\]|\\.)*"`)
	drainErrorText       = regexp.MustCompile(`(?:: )?error draining machine [a-z0-9-]+: error when evicting pods/\\"[a-z0-9-]+\\" -n \\"[a-z0-9-]+\\" \(will retry after 5s\): Cannot evict pod as it would violate the pod's disruption budget\.`)
)

// withoutDrainError copies the drain-blocked scenario with every trace of the drain error
// removed: the drain is only known to be stuck by its age (rancher.drainStuckAfter).
func withoutDrainError(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "scenarios", "rancher", "drain-blocked-positive")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == "expect.yaml" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b = drainErrorAnnotation.ReplaceAll(b, nil)
		b = drainErrorText.ReplaceAll(b, nil)
		if bytes.Contains(b, []byte("evict")) {
			t.Fatalf("%s still quotes the drain error", path)
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

type drainFinding struct {
	ID       string `json:"id"`
	Summary  string `json:"summary"`
	Evidence []struct {
		Source string `json:"source"`
		Text   string `json:"text"`
	} `json:"evidence"`
}

func drainBlockedOf(t *testing.T, out, errOut string) drainFinding {
	t.Helper()
	var r struct {
		Findings []drainFinding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("no JSON report (%v); stderr: %s", err, errOut)
	}
	for _, f := range r.Findings {
		if f.ID == "rancher/drain-blocked" {
			return f
		}
	}
	t.Fatalf("no rancher/drain-blocked finding; report: %s", out)
	return drainFinding{}
}

func (f drainFinding) text() string {
	var b strings.Builder
	b.WriteString(f.Summary + "\n")
	for _, e := range f.Evidence {
		b.WriteString(e.Source + ": " + e.Text + "\n")
	}
	return b.String()
}

// A drain held by a PodDisruptionBudget, with no drain error recorded anywhere: the live scan
// reads the pods on the cordoned node in every namespace and names the budget and its pod;
// serve, whose informers watch only the upgrade namespaces, lists them the same way and says
// the same; collect keeps those pods (redacted) so the bundle does too. Pods on nodes that are
// not cordoned stay unread outside the upgrade namespaces.
func TestDrainBlockedFindsTheBudgetFromTheNodesPods(t *testing.T) {
	t.Parallel()
	dir := withoutDrainError(t)
	kc := clientcmdapi.NewConfig()
	var downstream *kubernetes.Clientset
	for _, name := range []string{"local", "prod-eu-2"} {
		env := testenv.Start(t, testenv.WithContextName(name))
		if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{Cluster: name}); err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		if name == "prod-eu-2" {
			downstream = kubernetes.NewForConfigOrDie(env.Config)
		}
		addProxiedContext(t, kc, name, env.Config, t.TempDir())
		kc.CurrentContext = name
	}

	// The scenario's node prod-eu-2-worker-6mq2r is cordoned and runs shop/checkout-0, which
	// PodDisruptionBudget shop/checkout (disruptionsAllowed 0) covers. Add a pod with a secret
	// in its env on the cordoned node, and a budget allowing nothing over a pod on a node that
	// is not cordoned: that one must not be read.
	ctx := t.Context()
	const secret = "hunter2-ledger-db-password"
	mkPod := func(ns, name, node string, labels map[string]string, env []corev1.EnvVar) {
		t.Helper()
		if _, err := downstream.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		no := false
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: &no,
				Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/" + ns + "/" + name + ":1.0", Env: env}}},
		}
		if _, err := downstream.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mkPod("payments", "ledger-0", "prod-eu-2-worker-6mq2r", map[string]string{"app": "ledger"}, []corev1.EnvVar{{Name: "DB_PASSWORD", Value: secret}})
	mkPod("web", "frontend-0", "prod-eu-2-cp-7k2xq", map[string]string{"app": "frontend"}, nil)
	one := intstr.FromInt32(1)
	pdb, err := downstream.PolicyV1().PodDisruptionBudgets("web").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "frontend", Namespace: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, DisruptionsAllowed: 0, ObservedGeneration: pdb.Generation}
	if _, err := downstream.PolicyV1().PodDisruptionBudgets("web").UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	liveOut, liveErr, _ := run(t, "scan", "--kubeconfig", path, "--all-contexts", "--now", "2026-11-28T09:30:00Z", "-o", "json", "-q")
	live := drainBlockedOf(t, liveOut, liveErr)
	want := []string{
		"is blocked by PodDisruptionBudget shop/checkout",
		"PodDisruptionBudget shop/checkout allows 0 disruptions",
		"pod shop/checkout-0 runs on the node (spec.nodeName prod-eu-2-worker-6mq2r), selected by app=checkout",
	}
	for _, w := range want {
		if !strings.Contains(live.text(), w) {
			t.Errorf("the live finding does not say %q:\n%s", w, live.text())
		}
	}
	if strings.Contains(live.text(), "web/frontend") || strings.Contains(live.text(), "drain error") {
		t.Errorf("the live finding names what it should not:\n%s", live.text())
	}

	// serve judges the same: its informers watch only the upgrade namespaces, so it lists the
	// cordoned node's pods as the scan does.
	addr, serveErr := runServe(t, "--kubeconfig", path, "--all-contexts")
	servedBody := httpGet(t, "http://"+addr+"/api/v1/findings")
	served := drainBlockedOf(t, string(servedBody), serveErr.String())
	for _, w := range want {
		if !strings.Contains(served.text(), w) {
			t.Errorf("serve's finding does not say %q:\n%s", w, served.text())
		}
	}
	if strings.Contains(served.text(), "web/frontend") {
		t.Errorf("serve's finding names a budget over a node that is not cordoned:\n%s", served.text())
	}
	if bytes.Contains(servedBody, []byte(secret)) {
		t.Error("serve's findings hold a pod's env value")
	}

	bundle := filepath.Join(t.TempDir(), "collected.tar.gz")
	if _, errOut, code := run(t, "collect", "--kubeconfig", path, "--all-contexts", "-o", bundle, "-q"); code != 0 {
		t.Fatalf("collect exit %d: %s", code, errOut)
	}
	all := untarAll(t, bundle)
	for _, w := range []string{`"checkout-0"`, `"ledger-0"`} {
		if !bytes.Contains(all, []byte(w)) {
			t.Errorf("the bundle lacks pod %s on the cordoned node", w)
		}
	}
	if bytes.Contains(all, []byte(`"frontend-0"`)) {
		t.Error("the bundle holds a pod of a node that is not cordoned, outside the upgrade namespaces")
	}
	if bytes.Contains(all, []byte(secret)) {
		t.Error("the bundle holds a pod's env value")
	}
	colOut, colErr, _ := run(t, "scan", "--from", bundle, "--now", "2026-11-28T09:30:00Z", "-o", "json")
	collected := drainBlockedOf(t, colOut, colErr)
	if !strings.Contains(collected.text(), "is blocked by PodDisruptionBudget shop/checkout") {
		t.Errorf("the collected bundle's finding does not name the budget:\n%s", collected.text())
	}
}
