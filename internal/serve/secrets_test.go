package serve

import (
	"testing"

	"github.com/unstick-dev/unstick/internal/source"
)

// RBAC cannot narrow `list secrets` by label, so serve's ClusterRole lets it read every
// Secret; what serve asks for is narrower, and is what it holds in memory: Helm release
// records (owner=helm) in every namespace, and Rancher's machine-plan Secrets (by type) in
// the watched namespaces. A Secret kind read without a selector would cache every token,
// key and password of the cluster.
func TestServeWatchesOnlySelectedSecrets(t *testing.T) {
	n := 0
	for _, r := range source.Resources() {
		if r.GVR.Resource != "secrets" {
			continue
		}
		n++
		switch {
		case r.Selector == "owner=helm" && r.AllNamespaces:
		case r.FieldSelector == "type=rke.cattle.io/machine-plan" && !r.AllNamespaces && !r.ClusterScoped:
		default:
			t.Errorf("Secrets read with label selector %q, field selector %q, all namespaces %v", r.Selector, r.FieldSelector, r.AllNamespaces)
		}
	}
	if n != 2 {
		t.Errorf("%d Secret reads, want the Helm records and the machine plans", n)
	}
}
