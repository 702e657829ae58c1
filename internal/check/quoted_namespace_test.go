package check

import "testing"

// The namespace of the resource a Fleet agent's Ready message summarises (its format is
// NonReadyStatus.String() of fleet pkg/apis v0.16.0; the first case as the real agent wrote
// it on the test bed): a quota refusal quoted there is in that namespace.
func TestFleetSummaryNamespace(t *testing.T) {
	for msg, want := range map[string]string{
		`deployment.apps shop/storefront [progressing,error] pods "storefront-78dc7f5b9d-vrv87" is forbidden: exceeded quota: compute-resources, requested: limits.cpu=400m,requests.cpu=400m, used: limits.cpu=800m,requests.cpu=800m, limited: limits.cpu=1,requests.cpu=1, Replicas: 2/3`: "shop",
		`statefulset.apps cattle-monitoring-system/prometheus-rancher-monitoring-prometheus [in-progress] Ready: 0/1`:                                                "cattle-monitoring-system",
		`create: failed to create: secrets "sh.helm.release.v1.shop.v1" is forbidden: unable to create new content in namespace shop because it is being terminated`: "",
	} {
		if got := fleetSummaryNamespace(msg); got != want {
			t.Errorf("%q: got %q, want %q", msg, got, want)
		}
	}
}
