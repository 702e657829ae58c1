package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// formLines are log lines with a credential in each form configuration dumps, connection
// strings and URLs write it in, besides the headers and flags of secretLines.
func formLines(c *canaries, where string) []string {
	v := func(form string) string { return c.v(form + " in the " + where + " log") }
	return []string{
		`time="2026-11-28T09:25:05Z" level=debug msg="config" password: ` + v("password colon"),
		`DB_PASS=` + v("DB_PASS"),
		`  pass: ` + v("pass colon"),
		`time="2026-11-28T09:25:06Z" level=debug msg="oidc" body={"client":"fleet","secret":"` + v("JSON secret") + `"}`,
		`  :password => "` + v("Ruby password") + `",`,
		`GET /callback?user=admin&password%3D` + v("URL-encoded password") + `%26next%3D%2F 302`,
		`level=info msg="proxy" url=https%3A%2F%2Fagent%3A` + v("URL-encoded URL password") + `%40proxy.internal%3A3128`,
		`  password:`,
		`    ` + v("value below its key"),
		`level=fatal msg="open db" dsn="root:` + v("Go DSN password") + `@tcp(mysql.cattle-system:3306)/rancher?parseTime=true"`,
		`level=info msg="upload" url="https://acct.blob.core.windows.net/etcd/s.zip?sv=2022-11-02&ss=b&sp=rw&sig=` + v("Azure SAS sig") + `"`,
		`+ /usr/bin/sync --pw=` + v("pw flag") + ` --v=2`,
		`level=error msg="Get https://sync:p4ss@` + v("URL password with an at sign") + `@rancher.example.com/v3: EOF"`,
	}
}

// pemCutByTail is a private key whose BEGIN line is 500 lines from the log's end, then lines
// enough that a 500-line tail (what collect and a live scan read) starts inside its body.
func pemCutByTail(c *canaries, after int) string {
	body := c.v("PEM body cut by the log tail")
	line := strings.Repeat("A", max(0, 64-len(body))) + body // a run of base64 and "-", as wide as PEM
	lines := []string{`time="2026-11-28T09:00:00Z" level=info msg="loaded client key"`, "-----BEGIN RSA PRIVATE KEY-----"}
	for range 26 {
		lines = append(lines, line)
	}
	lines = append(lines, "-----END RSA PRIVATE KEY-----")
	for i := range 500 - 26/2 - after {
		lines = append(lines, fmt.Sprintf(`time="2026-11-28T09:%02d:%02dZ" level=info msg="waiting for the registration to be granted" attempt=%d`, 1+i/60%20, i%60, i+1))
	}
	return strings.Join(lines, "\n") + "\n"
}

// wrappedKubeconfigEvent is an Event whose message holds a kubeconfig, base64 wrapped at 76
// columns as `base64` writes it: no line of it alone decodes to anything recognisable.
func wrappedKubeconfigEvent(c *canaries) string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	// A 2048-bit key's 26 lines, each carrying the canary.
	kv := c.v("client key of a wrapped kubeconfig in an event")
	key := "-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat(strings.Repeat("A", max(0, 64-len(kv)))+kv+"\n", 26) + "-----END RSA PRIVATE KEY-----\n"
	kc := b64("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://rancher.example.com/k8s/clusters/c-m-8k2lq\n  name: prod-eu-1\n" +
		"users:\n- name: admin\n  user:\n    client-certificate-data: " + b64("-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHBfpegPjMCMA0GCSqGSIb3DQEBCwUAMBExDzANBgNVBAMMBnVu\n-----END CERTIFICATE-----\n") +
		"\n    client-key-data: " + b64(key) + "\n")
	var lines []string
	for len(kc) > 76 {
		lines, kc = append(lines, kc[:76]), kc[76:]
	}
	lines = append(lines, kc)
	return `apiVersion: v1
kind: Event
metadata: {name: canary-sync-7f9c8-x2k4p.1871a2b3c4d5e6f9, namespace: cattle-fleet-system}
involvedObject: {apiVersion: v1, kind: Pod, name: canary-sync-7f9c8-x2k4p, namespace: cattle-fleet-system}
reason: FailedMount
type: Warning
count: 2
firstTimestamp: '2026-11-28T08:10:00Z'
lastTimestamp: '2026-11-28T09:23:00Z'
source: {component: kubelet, host: prod-eu-1-worker-1}
message: |-
  MountVolume.SetUp failed for volume "kubeconfig" : cannot parse the kubeconfig:
  ` + strings.Join(lines, "\n  ") + "\n"
}

// wrappedB64 is base64 wrapped over lines, raw or in a JSON string (a "\n" escape).
var wrappedB64 = regexp.MustCompile(`(?:[A-Za-z0-9+/]{16,}(?:\\n|\r?\n)[ \t]*)+[A-Za-z0-9+/]+={0,2}`)

// findUnwrapped looks for canaries in a wrapped base64 block. Each 4-character shift of the
// joined run is tried: in JSON the block follows a "\n" escape whose "n" the match takes in,
// and a base64 run inside it (a kubeconfig's client-key-data) may start anywhere in its groups.
func (c *canaries) findUnwrapped(m []byte, depth int) []string {
	var out []string
	for _, dec := range shifts(unwrap(m)) {
		out = append(out, c.find(dec, depth-1)...)
		for _, run := range b64Run.FindAll(dec, -1) {
			for _, inner := range shifts(string(run)) {
				if depth > 1 {
					out = append(out, c.find(inner, depth-2)...)
				}
			}
		}
	}
	return out
}

// shifts decodes a base64 run from each of its first four characters.
func shifts(run string) [][]byte {
	run = strings.TrimRight(run, "=")
	var out [][]byte
	for shift := 0; shift < 4 && shift < len(run); shift++ {
		r := run[shift:]
		if dec, err := base64.RawStdEncoding.DecodeString(r[:len(r)/4*4]); err == nil {
			out = append(out, dec)
		}
	}
	return out
}

// unwrap joins a wrapped base64 block into one run.
func unwrap(m []byte) string {
	return strings.NewReplacer(`\n`, "", "\n", "", "\r", "", " ", "", "\t", "").Replace(string(m))
}

// plantMetadataServer gives the management cluster of the bundle's metadata a server URL with
// a password and a token in its query, as a kubeconfig copied from a browser may hold.
func plantMetadataServer(t *testing.T, dir string, c *canaries) {
	t.Helper()
	p := filepath.Join(dir, "unstick-bundle.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	url := "https://admin:" + c.v("password of the metadata server URL") + "@rancher.example.com/?token=" + c.v("token of the metadata server URL")
	out := strings.Replace(string(b), "server: https://rancher.example.com\n", "server: "+url+"\n", 1)
	if out == string(b) {
		t.Fatal("the bundle's metadata names no server https://rancher.example.com")
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}
