package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/testbed"
)

// The shop bundle of TestRealFleetStates: a Deployment whose pods ask for CPU, deployed by
// Fleet into a tenant namespace (not one of Rancher's), as application bundles are.
const (
	shopBundle    = "shop"
	shopNamespace = "shop"
	shopQuota     = "compute-resources"
	shopChartTmpl = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: storefront
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: storefront}
  template:
    metadata:
      labels: {app: storefront}
    spec:
      containers:
      - name: storefront
        image: "nginx:{{ .Values.tag }}"
        resources:
          requests: {cpu: 400m, memory: 128Mi}
          limits: {cpu: 400m, memory: 128Mi}
`
	// The finalizer prometheus-operator puts on the Prometheus objects it manages and removes
	// once it has cleaned up their status; with the operator gone nothing removes it.
	promFinalizer = "monitoring.coreos.com/status-cleanup"
)

var promGVR = schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheuses"}

func shopBundleOf(version string, values map[string]any) *fleetv1.Bundle {
	return &fleetv1.Bundle{
		ObjectMeta: metav1.ObjectMeta{Name: shopBundle, Namespace: testbed.FleetDefaultNamespace},
		Spec: fleetv1.BundleSpec{
			Resources: []fleetv1.BundleResource{
				{Name: "Chart.yaml", Content: "apiVersion: v2\nname: shop\nversion: " + version + "\n"},
				{Name: "templates/deployment.yaml", Content: shopChartTmpl},
			},
			BundleDeploymentOptions: fleetv1.BundleDeploymentOptions{
				DefaultNamespace: shopNamespace,
				Helm:             &fleetv1.HelmOptions{ReleaseName: shopBundle, Values: &fleetv1.GenericMap{Data: values}},
			},
			Targets: []fleetv1.BundleTarget{{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "real"}}}},
		},
	}
}

// TestRealFleetStates produces, with the real Fleet v0.16.0 controller and agent, kube-
// apiserver, kube-controller-manager and kube-scheduler v1.37.2 (KWOK as the kubelets), three
// states that block a Fleet rollout on one management and one downstream bed, one after the
// other, and keeps each as a scenario with its healthy twin:
//
//   - fleet/cluster-paused-bed-*: the Fleet Cluster paused, a bundle change staged but not
//     deployed (nothing is wrong: info, exit 0); then unpaused and deployed;
//   - workload/quota-exceeded-bed-*: the shop bundle's Deployment in a namespace whose
//     ResourceQuota admits two of its three pods; then the bundle asking for two;
//   - namespace/terminating-stuck-bed-*: the shop namespace deleted while a Prometheus object
//     in it holds prometheus-operator's finalizer with no operator running; the next bundle
//     version fails to be written there; then the finalizer removed, the namespace gone and
//     the bundle deployed again.
//
// It regenerates those scenarios and runs only when UNSTICK_COLLECT_REAL is set: on a loaded
// 2-core machine it takes about ten minutes.
func TestRealFleetStates(t *testing.T) {
	if os.Getenv("UNSTICK_COLLECT_REAL") == "" {
		t.Skip("regenerates the *-bed-* scenarios of fleet/cluster-paused, workload/quota-exceeded and namespace/terminating-stuck; set UNSTICK_COLLECT_REAL=1")
	}
	began := time.Now()
	r := startRealFleet(t)
	r.updateBundle(t, webBundle("1.0.0", map[string]any{"tag": "1.26"}))
	r.waitBundleReady(t, "web", "")
	t.Run("paused", func(t *testing.T) { realPausedCluster(t, r) })
	t.Run("quota", func(t *testing.T) { realQuotaExceeded(t, r) })
	t.Run("terminating", func(t *testing.T) { realNamespaceTerminating(t, r) })
	t.Logf("wall time %s", time.Since(began).Round(time.Second))
}

func realPausedCluster(t *testing.T, r *realFleet) {
	before := r.bdOf(t, "web").Spec.DeploymentID
	r.setPaused(t, true)
	r.updateBundle(t, webBundle("1.1.0", map[string]any{"tag": "1.27"}))
	waitUntil(t, "web's new version staged on the paused cluster", 2*time.Minute, func() bool {
		bd := r.bdOf(t, "web")
		return bd != nil && bd.Spec.Paused && bd.Spec.StagedDeploymentID != "" && bd.Spec.StagedDeploymentID != bd.Spec.DeploymentID && bd.Spec.DeploymentID == before
	}, r.logs)
	time.Sleep(5 * time.Second) // the agent would act now if it were going to
	bd := r.bdOf(t, "web")
	t.Logf("paused: BundleDeployment spec.paused=%t deploymentID=%s stagedDeploymentID=%s ready=%t", bd.Spec.Paused, bd.Spec.DeploymentID, bd.Spec.StagedDeploymentID, bd.Status.Ready)
	what := fmt.Sprintf("The Fleet Cluster %s/%s was paused (spec.paused: true, as `kubectl patch --type merge -p '{\"spec\":{\"paused\":true}}'` sets it), then the web bundle's chart moved from 1.0.0 to 1.1.0. The controller staged the new content and left the old: the BundleDeployment has spec.paused: true, stagedDeploymentID `%s` and deploymentID `%s`, and stays Ready at the old release. Nothing is broken.", r.agent.ClusterNamespace, r.agent.ClusterName, bd.Spec.StagedDeploymentID, bd.Spec.DeploymentID)
	dir := collectState(t, r.kubeconfig, "fleet", "cluster-paused-bed-positive")
	now := writeStateExpect(t, dir, "TestRealFleetStates", what, "findings: [fleet/cluster-paused]\nforbid: [fleet/bundle-wait-applied-stuck, fleet/bundle-not-ready, fleet/bundle-err-applied]\nmaxSeverity: info\n")
	out, errOut, code := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	if s := parse(t, out, errOut); !s.has("fleet/cluster-paused") || code != 0 {
		t.Errorf("the paused cluster: exit %d (want 0), fleet/cluster-paused reported %t\n%s", code, s.has("fleet/cluster-paused"), out)
	}

	r.setPaused(t, false)
	r.waitBundleReady(t, "web", before)
	what = "The same bed after the Fleet Cluster was unpaused: the web bundle's 1.1.0 deployed and its BundleDeployment Ready at the new deploymentID."
	dir = collectState(t, r.kubeconfig, "fleet", "cluster-paused-bed-healthy")
	now = writeStateExpect(t, dir, "TestRealFleetStates", what, "forbid: [fleet/cluster-paused, fleet/bundle-wait-applied-stuck, fleet/bundle-not-ready]\nmaxSeverity: info\n")
	stateScanForbids(t, dir, now, "fleet/cluster-paused")
}

func realQuotaExceeded(t *testing.T, r *realFleet) {
	ctx := t.Context()
	if err := r.down.EnsureNamespace(ctx, shopNamespace); err != nil {
		t.Fatal(err)
	}
	r.setQuota(t, "1")
	r.updateBundle(t, shopBundleOf("2.3.0", map[string]any{"tag": "1.27", "replicas": 3}))
	var refused string
	waitUntil(t, "the third storefront pod refused by the quota and Fleet reporting the bundle not ready", 3*time.Minute, func() bool {
		refused = r.downEvent(t, shopNamespace, "FailedCreate", "exceeded quota")
		bd := r.bdOf(t, shopBundle)
		return refused != "" && bd != nil && !bd.Status.Ready && bd.Status.AppliedDeploymentID == bd.Spec.DeploymentID && len(bd.Status.NonReadyStatus) > 0
	}, r.logs)
	time.Sleep(20 * time.Second) // let the agent's status settle on the Deployment's conditions
	bd := r.bdOf(t, shopBundle)
	t.Logf("quota: event %q; BundleDeployment status %s", refused, bdStatusJSON(bd))
	what := fmt.Sprintf("The shop bundle (a Deployment storefront, 3 replicas of 400m CPU) deployed by Fleet into namespace %s, whose ResourceQuota %s allows requests.cpu 1: the ReplicaSet controller created two pods and was refused the third. The refusal as kube-controller-manager recorded it: `%s`. The BundleDeployment: %s.", shopNamespace, shopQuota, refused, bdSummary(bd))
	dir := collectState(t, r.kubeconfig, "workload", "quota-exceeded-bed-positive")
	now := writeStateExpect(t, dir, "TestRealFleetStates", what, "rootCauses: [workload/quota-exceeded]\n")
	stateScanRoots(t, dir, now, "workload/quota-exceeded", shopQuota)

	// The way out that does not wait on the ReplicaSet controller's back-off (up to about 17
	// minutes after many refusals, so a raised quota can take that long to be used): the
	// bundle asks for what the quota allows.
	r.updateBundle(t, shopBundleOf("2.3.1", map[string]any{"tag": "1.27", "replicas": 2}))
	r.waitBundleReady(t, shopBundle, bd.Spec.DeploymentID)
	what = "The same bed after the shop bundle's next version (2.3.1) asked for 2 replicas, which the ResourceQuota " + shopQuota + " admits: the Deployment available, the bundle Ready. The ReplicaSet's refusals stay among the namespace's events."
	dir = collectState(t, r.kubeconfig, "workload", "quota-exceeded-bed-healthy")
	now = writeStateExpect(t, dir, "TestRealFleetStates", what, "forbid: [workload/quota-exceeded, fleet/bundle-not-ready]\n")
	stateScanForbids(t, dir, now, "workload/quota-exceeded")
}

func realNamespaceTerminating(t *testing.T, r *realFleet) {
	ctx := t.Context()
	dyn := r.promObject(t)
	if err := r.down.Client.CoreV1().Namespaces().Delete(ctx, shopNamespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var conds string
	waitUntil(t, "namespace shop Terminating with the Prometheus finalizer remaining", 3*time.Minute, func() bool {
		conds = r.nsConditions(t, shopNamespace, corev1.NamespaceFinalizersRemaining)
		return conds != ""
	}, r.logs)
	r.updateBundle(t, shopBundleOf("2.4.0", map[string]any{"tag": "1.28", "replicas": 2}))
	var quoted string
	waitUntil(t, "the shop bundle's new version refused in the terminating namespace", 3*time.Minute, func() bool {
		bd := r.bdOf(t, shopBundle)
		quoted = bdQuoting(bd, "because it is being terminated")
		return quoted != ""
	}, r.logs)
	bd := r.bdOf(t, shopBundle)
	t.Logf("terminating: namespace conditions %s; BundleDeployment status %s", conds, bdStatusJSON(bd))
	what := fmt.Sprintf("The namespace %s was deleted while a Prometheus object in it (monitoring.coreos.com/v1, its CRD installed, no prometheus-operator running) held the finalizer %s: the namespace controller deleted everything else and left the namespace Terminating with %s. The shop bundle's next version (2.4.0) then failed: the BundleDeployment quotes `%s`.", shopNamespace, promFinalizer, conds, quoted)
	dir := collectState(t, r.kubeconfig, "namespace", "terminating-stuck-bed-positive")
	now := writeStateExpect(t, dir, "TestRealFleetStates", what, "rootCauses: [namespace/terminating-stuck]\nfindings: [fleet/bundle-err-applied]\n")
	stateScanRoots(t, dir, now, "namespace/terminating-stuck", promFinalizer)

	// What an operator does once the operator is gone for good: remove the finalizer. The
	// namespace goes; Fleet's agent retries and creates it again with the release.
	patch := []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)
	if _, err := dyn.Resource(promGVR).Namespace(shopNamespace).Patch(ctx, "k8s", types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Fleet's agent retries within a second of the namespace going, so the namespace may
	// already be back (a new one, not Terminating) when this looks.
	waitUntil(t, "namespace shop gone or created again", 2*time.Minute, func() bool {
		ns, err := r.down.Client.CoreV1().Namespaces().Get(ctx, shopNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp == nil
	}, r.logs)
	refused := r.bdOf(t, shopBundle).Spec.DeploymentID
	r.forceSync(t, shopBundle)
	r.waitBundleReady(t, shopBundle, refused)
	what = "The same bed after the finalizer was removed from the Prometheus object: the namespace " + shopNamespace + " deleted, then created again by Fleet's agent with the shop bundle's 2.4.0, Ready."
	dir = collectState(t, r.kubeconfig, "namespace", "terminating-stuck-bed-healthy")
	now = writeStateExpect(t, dir, "TestRealFleetStates", what, "forbid: [namespace/terminating-stuck, fleet/bundle-err-applied]\n")
	stateScanForbids(t, dir, now, "namespace/terminating-stuck")
}

// bdOf is the named bundle's BundleDeployment for the downstream cluster.
func (r *realFleet) bdOf(t *testing.T, bundle string) *fleetv1.BundleDeployment {
	t.Helper()
	var l fleetv1.BundleDeploymentList
	if err := r.fleet.Client.List(t.Context(), &l, client.InNamespace(r.agent.Namespace), client.MatchingLabels{"fleet.cattle.io/bundle-name": bundle}); err != nil || len(l.Items) == 0 {
		return nil
	}
	return &l.Items[0]
}

// waitBundleReady waits until the bundle's BundleDeployment is Ready at a deploymentID other
// than notID (the one before the change waited for), not paused and with nothing staged: the
// controller moves spec.deploymentID a moment after the change, and until then the old
// deployment is still Ready.
func (r *realFleet) waitBundleReady(t *testing.T, bundle, notID string) {
	t.Helper()
	waitUntil(t, "bundle "+bundle+" Ready at a new deploymentID", 4*time.Minute, func() bool {
		bd := r.bdOf(t, bundle)
		return bdReady(bd) && bd.Spec.DeploymentID != notID && !bd.Spec.Paused &&
			(bd.Spec.StagedDeploymentID == "" || bd.Spec.StagedDeploymentID == bd.Spec.DeploymentID)
	}, func() string { return bdStatusJSON(r.bdOf(t, bundle)) + "\n" + r.logs() })
}

// setPaused sets the Fleet Cluster's spec.paused as `kubectl patch` does.
func (r *realFleet) setPaused(t *testing.T, paused bool) {
	t.Helper()
	fc := &fleetv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: r.agent.ClusterNamespace, Name: r.agent.ClusterName}}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"paused":%t}}`, paused)))
	if err := r.fleet.Client.Patch(t.Context(), fc, patch, client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatal(err)
	}
}

