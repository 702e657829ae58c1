package finding

import (
	"slices"
	"testing"
)

// An incident affects every cluster one of its findings was read on and every cluster one of
// them is about: a drain blocked on prod-eu-2, read on the management cluster, affects both.
func TestNewIncidentAttributesAffectedClusters(t *testing.T) {
	root := Finding{ID: "rancher/drain-blocked", Severity: Error, Cluster: "local", Affects: "prod-eu-2"}
	sym := Finding{ID: "rancher/upgrade-stuck", Severity: Critical, Cluster: "local", Affects: "prod-eu-2"}
	inc := NewIncident(root, []Finding{sym})
	if !slices.Equal(inc.Clusters, []string{"local", "prod-eu-2"}) {
		t.Errorf("clusters %v, want [local prod-eu-2]", inc.Clusters)
	}
	if !inc.Affects("prod-eu-2") || !inc.Affects("local") || inc.Affects("prod-eu-1") {
		t.Errorf("Affects: prod-eu-2 %v, local %v, prod-eu-1 %v", inc.Affects("prod-eu-2"), inc.Affects("local"), inc.Affects("prod-eu-1"))
	}
	if inc.Worst() != Critical {
		t.Errorf("worst %s, want critical (a symptom worse than the root cause)", inc.Worst())
	}
	if got := NewIncident(Finding{ID: "pod/crashloop", Cluster: "dev-1"}, nil).Clusters; !slices.Equal(got, []string{"dev-1"}) {
		t.Errorf("a finding with no attribution: clusters %v, want [dev-1]", got)
	}
}
