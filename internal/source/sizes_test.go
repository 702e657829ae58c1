package source

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// collect drops a Bundle's resources and a Helm record's payload, and keeps what they weighed
// (names and numbers only) for the size checks.
func TestCollectKeepsSizes(t *testing.T) {
	bundle := map[string]any{"apiVersion": "fleet.cattle.io/v1alpha1", "kind": "Bundle",
		"metadata": map[string]any{"name": "platform-kube-prometheus-stack", "namespace": "fleet-default"},
		"spec": map[string]any{"resources": []any{
			map[string]any{"name": "monitoring/crds/crd-prometheuses.yaml", "content": strings.Repeat("x", 40000)},
			map[string]any{"name": "monitoring/values.yaml", "content": "replicas: 1\n"},
		}}}
	keepAllowed("fleet.cattle.io/v1alpha1", "Bundle", bundle, map[string]int{})
	ann := bundle["metadata"].(map[string]any)["annotations"].(map[string]any)
	s, ok := snapshot.SizesFromAnnotation(map[string]string{snapshot.SizesAnnotation: ann[snapshot.SizesAnnotation].(string)})
	if !ok || s.Resources[0].Name != "monitoring/crds/crd-prometheuses.yaml" || s.Bytes < 40000 {
		t.Fatalf("Bundle sizes %+v, %t", s, ok)
	}
	if strings.Contains(mustJSON(t, bundle), strings.Repeat("x", 100)) {
		t.Error("the Bundle's resource content was kept")
	}

	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": map[string]any{"name": "sh.helm.release.v1.web.v3", "namespace": "web"},
		"data":     map[string]any{"release": "bm90IGEgcmVsZWFzZSByZWNvcmQ="}} // "not a release record": 20 bytes
	keepAllowed("v1", "Secret", secret, map[string]int{})
	ann = secret["metadata"].(map[string]any)["annotations"].(map[string]any)
	if s, ok := snapshot.SizesFromAnnotation(map[string]string{snapshot.SizesAnnotation: ann[snapshot.SizesAnnotation].(string)}); !ok || s.Bytes != 20 {
		t.Errorf("release Secret sizes %+v, %t; want 20 bytes", s, ok)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