// forceSync bumps the bundle's forceSyncGeneration, as Fleet's "Force Update" does.
func (r *realFleet) forceSync(t *testing.T, bundle string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var b fleetv1.Bundle
		if err := r.fleet.Client.Get(t.Context(), client.ObjectKey{Namespace: testbed.FleetDefaultNamespace, Name: bundle}, &b); err != nil {
			return err
		}
		b.Spec.ForceSyncGeneration++
		return r.fleet.Client.Update(t.Context(), &b)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setQuota creates or updates the shop namespace's ResourceQuota with requests.cpu cpu.
func (r *realFleet) setQuota(t *testing.T, cpu string) {
	t.Helper()
	qs := r.down.Client.CoreV1().ResourceQuotas(shopNamespace)
	hard := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse(cpu), corev1.ResourceLimitsCPU: resource.MustParse(cpu),
		corev1.ResourceRequestsMemory: resource.MustParse("4Gi"), corev1.ResourceLimitsMemory: resource.MustParse("4Gi")}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q, err := qs.Get(t.Context(), shopQuota, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = qs.Create(t.Context(), &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: shopQuota, Namespace: shopNamespace}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		q.Spec.Hard = hard
		_, err = qs.Update(t.Context(), q, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// downEvent is the message of the newest downstream event in ns with reason whose message
// contains substr.
func (r *realFleet) downEvent(t *testing.T, ns, reason, substr string) string {
	l, err := r.down.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for i := len(l.Items) - 1; i >= 0; i-- {
		if e := l.Items[i]; e.Reason == reason && strings.Contains(e.Message, substr) {
			return e.Message
		}
	}
	return ""
}

// promObject installs a Prometheus CRD downstream (as the monitoring chart's CRD chart does)
// and creates a Prometheus object in the shop namespace carrying prometheus-operator's
// finalizer, as the operator leaves it; no operator runs to remove it.
func (r *realFleet) promObject(t *testing.T) dynamic.Interface {
	t.Helper()
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(r.down.Config)
	if err != nil {
		t.Fatal(err)
	}
	crd := unstructuredOf(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prometheuses.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: Prometheus, listKind: PrometheusList, plural: prometheuses, singular: prometheus, shortNames: [prom]}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	prom := unstructuredOf(t, `apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: k8s
  namespace: shop
  finalizers: [`+promFinalizer+`]
spec: {replicas: 1, serviceMonitorSelector: {}}
`)
	waitUntil(t, "the Prometheus CRD served", time.Minute, func() bool {
		_, err := dyn.Resource(promGVR).Namespace(shopNamespace).Create(ctx, prom, metav1.CreateOptions{})
		return err == nil
	}, r.logs)
	return dyn
}

func unstructuredOf(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return &u
}

// nsConditions renders the namespace's True conditions as "Type (message)" once it has the
// condition want True, else "".
func (r *realFleet) nsConditions(t *testing.T, name string, want corev1.NamespaceConditionType) string {
	ns, err := r.down.Client.CoreV1().Namespaces().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	var out []string
	found := false
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, fmt.Sprintf("%s (`%s`)", c.Type, c.Message))
			found = found || c.Type == want
		}
	}
	if !found {
		return ""
	}
	return strings.Join(out, " and ")
}

