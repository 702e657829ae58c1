package snapshot

import (
	"encoding/json"
	"testing"
)

// Events are keyed by the API group of the object they are about: Rancher gives a provisioned
// cluster's Fleet Cluster, provisioning Cluster and CAPI Cluster one namespace and name, and an
// event about one of them must not be read as an event about another.
func TestEventsForKeepsGroupsApart(t *testing.T) {
	b := NewBuilder()
	add := func(obj map[string]any) {
		t.Helper()
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var h Header
		_ = json.Unmarshal(raw, &h)
		if err := b.AddJSON("local", "events.yaml:1", &h, raw); err != nil {
			t.Fatal(err)
		}
	}
	for _, av := range []string{"fleet.cattle.io/v1alpha1", "provisioning.cattle.io/v1", "cluster.x-k8s.io/v1beta1"} {
		add(map[string]any{"apiVersion": av, "kind": "Cluster", "metadata": map[string]any{"name": "prod-eu-2", "namespace": "fleet-default"}})
	}
	// core/v1 form, as client-go's recorder writes it for a typed object.
	add(map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"name": "prod-eu-2.181a2b3c4d5e6f70", "namespace": "fleet-default"},
		"involvedObject": map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster", "namespace": "fleet-default", "name": "prod-eu-2", "uid": "6d1f"},
		"reason":         "TopologyCreate", "message": "Created \"RKEControlPlane/prod-eu-2\"", "type": "Normal", "count": 1,
		"lastTimestamp": "2026-11-28T09:00:00Z"})
	// events.k8s.io/v1 form: the object is in regarding.
	add(map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event",
		"metadata":  map[string]any{"name": "prod-eu-2.181a2b3c4d5e6f71", "namespace": "fleet-default"},
		"regarding": map[string]any{"apiVersion": "provisioning.cattle.io/v1", "kind": "Cluster", "namespace": "fleet-default", "name": "prod-eu-2", "uid": "7e20"},
		"reason":    "Updated", "note": "spec.kubernetesVersion v1.31.4+rke2r1", "type": "Normal",
		"eventTime":           "2026-11-28T09:05:00.000000Z",
		"reportingController": "rancher", "reportingInstance": "rancher-7c9f", "action": "Update"})
	// The kubelet's Node events carry no apiVersion: a reference it builds by hand.
	add(map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"name": "prod-eu-2-worker-6mq2r.181a2b3c4d5e6f72", "namespace": "default"},
		"involvedObject": map[string]any{"kind": "Node", "name": "prod-eu-2-worker-6mq2r", "uid": "prod-eu-2-worker-6mq2r"},
		"reason":         "NodeNotSchedulable", "message": "Node prod-eu-2-worker-6mq2r status is now: NodeNotSchedulable", "type": "Normal", "count": 1,
		"lastTimestamp": "2026-11-28T09:10:00Z"})
	c := b.Build().Cluster("local")

	reasons := func(group, kind, ns, name string) []string {
		var out []string
		for _, e := range c.EventsFor(group, kind, ns, name) {
			out = append(out, e.Reason)
		}
		return out
	}
	for _, tc := range []struct {
		group, kind, ns, name string
		want                  []string
	}{
		{"cluster.x-k8s.io", "Cluster", "fleet-default", "prod-eu-2", []string{"TopologyCreate"}},
		{"provisioning.cattle.io", "Cluster", "fleet-default", "prod-eu-2", []string{"Updated"}},
		{"fleet.cattle.io", "Cluster", "fleet-default", "prod-eu-2", nil},
		{"management.cattle.io", "Cluster", "fleet-default", "prod-eu-2", nil},
		{"", "Node", "", "prod-eu-2-worker-6mq2r", []string{"NodeNotSchedulable"}},
		{"management.cattle.io", "Node", "", "prod-eu-2-worker-6mq2r", nil},
	} {
		got := reasons(tc.group, tc.kind, tc.ns, tc.name)
		if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("EventsFor(%q, %s, %s, %s) = %v, want %v", tc.group, tc.kind, tc.ns, tc.name, got, tc.want)
		}
	}
	for _, e := range c.Events {
		if e.Reason == "NodeNotSchedulable" && EventGroup(e) != "" {
			t.Errorf("EventGroup of the kubelet's Node event = %q, want core", EventGroup(e))
		}
	}
}
