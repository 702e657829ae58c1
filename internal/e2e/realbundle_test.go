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
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/unstick-dev/unstick/internal/testbed"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// The bundles of TestRealFleetBundleFailures: each one a chart as an application team writes
// it, each failing in its own way on the same downstream cluster.
const (
	shopDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop-api
spec:
  replicas: 1
  selector:
    matchLabels: {app: shop-api}
  template:
    metadata:
      labels: {app: shop-api}
    spec:
      containers:
      - name: api
        image: ghcr.io/example/shop-api:2.3.1
`
	shopConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-config
data:
  LOG_LEVEL: info
  CART_TTL: 30m
`
	billingConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: billing-settings
data:
  CURRENCY: EUR
  INVOICE_PREFIX: INV
`
	ordersV1 = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  replicas: 1
  selector:
    matchLabels: {app: orders}
  template:
    metadata:
      labels: {app: orders}
    spec:
      containers:
      - name: orders
        image: ghcr.io/example/orders:1.8.0
`
	// v2 adds a label to the selector, as charts do when they adopt the recommended labels.
	ordersV2 = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  replicas: 1
  selector:
    matchLabels: {app: orders, app.kubernetes.io/name: orders}
  template:
    metadata:
      labels: {app: orders, app.kubernetes.io/name: orders}
    spec:
      containers:
      - name: orders
        image: ghcr.io/example/orders:2.0.0
`
	serviceMonitor = `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: shop-api
spec:
  selector:
    matchLabels: {app: shop-api}
  endpoints:
  - port: metrics
    interval: 30s
`
	dashboards = `apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-dashboards
  labels: {grafana_dashboard: "1"}
data:
  shop.json: '{"title": "Shop"}'
`
	storefrontService = `apiVersion: v1
kind: Service
metadata:
  name: storefront
spec:
  selector: {app: storefront}
  ports:
  - name: http
    port: 80
`
	storefrontIngressTmpl = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: storefront
spec:
  ingressClassName: nginx
  rules:
  - host: %s
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: storefront
            port: {number: 80}
`
)

// Names the real controllers' failures are about.
const (
	webhookConfig  = "ingress-nginx-admission"
	webhookName    = "validate.nginx.ingress.kubernetes.io"
	webhookService = "ingress-nginx-controller-admission"
)

// failBundle is one bundle of the test: its chart, and the substring of the message the real
// Fleet agent reports once the failure is there.
type failBundle struct {
	name, ns, version string
	templates         map[string]string
	wantMessage       string
}

func (b failBundle) bundle() *fleetv1.Bundle {
	res := []fleetv1.BundleResource{{Name: "Chart.yaml", Content: "apiVersion: v2\nname: " + b.name + "\nversion: " + b.version + "\n"}}
	for _, name := range sortedKeys(b.templates) {
		res = append(res, fleetv1.BundleResource{Name: "templates/" + name, Content: b.templates[name]})
	}
	return &fleetv1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: testbed.FleetDefaultNamespace},
		Spec: fleetv1.BundleSpec{
			Resources: res,
			BundleDeploymentOptions: fleetv1.BundleDeploymentOptions{
				DefaultNamespace: b.ns,
				Helm:             &fleetv1.HelmOptions{ReleaseName: b.name},
			},
			Targets: []fleetv1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "real"}}}},
		},
	}
}

