package check

import "testing"

// The resource an agent's 404 names, from the real Fleet v0.16.0 agent's lines (see
// internal/e2e/realcrd_test.go, which made them).
func TestMissingResourceRealAgentLines(t *testing.T) {
	for line, want := range map[string]string{
		// The running agent's informer after the CRD was deleted.
		`{"level":"error","ts":"2026-12-01T21:36:37Z","logger":"controller-runtime.cache.UnhandledError","msg":"Failed to watch","reflector":"k8s.io/client-go@v0.36.2/tools/cache/reflector.go:343","type":"*v1alpha1.BundleDeployment","error":"failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource (get bundledeployments.fleet.cattle.io)"}`: "bundledeployments.fleet.cattle.io",
		// The restarted agent's credential check, through a wrangler client that labels the
		// resource with meta.k8s.io.
		`time="2026-12-01T21:37:30Z" level=error msg="Current credential failed, falling back to reregistering: the server could not find the requested resource (get bundledeployments.meta.k8s.io)"`: "bundledeployments.fleet.cattle.io",
		`the server could not find the requested resource (get widgets.meta.k8s.io)`: "widgets",
	} {
		if got := missingResource(line); got != want {
			t.Errorf("missingResource(%.80q…) = %q, want %q", line, got, want)
		}
	}
}
