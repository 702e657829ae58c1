package snapshot

import (
	"encoding/json"
	"strings"
	"testing"
)

// What leaves the cluster of the Fleet controller's config and the agent's env is the check-in
// interval only: the allowlist keeps agentCheckinInterval and a CHECKIN_INTERVAL that is a Go
// duration, and drops the CA, bootstrap secret name and labels next to them.
func TestKeepLeavesOnlyTheCheckinInterval(t *testing.T) {
	secrets := []string{"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBTkFSWQ==", "fleet-bootstrap-git-auth", "us-east-3", "https://git.example.com/fleet.git"}
	cm := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "fleet-controller", "namespace": "cattle-fleet-system"},
		"data": map[string]any{"config": `{"apiServerURL":"https://rancher.example.com","apiServerCA":"` + secrets[0] +
			`","agentCheckinInterval":"1h","labels":{"region":"` + secrets[2] + `"},"bootstrap":{"repo":"` + secrets[3] + `","secret":"` + secrets[1] + `"}}`},
	}
	other := map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "fleet-controller", "namespace": "default"},
		"data":     map[string]any{"config": `{"agentCheckinInterval":"1h","apiServerCA":"` + secrets[0] + `"}`},
	}
	agent := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "fleet-agent", "namespace": "cattle-fleet-system"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "fleet-agent",
			"env": []any{
				map[string]any{"name": "CHECKIN_INTERVAL", "value": "1h0m0s"},
				map[string]any{"name": "CATTLE_TOKEN", "value": "1h"},
			},
		}}}}},
	}
	garbage := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "fleet-agent", "namespace": "cattle-fleet-local-system"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "fleet-agent",
			"env":  []any{map[string]any{"name": "CHECKIN_INTERVAL", "value": secrets[1]}},
		}}}}},
	}
	for _, o := range []map[string]any{cm, other, agent, garbage} {
		Keep(o["apiVersion"].(string), o["kind"].(string), o, map[string]int{})
	}
	if got := cm["data"].(map[string]any)["config"]; got != `{"agentCheckinInterval":"1h"}` {
		t.Errorf("fleet-controller config kept as %q", got)
	}
	if got := other["data"].(map[string]any)["config"]; got != "[redacted]" {
		t.Errorf("a config of another ConfigMap kept as %q", got)
	}
	env := func(o map[string]any) []any {
		return o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"].([]any)
	}
	if got := env(agent)[0].(map[string]any)["value"]; got != "1h0m0s" {
		t.Errorf("CHECKIN_INTERVAL kept as %v", got)
	}
	if got := env(agent)[1].(map[string]any)["value"]; got != "[redacted]" {
		t.Errorf("another env value that looks like a duration kept as %v", got)
	}
	b, _ := json.Marshal([]any{cm, other, agent, garbage})
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("%q left the cluster: %s", s, b)
		}
	}
}