// TestRealFleetBundleFailures: five ways a Fleet bundle fails to apply, each made by the real
// Fleet v0.16.0 agent (Helm v4 inside it) and the real kube-apiserver v1.37.2 on one downstream
// cluster, none written by hand:
//
//   - shop 2.0.0 adds a ConfigMap someone created with kubectl: the upgrade adopts it (Fleet's
//     upgrades take ownership) and Helm v4's server-side apply meets the fields kubectl-create
//     holds — "conflict occurred while applying object";
//   - billing's first install meets a ConfigMap without Helm's ownership metadata: Helm refuses
//     ("invalid ownership metadata") and Fleet does not retry;
//   - orders 2.0.0 changes its Deployment's selector: "field is immutable";
//   - monitoring ships a ServiceMonitor on a cluster without the Prometheus operator's CRDs:
//     "no matches for kind";
//   - storefront 1.1.0 updates its Ingress while ingress-nginx's validating webhook stayed
//     behind its uninstalled Service: "failed calling webhook … service … not found".
//
// unstick's scan of the collected bundle must name each root cause with the object the message
// names. It regenerates testdata/scenarios/real/fleet-bundle-failures and
// fleet-bundles-healthy, and runs only when UNSTICK_COLLECT_REAL is set: two beds with the
// real Fleet take five to ten minutes on a loaded 2-core machine.
func TestRealFleetBundleFailures(t *testing.T) {
	if os.Getenv("UNSTICK_COLLECT_REAL") == "" {
		t.Skip("regenerates the real/fleet-bundle-* scenarios; set UNSTICK_COLLECT_REAL=1")
	}
	began := time.Now()
	r := startRealFleet(t)
	good := []failBundle{
		{name: "shop", ns: "shop", version: "1.4.0", templates: map[string]string{"deployment.yaml": shopDeployment}},
		{name: "orders", ns: "orders", version: "1.8.0", templates: map[string]string{"deployment.yaml": ordersV1}},
		{name: "storefront", ns: "storefront", version: "1.0.0", templates: map[string]string{"service.yaml": storefrontService, "ingress.yaml": fmt.Sprintf(storefrontIngressTmpl, "shop.example.com")}},
	}
	for _, b := range good {
		r.updateBundle(t, b.bundle())
	}
	for _, b := range good {
		waitUntil(t, b.name+" deployed and Ready", 4*time.Minute, func() bool { return bdReady(r.bdOf(t, b.name)) }, r.logs)
	}
	t.Logf("good bundles Ready at %s", time.Since(began).Round(time.Second))
	healthy := collectLive(t, r.kubeconfig, "fleet-bundles-healthy")

	failing := produceBundleFailures(t, r)
	// Not fatal: a failure the controllers did not make is reported, and the others still
	// collected and judged.
	deadline := time.Now().Add(4 * time.Minute)
	for _, b := range failing {
		for !strings.Contains(r.bundleMessages(t, b), b.wantMessage) && time.Now().Before(deadline) {
			time.Sleep(time.Second)
		}
		if m := r.bundleMessages(t, b); !strings.Contains(m, b.wantMessage) {
			t.Errorf("%s: the real controllers never reported %q:\n%s", b.name, b.wantMessage, m)
		}
	}
	time.Sleep(5 * time.Second) // the agent's status write after its last attempt
	msgs := map[string]string{}
	for _, b := range failing {
		msgs[b.name] = r.bundleMessages(t, b)
		t.Logf("%s, as the real controllers report it:\n%s", b.name, msgs[b.name])
	}
	positive := collectLive(t, r.kubeconfig, "fleet-bundle-failures")
	t.Logf("failures collected at %s", time.Since(began).Round(time.Second))

	scan := judgeBundleFailures(t, positive, writeBundleExpect(t, positive, msgs))
	judgeBundlesHealthy(t, healthy, writeBundleExpect(t, healthy, nil))
	takeWaysOut(t, r, scan, []string{"shop", "billing", "orders", "storefront"})
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

// takeWaysOut runs, for each bundle, the commands of the next step unstick printed for the
// incident whose step force-syncs it — the commands a user copies — with the bed's kubectl
// against the live beds, and expects the real controllers to deploy the bundle then.
func takeWaysOut(t *testing.T, r *realFleet, scan scanResult, bundles []string) {
	t.Helper()
	kubectl, err := testenv.Kubectl(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	env := append(os.Environ(), "KUBECONFIG="+r.kubeconfig, "PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, b := range bundles {
		cmds := nextStepOf(scan, b)
		if len(cmds) == 0 {
			t.Errorf("%s: no next step force-syncs the bundle", b)
			continue
		}
		for _, c := range cmds {
			cmd := exec.CommandContext(t.Context(), "sh", "-c", c)
			cmd.Dir, cmd.Env = work, env
			out, err := cmd.CombinedOutput()
			t.Logf("%s: $ %s\n%s", b, c, out)
			if err != nil {
				t.Errorf("%s: %q: %v", b, c, err)
			}
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, b := range bundles {
		for !bdReady(r.bdOf(t, b)) && time.Now().Before(deadline) {
			time.Sleep(time.Second)
		}
		if !bdReady(r.bdOf(t, b)) {
			t.Errorf("%s: not deployed after unstick's next step:\n%s", b, r.bundleMessages(t, failBundle{name: b, ns: b}))
		}
	}
}

// nextStepOf is the commands of the next step of the incident that force-syncs bundle.
func nextStepOf(scan scanResult, bundle string) []string {
	for _, i := range scan.Incidents {
		if i.NextStep == nil {
			continue
		}
		for _, c := range i.NextStep.Commands {
			if strings.Contains(c, "bundles.fleet.cattle.io "+bundle+" ") {
				return i.NextStep.Commands
			}
		}
	}
	return nil
}

// produceBundleFailures makes the five failures on the running fleet and returns the bundles
// that must fail, with the message each waits for.
func produceBundleFailures(t *testing.T, r *realFleet) []failBundle {
	t.Helper()
	ctx := t.Context()
	cms := r.down.Client.CoreV1().ConfigMaps
	// `kubectl create configmap` records its field manager as "kubectl-create".
	byKubectl := metav1.CreateOptions{FieldManager: "kubectl-create"}
	if _, err := cms("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop-config"}, Data: map[string]string{"LOG_LEVEL": "debug"}}, byKubectl); err != nil {
		t.Fatal(err)
	}
	if err := r.down.EnsureNamespace(ctx, "billing"); err != nil {
		t.Fatal(err)
	}
	if _, err := cms("billing").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "billing-settings"}, Data: map[string]string{"CURRENCY": "USD"}}, byKubectl); err != nil {
		t.Fatal(err)
	}
	if _, err := r.down.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, ingressNginxWebhook(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failing := []failBundle{
		{name: "shop", ns: "shop", version: "2.0.0", templates: map[string]string{"deployment.yaml": shopDeployment, "configmap.yaml": shopConfig}, wantMessage: "conflict occurred while applying"},
		{name: "billing", ns: "billing", version: "0.3.0", templates: map[string]string{"configmap.yaml": billingConfig}, wantMessage: "invalid ownership metadata"},
		{name: "orders", ns: "orders", version: "2.0.0", templates: map[string]string{"deployment.yaml": ordersV2}, wantMessage: "field is immutable"},
		{name: "monitoring", ns: "shop-monitoring", version: "0.9.0", templates: map[string]string{"servicemonitor.yaml": serviceMonitor, "dashboards.yaml": dashboards}, wantMessage: "no matches for kind"},
		{name: "storefront", ns: "storefront", version: "1.1.0", templates: map[string]string{"service.yaml": storefrontService, "ingress.yaml": fmt.Sprintf(storefrontIngressTmpl, "www.shop.example.com")}, wantMessage: "failed calling webhook"},
	}
	for _, b := range failing {
		r.updateBundle(t, b.bundle())
	}
	return failing
}

