package deploytest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// shardedValues are the values of three serve replicas sharing a Rancher's clusters.
func shardedValues() map[string]any {
	return map[string]any{
		"replicas": 3,
		"rancher": map[string]any{
			"url":         "https://rancher.example.com",
			"tokenSecret": map[string]any{"name": "unstick-rancher-token", "key": "token"},
			"caConfigMap": "rancher-ca",
		},
		"serviceMonitor": map[string]any{"enabled": true},
	}
}

// With replicas above 1 the chart runs a StatefulSet whose pods take their shard from their
// ordinal (UNSTICK_SHARDS and the hostname <name>-<i>) behind a headless Service that the
// ServiceMonitor leaves out (its endpoints are the same pods: each would be scraped twice).
func TestChartShardedStatefulSet(t *testing.T) {
	objs := render(t, "cattle-system", shardedValues())
	if find(objs, "Deployment") != nil {
		t.Error("a Deployment besides the StatefulSet")
	}
	sts := find(objs, "StatefulSet")
	if sts == nil {
		t.Fatalf("no StatefulSet: %v", kinds(objs))
	}
	if n, _, _ := unstructured.NestedFieldNoCopy(sts.Object, "spec", "replicas"); fmt.Sprint(n) != "3" {
		t.Errorf("replicas %v, want 3", n)
	}
	svcName, _, _ := unstructured.NestedString(sts.Object, "spec", "serviceName")
	headless := findNamed(objs, "Service", svcName)
	if headless == nil {
		t.Fatalf("the StatefulSet's serviceName %q is not rendered", svcName)
	}
	if ip, _, _ := unstructured.NestedString(headless.Object, "spec", "clusterIP"); ip != "None" {
		t.Errorf("%s: clusterIP %q, want None (headless)", svcName, ip)
	}
	c, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "containers")
	container := c[0].(map[string]any)
	args, _, _ := unstructured.NestedStringSlice(container, "args")
	if !containsAll(args, "--rancher-url=https://rancher.example.com", "--certificate-authority=/etc/unstick/rancher-ca/ca.crt") {
		t.Errorf("args %v lack --rancher-url or --certificate-authority", args)
	}
	env, _, _ := unstructured.NestedSlice(container, "env")
	if v := envValue(env, "UNSTICK_SHARDS"); v != "3" {
		t.Errorf("UNSTICK_SHARDS=%q, want 3", v)
	}
	if ref := envSecret(env, "RANCHER_TOKEN"); ref != "unstick-rancher-token/token" {
		t.Errorf("RANCHER_TOKEN from %q, want the Secret unstick-rancher-token key token", ref)
	}
	sm := find(objs, "ServiceMonitor")
	sel, _, _ := unstructured.NestedFieldNoCopy(sm.Object, "spec", "selector")
	if matches(sel.(map[string]any), headless.GetLabels()) {
		t.Errorf("the ServiceMonitor selects the headless Service %s too: each pod would be scraped twice", svcName)
	}
	if !matches(sel.(map[string]any), findNamed(objs, "Service", "unstick").GetLabels()) {
		t.Error("the ServiceMonitor does not select the Service")
	}
	if _, err := renderErr("cattle-system", map[string]any{"replicas": 2}); err == nil || !strings.Contains(err.Error(), "rancher.url") {
		t.Errorf("replicas 2 without rancher.url: %v, want an error naming rancher.url", err)
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func envValue(env []any, name string) string {
	for _, e := range env {
		m := e.(map[string]any)
		if m["name"] == name {
			v, _ := m["value"].(string)
			return v
		}
	}
	return ""
}

func envSecret(env []any, name string) string {
	for _, e := range env {
		m := e.(map[string]any)
		if m["name"] != name {
			continue
		}
		n, _, _ := unstructured.NestedString(m, "valueFrom", "secretKeyRef", "name")
		k, _, _ := unstructured.NestedString(m, "valueFrom", "secretKeyRef", "key")
		return n + "/" + k
	}
	return ""
}

// matches applies a LabelSelector (matchLabels, and matchExpressions with In/NotIn) to labels.
func matches(sel map[string]any, labels map[string]string) bool {
	ml, _, _ := unstructured.NestedStringMap(sel, "matchLabels")
	for k, v := range ml {
		if labels[k] != v {
			return false
		}
	}
	exprs, _, _ := unstructured.NestedSlice(sel, "matchExpressions")
	for _, e := range exprs {
		m := e.(map[string]any)
		vals, _, _ := unstructured.NestedStringSlice(m, "values")
		v, has := labels[m["key"].(string)]
		in := has && slices.Contains(vals, v)
		switch m["operator"] {
		case "In":
			if !in {
				return false
			}
		case "NotIn":
			if in {
				return false
			}
		}
	}
	return true
}

// renderErr renders the chart and returns Helm's error rather than failing the test.
func renderErr(namespace string, values map[string]any) (map[string]string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "unstick", Namespace: namespace, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, vals)
}
