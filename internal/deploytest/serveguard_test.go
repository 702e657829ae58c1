package deploytest

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/unstick-dev/unstick/internal/serve"
)

// serve in a pod checks tokens (--authn=on), and the chart gives its ServiceAccount what
// that takes (system:auth-delegator) and roles with exactly serve's paths for the readers
// the operator names.
func TestChartGuardsServe(t *testing.T) {
	objs := render(t, "cattle-system", nil)
	if args := containerArgs(t, objs); !slices.Contains(args, "--authn=on") {
		t.Errorf("serve args %v: no --authn=on", args)
	}
	// An unquoted `mode: on` in a values file is YAML's true.
	if args := containerArgs(t, render(t, "cattle-system", map[string]any{"auth": map[string]any{"mode": true}})); !slices.Contains(args, "--authn=on") {
		t.Errorf("auth.mode true: serve args %v", args)
	}
	del := findNamed(objs, "ClusterRoleBinding", "unstick-auth-delegator")
	if del == nil {
		t.Fatalf("no ClusterRoleBinding to system:auth-delegator")
	}
	if ref, _, _ := unstructured.NestedString(del.Object, "roleRef", "name"); ref != "system:auth-delegator" {
		t.Errorf("auth-delegator binding refers to %q", ref)
	}
	if subj, _, _ := unstructured.NestedSlice(del.Object, "subjects"); len(subj) != 1 || subj[0].(map[string]any)["name"] != "unstick" || subj[0].(map[string]any)["namespace"] != "cattle-system" {
		t.Errorf("auth-delegator subjects %v, want serve's ServiceAccount", subj)
	}
	for name, want := range map[string][]any{
		"unstick-reader":         {serve.AuthzURL(serve.PathDashboard), serve.AuthzURL(serve.PathFindings), serve.AuthzURL(serve.PathMetrics)},
		"unstick-metrics-reader": {serve.AuthzURL(serve.PathMetrics)},
	} {
		role := findNamed(objs, "ClusterRole", name)
		if role == nil {
			t.Fatalf("no ClusterRole %s", name)
		}
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		if len(rules) != 1 || !reflect.DeepEqual(rules[0].(map[string]any)["nonResourceURLs"], want) || !reflect.DeepEqual(rules[0].(map[string]any)["verbs"], []any{"get"}) {
			t.Errorf("ClusterRole %s rules %v, want get on %v", name, rules, want)
		}
	}
	if findNamed(objs, "ClusterRoleBinding", "unstick-metrics-reader") != nil {
		t.Errorf("a metrics-reader binding with no subject configured")
	}

	prom := map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
	withReaders := render(t, "cattle-system", map[string]any{
		"auth":           map[string]any{"metricsReaders": []any{prom}},
		"serviceMonitor": map[string]any{"enabled": true},
	})
	b := findNamed(withReaders, "ClusterRoleBinding", "unstick-metrics-reader")
	if subj, _, _ := unstructured.NestedSlice(b.Object, "subjects"); b == nil || !reflect.DeepEqual(subj, []any{prom}) {
		t.Errorf("metrics-reader binding %v", b)
	}
	eps, _, _ := unstructured.NestedSlice(find(withReaders, "ServiceMonitor").Object, "spec", "endpoints")
	if eps[0].(map[string]any)["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
		t.Errorf("the ServiceMonitor sends no token: %v", eps[0])
	}
	off := render(t, "cattle-system", map[string]any{"auth": map[string]any{"mode": "off"}, "serviceMonitor": map[string]any{"enabled": true}})
	if args := containerArgs(t, off); !slices.Contains(args, "--authn=off") {
		t.Errorf("auth.mode off: serve args %v", args)
	}
}

func containerArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	c, _, _ := unstructured.NestedSlice(find(objs, "Deployment").Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(c[0].(map[string]any), "args")
	return args
}

// Only the release's namespace and the monitoring namespaces reach serve's port by default;
// the operator's peers replace the namespaces; with no peer at all nothing may connect (an
// ingress rule without `from` would admit every pod); disabled, there is no policy.
func TestChartNetworkPolicy(t *testing.T) {
	np := find(render(t, "cattle-system", nil), "NetworkPolicy")
	if np == nil {
		t.Fatal("no NetworkPolicy by default")
	}
	sel, _, _ := unstructured.NestedStringMap(np.Object, "spec", "podSelector", "matchLabels")
	if !reflect.DeepEqual(sel, map[string]string{"app.kubernetes.io/name": "unstick", "app.kubernetes.io/instance": "unstick"}) {
		t.Errorf("podSelector %v is not serve's pods", sel)
	}
	if types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes"); !reflect.DeepEqual(types, []string{"Ingress"}) {
		t.Errorf("policyTypes %v", types)
	}
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if len(ingress) != 1 {
		t.Fatalf("ingress %v", ingress)
	}
	rule := ingress[0].(map[string]any)
	if fmt.Sprint(rule["ports"]) != "[map[port:9090 protocol:TCP]]" {
		t.Errorf("ports %v, want serve's 9090", rule["ports"])
	}
	wantFrom := []any{
		map[string]any{"podSelector": map[string]any{}},
		nsPeer("monitoring"),
		nsPeer("cattle-monitoring-system"),
	}
	if !reflect.DeepEqual(rule["from"], wantFrom) {
		t.Errorf("from %v\nwant %v", rule["from"], wantFrom)
	}

	custom := find(render(t, "cattle-system", map[string]any{"networkPolicy": map[string]any{"from": []any{nsPeer("observability")}}}), "NetworkPolicy")
	ingress, _, _ = unstructured.NestedSlice(custom.Object, "spec", "ingress")
	if from := ingress[0].(map[string]any)["from"]; !reflect.DeepEqual(from, []any{map[string]any{"podSelector": map[string]any{}}, nsPeer("observability")}) {
		t.Errorf("custom peers: from %v", from)
	}

	closed := find(render(t, "cattle-system", map[string]any{"networkPolicy": map[string]any{"allowSameNamespace": false, "from": []any{}}}), "NetworkPolicy")
	if ingress, found, _ := unstructured.NestedSlice(closed.Object, "spec", "ingress"); !found || len(ingress) != 0 {
		t.Errorf("no peers: ingress %v (found %v), want an empty list", ingress, found)
	}
	if find(render(t, "cattle-system", map[string]any{"networkPolicy": map[string]any{"enabled": false}}), "NetworkPolicy") != nil {
		t.Errorf("networkPolicy.enabled=false still renders a NetworkPolicy")
	}
}

func nsPeer(name string) map[string]any {
	return map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": name}}}
}