// ingressNginxWebhook is the ValidatingWebhookConfiguration the ingress-nginx chart installs,
// left behind after its Service went with the chart's uninstall.
func ingressNginxWebhook() *admissionv1.ValidatingWebhookConfiguration {
	path := "/networking/v1/ingresses"
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	return &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookConfig, Labels: map[string]string{
			"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "admission-webhook", "app.kubernetes.io/instance": "ingress-nginx",
		}},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    webhookName,
			ClientConfig:            admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: "ingress-nginx", Name: webhookService, Path: &path}},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"ingresses"}}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// bundleMessages is what the real controllers say about b: its BundleDeployment's status and
// its release's revisions.
func (r *realFleet) bundleMessages(t *testing.T, b failBundle) string {
	t.Helper()
	var out []string
	if bd := r.bdOf(t, b.name); bd != nil {
		st, _ := json.Marshal(bd.Status)
		out = append(out, "BundleDeployment status: "+string(st))
	}
	rels, _ := storage.Init(driver.NewSecrets(r.down.Client.CoreV1().Secrets(b.ns))).History(b.name)
	for _, rel := range rels {
		out = append(out, fmt.Sprintf("release %s v%d %s: %s", rel.Name, rel.Version, rel.Info.Status, rel.Info.Description))
	}
	return strings.Join(out, "\n")
}

// bundleRoot is a root cause the scan of the failures must report: its ID, the cluster it is
// on, and words its finding must carry (the object and what the message names).
type bundleRoot struct {
	id, cluster string
	words       []string
}

func judgeBundleFailures(t *testing.T, dir, now string) scanResult {
	t.Helper()
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	s := parse(t, out, errOut)
	t.Logf("scan of %s: root causes %v", dir, s.rootCauses())
	for _, want := range []bundleRoot{
		{"helm/release-failed", "down-1", []string{"shop-config", "kubectl-create"}},
		{"fleet/bundle-err-applied", "mgmt", []string{"billing-settings", "invalid ownership metadata"}},
		{"helm/release-failed", "down-1", []string{"orders", "spec.selector", "helm.force"}},
		{"crd/missing", "", []string{"ServiceMonitor", "monitoring.coreos.com"}},
		{"workload/webhook-unavailable", "down-1", []string{webhookConfig, webhookService}},
	} {
		if !rootNamed(t, out, want) {
			t.Errorf("%s: no incident whose root cause is %s naming %v", dir, want.id, want.words)
		}
	}
	if t.Failed() {
		t.Logf("scan:\n%s", out)
	}
	return s
}

