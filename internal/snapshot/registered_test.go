package snapshot_test

import (
	"context"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// A downstream cluster registered by its agent (agent-initiated registration) is known on the
// management cluster as cluster-<hash>, a name it is never called by: the bundles the real
// controllers produced are tied to it through the Fleet Cluster's spec.clientID (the downstream
// kube-system UID) and through the agent's own bundle released on the downstream cluster.
func TestDownstreamLinkedToItsAgentRegisteredFleetCluster(t *testing.T) {
	for _, dir := range []string{"agent-pod-unschedulable-taints", "agent-crd-missing", "helm-release-pending-agent-killed"} {
		t.Run(dir, func(t *testing.T) {
			snap, err := (&source.Offline{Path: "../../testdata/scenarios/real/" + dir}).Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			linked := 0
			for _, c := range snap.Clusters {
				if c.Role == snapshot.Management {
					continue
				}
				if !strings.HasPrefix(c.FleetCluster, "fleet-default/cluster-") {
					t.Errorf("downstream %s is tied to Fleet Cluster %q, want its fleet-default/cluster-<hash>", c.Name, c.FleetCluster)
				}
				linked++
			}
			if linked == 0 {
				t.Fatal("no downstream cluster in the bundle")
			}
		})
	}
}
