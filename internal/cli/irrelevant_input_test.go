package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unrelatedObjects is a ConfigMap and a Deployment of an application: nothing of Fleet,
// Helm, the system-upgrade-controller or Rancher.
const unrelatedObjects = `apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-settings
  namespace: shop
%[1]sdata:
  currency: EUR
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
  namespace: shop
%[1]sspec:
  replicas: 1
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers: [{name: shop, image: "registry.example.com/shop:1.4.2"}]
status: {replicas: 1, readyReplicas: 1, availableReplicas: 1, updatedReplicas: 1, observedGeneration: 1}
`

// An input with no object of Fleet, Helm, SUC or Rancher is no evidence that nothing is
// stuck: scan and preflight say so and exit 4, with or without timestamps in the input;
// --allow-incomplete accepts it.
func TestUnrelatedInputIsIncomplete(t *testing.T) {
	for name, meta := range map[string]string{
		"no timestamps":   "",
		"with timestamps": "  creationTimestamp: \"2026-11-20T08:00:00Z\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			body := strings.ReplaceAll(unrelatedObjects, "%[1]s", meta)
			if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, verb := range []string{"scan", "preflight"} {
				out, stderr, code := run(t, verb, "--from", dir, "--offline-registry")
				if code != ExitIncomplete {
					t.Errorf("%s: exit %d, want %d\n%s\n%s", verb, code, ExitIncomplete, out, stderr)
				}
				if msg := out + stderr; !strings.Contains(msg, "no object of Fleet, Helm, the system-upgrade-controller or Rancher") {
					t.Errorf("%s: the output does not say why:\n%s\n%s", verb, out, stderr)
				}
				if strings.Contains(out, "No stuck upgrades found") || strings.Contains(out, "preflight: GO") {
					t.Errorf("%s: an all-clear on unrelated input:\n%s", verb, out)
				}
				if _, stderr, code := run(t, verb, "--from", dir, "--offline-registry", "--allow-incomplete"); code != ExitOK {
					t.Errorf("%s --allow-incomplete: exit %d\n%s", verb, code, stderr)
				}
			}
		})
	}
}

// A Rancher-provisioned cluster at rest, its machine-plan Secrets as rancher-system-agent
// leaves them after a successful apply (failed-checksum "", failure-count 0, ...), is
// neither stuck nor a partial read: scan and preflight exit 0.
func TestHealthyProvisionedClusterExitsZero(t *testing.T) {
	const bundle = "../../testdata/scenarios/rancher/provisioned-healthy"
	for _, args := range [][]string{
		{"scan", "--from", bundle},
		{"preflight", "--from", bundle, "--offline-registry"},
	} {
		out, stderr, code := run(t, args...)
		if code != ExitOK {
			t.Errorf("%v: exit %d, want 0\n%s\n%s", args, code, out, stderr)
		}
		if strings.Contains(out+stderr, "not a checksum or number") {
			t.Errorf("%v: normal machine-plan data reported as an error:\n%s", args, out)
		}
	}
}
