package redact

import (
	"encoding/base64"
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

// Every form a credential takes in free text that a cluster really produces: flags, bare
// "token X", docker config JSON, Rancher's auth header and session cookie, cookies, URLs,
// PEM blocks and base64 that decodes to one of those.
func TestStringRedactsEveryForm(t *testing.T) {
	const s = "S3cr3tV4lue-xyz-0042"
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	for _, in := range []string{
		`kubectl get pods --token ` + s,
		`kubectl get pods --token=` + s,
		`/usr/bin/agent --client-secret ` + s + ` --v=2`,
		`registering with token ` + s,
		`K3S_TOKEN ` + s,
		`{"auths":{"registry.example.test":{"auth":"` + b64("puller:"+s) + `"}}}`,
		`"auth": "` + s + `"`,
		`GET /v3/clusters X-API-Auth-Header: Bearer ` + s,
		`X-Api-Auth-Header: ` + s,
		`Cookie: CSRF=abc; R_SESS=` + s,
		`set-cookie: R_SESS=` + s + `; Path=/; HttpOnly`,
		`R_SESS=` + s,
		`level=debug msg="session" session_id=` + s,
		`X-Auth-Token: ` + s,
		`fetching https://admin:` + s + `@rancher.example.com/v3`,
		`https://bucket.s3.amazonaws.com/snap.zip?X-Amz-Credential=AKIA&X-Amz-Signature=` + s,
		`key: -----BEGIN RSA PRIVATE KEY-----MIIEo` + s + `-----END RSA PRIVATE KEY-----`,
		`-----BEGIN PRIVATE KEY-----` + s,
		`config ` + b64("apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: "+s+"\n"),
		`basic creds ` + b64("admin:"+s),
		`docker config ` + b64(`{"auths":{"r.example":{"auth":"`+b64("u:"+s)+`"}}}`),
	} {
		out := String(in)
		if strings.Contains(out, s) || strings.Contains(out, b64("puller:"+s)) {
			t.Errorf("String(%q) = %q: the value is still there", in, out)
		}
		if !strings.Contains(out, Mask) {
			t.Errorf("String(%q) = %q: no %s marker", in, out, Mask)
		}
		if again := String(out); again != out {
			t.Errorf("String is not idempotent:\n once  %q\n twice %q", out, again)
		}
	}
}

func TestLinesMaskAPEMBlockAcrossLines(t *testing.T) {
	lines := Lines([]string{
		"level=info msg=loading",
		"-----BEGIN EC PRIVATE KEY-----",
		"MHcCAQEEIOx1secretbody",
		"AwEHoUQDQgAE",
		"-----END EC PRIVATE KEY----- loaded",
		"level=info msg=done",
	})
	got := strings.Join(lines, "\n")
	if strings.Contains(got, "secretbody") || strings.Contains(got, "AwEHoUQDQgAE") {
		t.Errorf("the key body is still there:\n%s", got)
	}
	if lines[0] != "level=info msg=loading" || lines[5] != "level=info msg=done" {
		t.Errorf("lines around the block changed:\n%s", got)
	}
	if multi := String("cert:\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\nok"); strings.Contains(multi, "MIIB") {
		t.Errorf("String kept a PEM body: %q", multi)
	}
}

// What the checks classify survives: messages that name a token or a key without holding one,
// image references, hashes and IDs that happen to be valid base64.
func TestStringKeepsWhatChecksRead(t *testing.T) {
	for _, keep := range []string{
		`Back-off pulling image "registry.example.test/rancher/fleet-agent:v0.16.0"`,
		`Failed to pull image "rancher/kubectl:v1.30.3": rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/rancher/kubectl:v1.30.3": failed to resolve reference "docker.io/rancher/kubectl:v1.30.3": docker.io/rancher/kubectl:v1.30.3: not found`,
		`Job system-upgrade/apply-server-plan-on-node-1-with-3f1c5e0b8d failed on Node node-1: BackoffLimitExceeded: Job has reached the specified backoff limit`,
		`latestHash 3f1c5e0b8d2a7e4c9b6f1a0d5e8c7b2a4f6e9d1c3b5a7e9f1d3c5b7a`,
		`plan.upgrade.cattle.io/server-plan=6a7e30c2b1f1d9e5c4a8b7f6e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8`,
		`Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress`,
		`error: unknown flag: --delete-emptydir-data`,
		`drain --ignore-daemonsets --force --timeout 900s --delete-emptydir-data`,
		`x509: certificate signed by unknown authority`,
		`Unauthorized: the server has asked for the client to provide credentials`,
		`contents.fleet.cattle.io "s-4e6d2b1c9a8f7e5d3c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1" not found`,
		`the session was closed by the server`,
		`0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.`,
	} {
		if out := String(keep); out != keep {
			t.Errorf("String changed a message with no credential:\n in  %q\n out %q", keep, out)
		}
	}
}