// rootNamed is true when some incident's root cause has want's ID (and cluster) and its JSON
// carries every one of want's words.
func rootNamed(t *testing.T, scanJSON string, want bundleRoot) bool {
	t.Helper()
	var r struct {
		Incidents []struct {
			RootCause json.RawMessage `json:"rootCause"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(scanJSON), &r); err != nil {
		t.Fatal(err)
	}
	for _, i := range r.Incidents {
		var head struct{ ID, Cluster string }
		_ = json.Unmarshal(i.RootCause, &head)
		if head.ID != want.id || (want.cluster != "" && head.Cluster != want.cluster) {
			continue
		}
		if all(string(i.RootCause), want.words) {
			return true
		}
	}
	return false
}

func all(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func judgeBundlesHealthy(t *testing.T, dir, now string) {
	t.Helper()
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	s := parse(t, out, errOut)
	for _, id := range bundleFailureIDs() {
		if s.has(id) {
			t.Errorf("%s: %s reported on the healthy bed\n%s", dir, id, out)
		}
	}
}

func bundleFailureIDs() []string {
	return []string{"helm/release-failed", "fleet/bundle-err-applied", "fleet/bundle-not-ready", "fleet/bundle-wait-applied-stuck", "crd/missing", "workload/admission-denied", "workload/webhook-unavailable"}
}

// writeBundleExpect writes the scenario's expect.yaml and README.md, judged 16 minutes after
// the collection (past the Fleet and Helm thresholds), and returns that time. msgs, the real
// messages by bundle, is nil for the healthy bed.
func writeBundleExpect(t *testing.T, dir string, msgs map[string]string) string {
	t.Helper()
	now := time.Now().UTC().Add(16 * time.Minute).Truncate(time.Second).Format(time.RFC3339)
	what := "Five Fleet bundles on down-1, each failing its own way: shop 2.0.0 adds a ConfigMap someone made with `kubectl create` (Helm v4's server-side apply conflict with kubectl-create), billing's install meets a ConfigMap without Helm's ownership metadata (refused, not retried), orders 2.0.0 changes its Deployment's selector (field is immutable), monitoring ships a ServiceMonitor without the Prometheus operator's CRDs (no matches for kind), storefront 1.1.0 updates its Ingress under ingress-nginx's validating webhook whose Service is gone."
	expect := fmt.Sprintf("description: %q\nnow: %q\nrootCauses: [helm/release-failed, fleet/bundle-err-applied, crd/missing, workload/webhook-unavailable]\nforbid: [fleet/bundle-not-ready, workload/admission-denied]\n", "Produced by the real controllers (internal/e2e/realbundle_test.go). "+what, now)
	if msgs == nil {
		what = "The same fleet before: shop 1.4.0, orders 1.8.0 and storefront 1.0.0 deployed by the real agent and Ready."
		expect = fmt.Sprintf("description: %q\nnow: %q\nforbid: %s\n", "Produced by the real controllers (internal/e2e/realbundle_test.go). "+what, now, yamlList(bundleFailureIDs()))
	}
	readme := "# " + filepath.Base(dir) + "\n\nProduced on the test bed by the real controllers, not written by hand: `unstick collect` of the beds of\n" +
		"`TestRealFleetBundleFailures` (internal/e2e/realbundle_test.go) — the Fleet v0.16.0 controller and agent (Helm v4 inside it),\n" +
		"kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2, KWOK v0.8.0 standing in for the kubelets. Regenerate with\n" +
		"`UNSTICK_COLLECT_REAL=1 go test ./internal/e2e -run TestRealFleetBundleFailures -count=1 -timeout 30m`.\n\n" + what + "\n"
	if msgs != nil {
		readme += "\nThe test then runs the next step unstick prints for shop, billing, orders and storefront with kubectl and fails\n" +
			"unless the real agent deploys each bundle after it.\n"
		readme += "\nThe messages the real controllers wrote (BundleDeployment status and Helm release records):\n"
		for _, name := range sortedKeys(msgs) {
			readme += "\n## " + name + "\n\n```\n" + msgs[name] + "\n```\n"
		}
	}
	for name, data := range map[string]string{"expect.yaml": expect, "README.md": readme} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return now
}
