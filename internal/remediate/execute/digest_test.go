package execute

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What a controller writes after a fix (status, resourceVersion, the Deployment controller's
// revision annotation) leaves the digest as the fix left it; a change to the spec, a label or
// another annotation does not.
func TestContentDigestIgnoresOnlyWhatControllersWrite(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "fleet-agent", "namespace": "cattle-fleet-system", "resourceVersion": "10", "generation": int64(2),
				"labels":      map[string]any{"app": "fleet-agent"},
				"annotations": map[string]any{"deployment.kubernetes.io/revision": "2", "note": "x"}},
			"spec":   map[string]any{"replicas": int64(1)},
			"status": map[string]any{"readyReplicas": int64(0)},
		}}
	}
	want := contentDigest(base())
	same := map[string]func(u *unstructured.Unstructured){
		"status":          func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"readyReplicas": int64(1)} },
		"resourceVersion": func(u *unstructured.Unstructured) { u.SetResourceVersion("11") },
		"revision annotation": func(u *unstructured.Unstructured) {
			u.GetAnnotations()
			a := u.GetAnnotations()
			a["deployment.kubernetes.io/revision"] = "3"
			u.SetAnnotations(a)
		},
	}
	for name, f := range same {
		u := base()
		f(u)
		if got := contentDigest(u); got != want {
			t.Errorf("%s changed: digest moved", name)
		}
	}
	differ := map[string]func(u *unstructured.Unstructured){
		"spec":       func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"replicas": int64(2)} },
		"label":      func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "other"}) },
		"annotation": func(u *unstructured.Unstructured) { a := u.GetAnnotations(); a["note"] = "y"; u.SetAnnotations(a) },
	}
	for name, f := range differ {
		u := base()
		f(u)
		if got := contentDigest(u); got == want {
			t.Errorf("%s changed but the digest did not", name)
		}
	}
}