// bdQuoting is the first BundleDeployment condition message or non-ready summary containing substr.
func bdQuoting(bd *fleetv1.BundleDeployment, substr string) string {
	if bd == nil {
		return ""
	}
	for _, c := range bd.Status.Conditions {
		if strings.Contains(c.Message, substr) {
			return c.Message
		}
	}
	for _, n := range bd.Status.NonReadyStatus {
		if strings.Contains(n.Summary.String(), substr) {
			return n.Summary.String()
		}
	}
	return ""
}

func bdStatusJSON(bd *fleetv1.BundleDeployment) string {
	if bd == nil {
		return "<no BundleDeployment>"
	}
	b, _ := json.Marshal(bd.Status)
	return string(b)
}

// bdSummary says what Fleet's BundleDeployment shows: its conditions not True and its
// non-ready resources' summaries.
func bdSummary(bd *fleetv1.BundleDeployment) string {
	var parts []string
	for _, c := range bd.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			parts = append(parts, fmt.Sprintf("condition %s=%s `%s`", c.Type, c.Status, c.Message))
		}
	}
	for _, n := range bd.Status.NonReadyStatus {
		parts = append(parts, fmt.Sprintf("nonReadyStatus %s %s/%s `%s`", n.Kind, n.Namespace, n.Name, n.Summary.String()))
	}
	return strings.Join(parts, "; ")
}

