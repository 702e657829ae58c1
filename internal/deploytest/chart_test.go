// Package deploytest checks what deploy/ ships: the Helm chart rendered with Helm's own Go
// packages and applied with a server-side dry-run to a real API server, the Fleet bundle
// against Fleet's fleet.yaml type, and the alert rules the chart embeds.
package deploytest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/testenv"
)

const (
	chartDir  = "../../deploy/chart/unstick"
	rulesFile = "../../deploy/prometheus/unstick-rules.yaml"
	rbacFile  = "../../deploy/rbac/scan.yaml"
)

// render renders the chart as `helm template` would, with values over the chart's defaults.
func render(t *testing.T, namespace string, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "unstick", Namespace: namespace, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatalf("rendering the chart: %v", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(files[n]), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v\n%s", n, err, files[n])
			}
			if len(m) == 0 {
				continue
			}
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
	return objs
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	sort.Strings(out)
	return out
}

func find(objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

func findNamed(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// chartObjects is how many objects the chart renders with its defaults, all of which a
// plain API server serves.
const chartObjects = 9

func TestChartRenders(t *testing.T) {
	objs := render(t, "cattle-system", nil)
	want := []string{"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "Deployment", "NetworkPolicy", "Service", "ServiceAccount"}
	if got := kinds(objs); !reflect.DeepEqual(got, want) {
		t.Errorf("default kinds %v, want %v", got, want)
	}
	dep := find(objs, "Deployment")
	c, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	container := c[0].(map[string]any)
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if container[probe] == nil {
			t.Errorf("no %s", probe)
		}
	}
	if path, _, _ := unstructured.NestedString(container, "readinessProbe", "httpGet", "path"); path != "/readyz" {
		t.Errorf("readiness probe on %q, want /readyz", path)
	}
	if req, _, _ := unstructured.NestedStringMap(container, "resources", "requests"); req["memory"] == "" || req["cpu"] == "" {
		t.Errorf("no resource requests: %v", req)
	}

	all := render(t, "cattle-system", map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}})
	if got := kinds(all); len(got) != len(want)+2 {
		t.Errorf("with ServiceMonitor and PrometheusRule: %v", got)
	}

	t.Run("the PrometheusRule holds the plain rules file's groups", func(t *testing.T) {
		plain, err := os.ReadFile(rulesFile)
		if err != nil {
			t.Fatal(err)
		}
		copied, err := os.ReadFile(chartDir + "/files/unstick-rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain, copied) {
			t.Errorf("deploy/chart/unstick/files/unstick-rules.yaml differs from deploy/prometheus/unstick-rules.yaml: copy it again")
		}
		var want map[string]any
		if err := yaml.Unmarshal(plain, &want); err != nil {
			t.Fatal(err)
		}
		pr := find(all, "PrometheusRule")
		if !reflect.DeepEqual(pr.Object["spec"], want) {
			t.Errorf("PrometheusRule spec:\n%v\nwant:\n%v", pr.Object["spec"], want)
		}
	})

	t.Run("the ClusterRole is deploy/rbac/scan.yaml's", func(t *testing.T) {
		b, err := os.ReadFile(rbacFile)
		if err != nil {
			t.Fatal(err)
		}
		var want any
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			if m["kind"] == "ClusterRole" {
				want = m["rules"]
			}
		}
		if got := findNamed(objs, "ClusterRole", "unstick-read").Object["rules"]; !reflect.DeepEqual(got, want) {
			t.Errorf("chart rules:\n%v\nscan.yaml rules:\n%v", got, want)
		}
	})
}

// The rendered chart is accepted by a real API server (server-side apply, dry-run): schemas,
// defaults, RBAC objects. The test server has no Prometheus Operator CRDs, so the
// ServiceMonitor and PrometheusRule are only rendered and compared above, not applied.
func TestChartDryRunApply(t *testing.T) {
	env := testenv.Start(t)
	ns := "unstick-system"
	objs := render(t, ns, map[string]any{"serviceMonitor": map[string]any{"enabled": true}, "prometheusRule": map[string]any{"enabled": true}, "clusterName": "prod-eu-1"})
	applied := dryRunApply(t, env, ns, objs)
	if len(applied) != chartObjects {
		t.Errorf("applied %v", applied)
	}
	// Three replicas sharing a Rancher's clusters: a StatefulSet and its headless Service
	// instead of the Deployment.
	sharded := dryRunApply(t, env, ns, render(t, ns, shardedValues()))
	if len(sharded) != chartObjects+1 || !slices.Contains(sharded, "StatefulSet/unstick") || !slices.Contains(sharded, "Service/unstick-headless") {
		t.Errorf("sharded: applied %v", sharded)
	}
}

func dryRunApply(t *testing.T, env *testenv.Env, ns string, objs []*unstructured.Unstructured) []string {
	t.Helper()
	ctx := context.Background()
	kube := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn := dynamic.NewForConfigOrDie(env.Config)
	var applied []string
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			t.Logf("skipped %s %s: the test API server does not serve %s (no Prometheus Operator CRDs)", gvk.Kind, o.GetName(), gvk.GroupVersion())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "unstick-chart-test", DryRun: []string{metav1.DryRunAll}, Force: true}); err != nil {
			t.Errorf("server-side dry-run apply of %s %s: %v", gvk.Kind, o.GetName(), err)
			continue
		}
		applied = append(applied, gvk.Kind+"/"+o.GetName())
	}
	t.Logf("dry-run applied: %v", applied)
	return applied
}
