package snapshot

import (
	"encoding/json"
	"testing"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
)

// Rancher gives a provisioned cluster's Fleet Cluster, provisioning Cluster and CAPI Cluster
// the same namespace and name: all three must survive, and the Fleet one stays where the
// existing callers (Get("Cluster", ...)) look.
func TestSameNamedClustersOfSeveralGroups(t *testing.T) {
	b := NewBuilder()
	for _, av := range []string{"fleet.cattle.io/v1alpha1", "provisioning.cattle.io/v1", "cluster.x-k8s.io/v1beta2", "management.cattle.io/v3"} {
		raw, _ := json.Marshal(map[string]any{"apiVersion": av, "kind": "Cluster", "metadata": map[string]any{"name": "prod", "namespace": "fleet-default"}})
		var h Header
		_ = json.Unmarshal(raw, &h)
		if err := b.AddJSON("local", "f.yaml:1", &h, raw); err != nil {
			t.Fatal(err)
		}
	}
	c := b.Build().Cluster("local")
	if _, ok := c.Get("Cluster", "fleet-default", "prod").(*fleetv1.Cluster); !ok {
		t.Errorf("Get(Cluster) = %T, want the Fleet Cluster", c.Get("Cluster", "fleet-default", "prod"))
	}
	if len(c.FleetClusters) != 1 || len(c.Other) != 3 {
		t.Fatalf("fleet %d, other %d; want 1 and 3", len(c.FleetClusters), len(c.Other))
	}
	for _, g := range []string{"provisioning.cattle.io", "cluster.x-k8s.io", "management.cattle.io"} {
		if len(c.OtherOf(g, "Cluster")) != 1 {
			t.Errorf("OtherOf(%s) = %d objects", g, len(c.OtherOf(g, "Cluster")))
		}
		if u, ok := c.GetRef(g+"/v1", "Cluster", "fleet-default", "prod").(*Unstructured); !ok || groupOf(u.APIVersion) != g {
			t.Errorf("GetRef(%s) = %v", g, c.GetRef(g+"/v1", "Cluster", "fleet-default", "prod"))
		}
	}
}
