package snapshot

import (
	"strings"
	"testing"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
)

// A Bundle is weighed by its resources, named largest first, and its status; the sizes
// survive a collect through the annotation, and an annotation that is not sizes is ignored.
func TestMeasureBundleAndAnnotation(t *testing.T) {
	b := &fleetv1.Bundle{}
	b.Spec.Resources = []fleetv1.BundleResource{
		{Name: "chart/values.yaml", Content: strings.Repeat("a", 100)},
		{Name: "chart/dashboards/cluster.json", Content: strings.Repeat("b", 5000)},
	}
	b.Status.Summary.DesiredReady = 72
	s := MeasureBundle(b)
	if s.Resources[0].Name != "chart/dashboards/cluster.json" || s.StatusBytes == 0 ||
		s.Bytes != s.StatusBytes+5000+len("chart/dashboards/cluster.json")+100+len("chart/values.yaml") {
		t.Fatalf("got %+v", s)
	}
	got, ok := SizesFromAnnotation(map[string]string{SizesAnnotation: SizesJSON(s)})
	if !ok || got.Bytes != s.Bytes || got.Resources[0] != s.Resources[0] {
		t.Errorf("round trip: got %+v, %t", got, ok)
	}
	for _, bad := range []string{`{"bytes":-1}`, `not json`, `{"bytes":1,"resources":[{"name":"x","bytes":-5}]}`} {
		if _, ok := SizesFromAnnotation(map[string]string{SizesAnnotation: bad}); ok {
			t.Errorf("accepted %q", bad)
		}
	}
}