// collectState runs `unstick collect` of every context of kubeconfig into
// testdata/scenarios/<area>/<name> (UNSTICK_COLLECT_REAL is set whenever these tests run).
func collectState(t *testing.T, kubeconfig, area, name string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "testdata", "scenarios", area, name)
	_ = os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Dir(dir), 0o755)
	if out, errOut, code := run(t, "collect", "--kubeconfig", kubeconfig, "--all-contexts", "--to", dir, "-q"); code != 0 {
		t.Fatalf("collect exit %d\n%s%s", code, out, errOut)
	}
	return dir
}

// writeStateExpect writes the scenario's expect.yaml (judged 16 minutes after the collection:
// past the 15-minute thresholds of Fleet's not-ready bundles and namespace.terminatingAfter)
// and README.md, and returns that time.
func writeStateExpect(t *testing.T, dir, test, what, expect string) string {
	t.Helper()
	return writeStateExpectAt(t, dir, test, what, expect, 16*time.Minute)
}

func writeStateExpectAt(t *testing.T, dir, test, what, expect string, after time.Duration) string {
	t.Helper()
	now := time.Now().UTC().Add(after).Truncate(time.Second).Format(time.RFC3339)
	file := map[string]string{"TestRealFleetStates": "realstate_test.go", "TestRealSUCPlanInvalid": "realsucinvalid_test.go"}[test]
	desc := "Produced on the test bed by the real controllers (internal/e2e/" + file + "). " + what
	exp := fmt.Sprintf("description: %q\nnow: %q\n%s", desc, now, expect)
	readme := "# " + filepath.Base(dir) + "\n\nProduced on the test bed by the real controllers, not written by hand: `unstick collect` of the bed of\n" +
		"`" + test + "` (internal/e2e/" + file + ") — " + stateBedOf(test) + "; KWOK v0.8.0 stands in for the kubelets (no container\n" +
		"runs, so there are no container logs). Regenerate with\n" +
		"`UNSTICK_COLLECT_REAL=1 go test ./internal/e2e -run '^" + test + "$' -count=1 -timeout 30m`.\n\n" + what + "\n"
	for name, data := range map[string]string{"expect.yaml": exp, "README.md": readme} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return now
}

