package redact

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// The forms seen passing the redactor in configuration dumps, connection strings and URLs.
func TestStringRedactsConfigAndURLForms(t *testing.T) {
	const s = "Hunter2xQ9pLm"
	for _, in := range []string{
		`password: hunter`,
		`DB_PASS=` + s,
		`pass: ` + s,
		`{"user":"fleet","secret":"` + s + `"}`,
		`{"client_secret": "` + s + `"}`,
		`:password => "` + s + `"`,
		`callback?user=admin&password%3D` + s + `%26next%3D1`,
		`proxy=https%3A%2F%2Fagent%3A` + s + `%40proxy.internal%3A3128`,
		`dsn=root:` + s + `@tcp(mysql.cattle-system:3306)/rancher?parseTime=true`,
		`https://acct.blob.core.windows.net/backups/etcd.zip?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31&sig=` + s + `%3D`,
		`/usr/bin/agent --pw=` + s + ` --v=2`,
		`/usr/bin/agent --pw ` + s,
		`fetching https://admin:p@ss` + s + `@rancher.example.com/v3`,
		`server: https://u:` + s + `@rancher.example.com:6443/?token=` + s,
	} {
		out := String(in)
		secret := s
		if strings.HasPrefix(in, "password: ") {
			secret = "hunter"
		}
		if strings.Contains(out, secret) {
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

// A key ending its line and the value on the next, as YAML and pretty-printed JSON put them.
func TestLinesRedactValueBelowItsKey(t *testing.T) {
	const s = "Hunter2xQ9pLm"
	for _, in := range [][]string{
		{"env:", "  password:", "    " + s, "  user: fleet"},
		{`{`, `  "token":`, `    "` + s + `",`, `  "user": "fleet"`, `}`},
		{"DB_PASS=", s},
	} {
		out := strings.Join(Lines(append([]string(nil), in...)), "\n")
		if strings.Contains(out, s) {
			t.Errorf("Lines(%q) kept the value:\n%s", in, out)
		}
		if !strings.Contains(out, "fleet") && len(in) > 3 {
			t.Errorf("Lines(%q) masked more than the value:\n%s", in, out)
		}
	}
	// A key with a nested mapping below is not a value.
	keep := []string{"credentials:", "  name: fleet-agent", "  namespace: cattle-fleet-system"}
	if out := Lines(append([]string(nil), keep...)); strings.Join(out, "\n") != strings.Join(keep, "\n") {
		t.Errorf("Lines changed a nested mapping: %q", out)
	}
}

// wrap cuts s into lines of width w, as base64 -w and PEM do.
func wrap(s string, w int) []string {
	var out []string
	for len(s) > w {
		out = append(out, s[:w])
		s = s[w:]
	}
	return append(out, s)
}

func kubeconfigB64(key string) string {
	pem := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(wrap(key, 64), "\n") + "\n-----END RSA PRIVATE KEY-----\n"
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.43.0.1:443\n  name: local\nusers:\n- name: admin\n  user:\n    client-key-data: " +
		base64.StdEncoding.EncodeToString([]byte(pem)) + "\n"
	return base64.StdEncoding.EncodeToString([]byte(kc))
}

// A 76-column wrapped base64 kubeconfig in an event message: no line of it survives.
func TestStringMasksWrappedBase64(t *testing.T) {
	key := strings.Repeat("MIIEowIBAAKCAQEAx7Qz", 40)
	lines := wrap(kubeconfigB64(key), 76)
	msg := "MountVolume.SetUp failed for volume \"kubeconfig\": cannot parse\n" + strings.Join(lines, "\n") + "\nretrying"
	out := String(msg)
	for i, l := range lines {
		if len(l) >= 16 && strings.Contains(out, l) {
			t.Errorf("line %d of %d of the wrapped kubeconfig is still there: %q", i+1, len(lines), l)
		}
	}
	if !strings.HasPrefix(out, "MountVolume.SetUp failed for volume \"kubeconfig\": cannot parse\n") || !strings.HasSuffix(out, "\nretrying") {
		t.Errorf("the message around the block changed:\n%s", out)
	}
	// The first piece on the key's own line, the rest wrapped below it.
	kc := kubeconfigB64(key)
	yamlish := "kubeconfig: " + kc[:60] + "\n" + strings.Join(wrap(kc[60:], 76), "\n")
	if out := String(yamlish); strings.Contains(out, kc[:60]) || strings.Contains(out, kc[60:136]) {
		t.Errorf("a block wrapped after its key kept a piece:\n%s", out)
	}
}

// pemLog is a log with a 2048-bit key in it, 26 lines of body, between ordinary lines.
func pemLog() (lines []string, body []string) {
	body = wrap(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k3y-m4t3r14l:", 125))), 64)
	lines = append(lines, `time="2026-11-28T08:00:00Z" level=info msg="loading client key"`, "-----BEGIN RSA PRIVATE KEY-----")
	lines = append(lines, body...)
	lines = append(lines, "-----END RSA PRIVATE KEY-----", `time="2026-11-28T08:00:01Z" level=info msg="key loaded"`)
	return lines, body
}

// A log's tail that starts inside a PEM body: the body is masked though its BEGIN line was cut
// off, both when the whole log is at hand (Tail) and when only the tail is (a live log read
// with tailLines).
func TestTailMasksAPEMBodyCutByTheWindow(t *testing.T) {
	for cut := 3; cut < 28; cut += 6 {
		lines, body := pemLog()
		n := len(lines) - cut
		tail := append([]string(nil), lines[cut:]...)
		for name, out := range map[string][]string{"Tail": Tail(lines, n), "Lines on the tail alone": Lines(tail)} {
			if len(out) != n {
				t.Fatalf("%s: %d lines, want %d", name, len(out), n)
			}
			got := strings.Join(out, "\n")
			for _, b := range body {
				if strings.Contains(got, b) {
					t.Errorf("%s, cut at line %d: a body line is still there: %q", name, cut, b)
					break
				}
			}
			if !strings.HasSuffix(got, "-----END RSA PRIVATE KEY-----\n"+`time="2026-11-28T08:00:01Z" level=info msg="key loaded"`) {
				t.Errorf("%s: the lines after the key changed:\n%s", name, got)
			}
		}
	}
}

// Lines that look like base64 but are what checks read stay: hashes one per line, a single
// token-looking ID, a short column of words.
func TestBlocksKeepHashesAndIDs(t *testing.T) {
	for _, keep := range [][]string{
		{"3f1c5e0b8d2a7e4c9b6f1a0d5e8c7b2a4f6e9d1c3b5a7e9f1d3c5b7a9e1f3d5c", "6a7e30c2b1f1d9e5c4a8b7f6e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4"},
		{"s-4e6d2b1c9a8f7e5d3c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1"},
		{"------------------------------------------------", "------------------------------------------------"},
		{"Back-off pulling image", "BackoffLimitExceeded"},
	} {
		out := Lines(append([]string(nil), keep...))
		if fmt.Sprint(out) != fmt.Sprint(keep) {
			t.Errorf("Lines changed %q to %q", keep, out)
		}
	}
}

// A URL's password runs to the last "@" of its authority, not past the quotes around it.
func TestUserinfoStopsAtItsURL(t *testing.T) {
	in := `{"url":"https://u:pw@rancher.example.com","contact":"ops@example.com"}`
	want := `{"url":"https://u:[redacted]@rancher.example.com","contact":"ops@example.com"}`
	if out := String(in); out != want {
		t.Errorf("String(%q)\n = %q\nwant %q", in, out, want)
	}
}

// A wrapped block folded onto one line (a check joins a message's lines) is masked too.
func TestLineMasksAFoldedWrappedBlock(t *testing.T) {
	kc := kubeconfigB64(strings.Repeat("MIIEowIBAAKCAQEAx7Qz", 40))
	pieces := wrap(kc, 76)
	in := `MountVolume.SetUp failed for volume "kubeconfig" : cannot parse: ` + strings.Join(pieces, " ") + ` (will retry)`
	out := Line(in)
	for _, p := range pieces {
		if len(p) >= 16 && strings.Contains(out, p) {
			t.Fatalf("a piece is still there: %q\n%s", p, out)
		}
	}
	if want := `MountVolume.SetUp failed for volume "kubeconfig" : cannot parse: [redacted] (will retry)`; out != want {
		t.Errorf("Line = %q, want %q", out, want)
	}
}

// A word on the line after a block whose last line is full width is not taken for its end.
func TestBlockEndsBeforeAWord(t *testing.T) {
	block := wrap(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("apiVersion: v1\nkind: Config\n", 57*2/29+2)[:114])), 76)
	lines := append(append([]string(nil), block...), "retrying")
	out := Lines(lines)
	if out[len(out)-1] != "retrying" || strings.Contains(strings.Join(out, "\n"), block[0]) {
		t.Errorf("Lines = %q", out)
	}
}

// Messages near the new forms that the checks read stay as they are.
func TestNewFormsKeepMessages(t *testing.T) {
	for _, keep := range []string{
		`tls passthrough: enabled, bypass=true`,
		`password: required`,
		`error: password: must be at least 8 characters`,
		`failed to get secret: secrets "fleet-agent" not found`,
		`"secretName": "fleet-agent-bootstrap"`,
		`Failed to pull image "registry.example.test/rancher/fleet-agent:v0.16.0@sha256:3f1c5e0b8d2a7e4c9b6f1a0d5e8c7b2a4f6e9d1c3b5a7e9f1d3c5b7a9e1f3d5c": not found`,
		`Error: UPGRADE FAILED: unable to build kubernetes objects from release manifest: resource mapping not found for name: "x" namespace: "" from "": no matches for kind "PodSecurityPolicy" in version "policy/v1beta1"`,
		`dial tcp 10.43.0.1:443: connect: connection refused`,
		`signal: killed`,
	} {
		if out := String(keep); out != keep {
			t.Errorf("String changed a message with no credential:\n in  %q\n out %q", keep, out)
		}
	}
}
