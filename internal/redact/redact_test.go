package redact

import (
	"strings"
	"testing"
)

func TestLineRedactsCredentialsAndKeepsMessages(t *testing.T) {
	const s = "S3cr3tV4lue-xyz"
	for _, in := range []string{
		`GET /v1/x Authorization: Bearer ` + s,
		`"authorization":"Bearer ` + s + `"`,
		`proxy-authorization: Basic ` + s,
		`connecting with password=` + s + ` to db`,
		`"password": "` + s + `"`,
		`    token: ` + s,
		`client-key-data: ` + s,
		`msg="login" apiKey=` + s,
		`using proxy http://agent:` + s + `@proxy.internal:3128`,
		`secret=` + s,
		`registrationToken: '` + s + `'`,
	} {
		out := Line(in)
		if strings.Contains(out, s) {
			t.Errorf("Line(%q) = %q: the value is still there", in, out)
		}
		if !strings.Contains(out, Mask) {
			t.Errorf("Line(%q) = %q: no %s marker", in, out, Mask)
		}
	}
	// Messages the checks classify are left alone.
	for _, keep := range []string{
		`level=error msg="another operation (install/upgrade/rollback) is in progress"`,
		`err="[invalid bearer token, square/go-jose/jwt: validation failed, token not valid yet (nbf)]"`,
		`level=error msg="token used before issued"`,
		`Error: couldn't find key token in Secret cattle-fleet-system/fleet-agent`,
		`failed to get secret: secrets "fleet-agent" not found`,
		`Failed to pull image "ghcr.io/x/runtime:latest": failed to authorize: failed to fetch anonymous token: unexpected status: 403 Forbidden`,
		`time="2026-11-28T08:52:02Z" level=info msg="Creating clusterregistration with id 'ef32' for new token"`,
	} {
		if out := Line(keep); out != keep {
			t.Errorf("Line changed a message with no credential:\n in  %q\n out %q", keep, out)
		}
	}
}

func TestObjectRedactsValuesButKeepsControllerSettings(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{LastApplied: "{...}", "keep": "x"}},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"env": []any{
				map[string]any{"name": "HTTPS_PROXY", "value": "http://u:p@h"},
				map[string]any{"name": "SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE", "value": "rancher/kubectl:v1.30.3"},
				map[string]any{"name": "FROM_SECRET", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
			}},
		}}}},
	}
	counts := map[string]int{}
	Object("Deployment", obj, counts)
	env := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"].([]any)
	if v := env[0].(map[string]any)["value"]; v != Mask {
		t.Errorf("HTTPS_PROXY = %v", v)
	}
	if v := env[1].(map[string]any)["value"]; v != "rancher/kubectl:v1.30.3" {
		t.Errorf("the controller setting was redacted: %v", v)
	}
	if _, ok := obj["metadata"].(map[string]any)["annotations"].(map[string]any)[LastApplied]; ok {
		t.Error("last-applied-configuration kept")
	}
	if counts["environment values"] != 1 || counts["last-applied-configuration annotations"] != 1 {
		t.Errorf("counts %v", counts)
	}
	cm := map[string]any{"data": map[string]any{"SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE": "k:1", "extra": "pw"}}
	Object("ConfigMap", cm, counts)
	if d := cm["data"].(map[string]any); d["extra"] != "" || d["SYSTEM_UPGRADE_JOB_KUBECTL_IMAGE"] != "k:1" {
		t.Errorf("ConfigMap data %v", d)
	}
}