func stateBedOf(test string) string {
	if test == "TestRealSUCPlanInvalid" {
		return "system-upgrade-controller v0.20.1, kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2"
	}
	return "the Fleet v0.16.0 controller and agent (Helm v4), kube-apiserver, kube-controller-manager and kube-scheduler v1.37.2\non a management and a downstream bed"
}

// stateScanRoots judges the collected bundle offline at now and wants root as an incident's
// root cause, with named in its report.
func stateScanRoots(t *testing.T, dir, now, root, named string) {
	t.Helper()
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	s := parse(t, out, errOut)
	if !slices.Contains(s.rootCauses(), root) {
		t.Errorf("%s: want %s as a root cause; got %v\n%s", dir, root, s.rootCauses(), out)
	}
	if !strings.Contains(out, named) {
		t.Errorf("%s: the report does not name %q\n%s", dir, named, out)
	}
}

func stateScanForbids(t *testing.T, dir, now string, ids ...string) {
	t.Helper()
	out, errOut, _ := run(t, "scan", "--from", dir, "-o", "json", "-q", "--now", now)
	s := parse(t, out, errOut)
	for _, id := range ids {
		if s.has(id) {
			t.Errorf("%s: %s reported on the healthy bed\n%s", dir, id, out)
		}
	}
}
