package helmrelease

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// record is a release record as Helm v3 marshals it (pkg/release.Release).
const record = `{"name":"fleet-agent-c-m-8k2lq","info":{"first_deployed":"2026-03-02T10:00:00Z",` +
	`"last_deployed":"2026-11-28T08:12:44Z","deleted":"","description":"Preparing upgrade","status":"pending-upgrade"},` +
	`"chart":{"metadata":{"name":"fleet-agent-c-m-8k2lq","version":"v0.0.0+s-3f93a063ea10","appVersion":"0.16.0","apiVersion":"v2"}},` +
	`"manifest":"---\n# Source: fleet-agent/templates/deployment.yaml\n","version":4,"namespace":"cattle-fleet-system"}`

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func b64(b []byte) []byte { return []byte(base64.StdEncoding.EncodeToString(b)) }

func TestDecodeLayers(t *testing.T) {
	stored := b64(gzipped(t, []byte(record))) // what Helm's Secrets driver stores
	wrapped := func(b []byte) []byte {
		var out []byte
		for len(b) > 60 {
			out = append(append(out, b[:60]...), '\n')
			b = b[60:]
		}
		return append(out, b...)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"one base64 layer (the value as the API decoder hands it over)", stored},
		{"two base64 layers (the value as kubectl get -o yaml prints it)", b64(stored)},
		{"gzip without base64", gzipped(t, []byte(record))},
		{"uncompressed JSON", []byte(record)},
		{"base64 of uncompressed JSON", b64([]byte(record))},
		{"surrounding whitespace", append(append([]byte("\n  "), stored...), '\n')},
		{"base64 wrapped at 60 columns", wrapped(b64(stored))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := Decode(tc.data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if rel.Name != "fleet-agent-c-m-8k2lq" || rel.Version != 4 || rel.Namespace != "cattle-fleet-system" {
				t.Errorf("decoded %s v%d in %s", rel.Name, rel.Version, rel.Namespace)
			}
			if rel.Info == nil || rel.Info.Status.String() != "pending-upgrade" {
				t.Errorf("status = %+v", rel.Info)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	good := gzipped(t, []byte(record))
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty release payload"},
		{"only whitespace", []byte(" \n\t"), "empty release payload"},
		{"not base64", []byte("this is %%% not base64"), "not base64"},
		{"corrupt gzip", b64(append([]byte{0x1f, 0x8b, 0x08, 0x00}, []byte("garbage that is not deflate")...)), "gzip"},
		{"truncated gzip", b64(good[:len(good)/2]), "gzip"},
		{"gzip of something that is not JSON", b64(gzipped(t, []byte("<html>oops</html>"))), "JSON"},
		{"JSON that is not a release", b64(gzipped(t, []byte(`{"kind":"Secret"}`))), "no release record"},
		{"truncated JSON", []byte(record[:len(record)/2]), "JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := Decode(tc.data)
			if err == nil {
				t.Fatalf("want an error, got release %+v", rel)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "release payload") && !strings.HasPrefix(err.Error(), "empty release payload") {
				t.Errorf("error %q does not say it is about the release payload", err)
			}
		})
	}
}

// A gzip bomb stops at the limit instead of eating the scanner's memory.
func TestDecodeLimit(t *testing.T) {
	big := gzipped(t, bytes.Repeat([]byte(" "), maxPayload+10))
	if _, err := Decode(b64(big)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("want a size error, got %v", err)
	}
}

func TestFromSecret(t *testing.T) {
	labels := map[string]string{"name": "fleet-agent-c-m-8k2lq", "owner": "helm", "status": "deployed", "version": "4", "modifiedAt": "1795853564"}
	r := FromSecret("sh.helm.release.v1.fleet-agent-c-m-8k2lq.v4", "cattle-fleet-system", labels, b64(gzipped(t, []byte(record))))
	if r.PayloadError != nil {
		t.Fatal(r.PayloadError)
	}
	// the record wins over the labels, as in Helm's own storage driver
	if r.Status != "pending-upgrade" || r.Revision != 4 || r.Chart != "fleet-agent-c-m-8k2lq" || r.AppVersion != "0.16.0" {
		t.Errorf("release = %+v", r)
	}
	if want := time.Date(2026, 11, 28, 8, 12, 44, 0, time.UTC); !r.LastDeployed.Equal(want) || !r.Since().Equal(want) {
		t.Errorf("LastDeployed/Since = %s/%s, want %s", r.LastDeployed, r.Since(), want)
	}
	if !r.IsPending() {
		t.Error("pending-upgrade is pending")
	}
	if r.SecretName != "sh.helm.release.v1.fleet-agent-c-m-8k2lq.v4" || r.ModifiedAt.Unix() != 1795853564 {
		t.Errorf("secret name / modifiedAt: %q %s", r.SecretName, r.ModifiedAt)
	}
}

func TestFromSecretCorruptPayloadKeepsLabels(t *testing.T) {
	labels := map[string]string{"name": "fleet-agent-local", "owner": "helm", "status": "pending-upgrade", "version": "3", "modifiedAt": "1795844400"}
	r := FromSecret("sh.helm.release.v1.fleet-agent-local.v3", "cattle-fleet-local-system", labels, []byte("H4sI%%%cut"))
	if r.PayloadError == nil {
		t.Fatal("want a payload error")
	}
	if r.Name != "fleet-agent-local" || r.Revision != 3 || r.Status != "pending-upgrade" || r.Namespace != "cattle-fleet-local-system" {
		t.Errorf("release from labels = %+v", r)
	}
	if !r.IsPending() || r.Since().Unix() != 1795844400 {
		t.Errorf("pending since modifiedAt: %+v", r)
	}
}

// A record that leaves fields empty does not blank out what the labels said.
func TestFromSecretSparseRecord(t *testing.T) {
	labels := map[string]string{"name": "rancher-webhook", "owner": "helm", "status": "failed", "version": "7"}
	r := FromSecret("sh.helm.release.v1.rancher-webhook.v7", "cattle-system", labels, b64(gzipped(t, []byte(`{"info":{"description":"Upgrade failed"}}`))))
	if r.PayloadError != nil {
		t.Fatal(r.PayloadError)
	}
	if r.Name != "rancher-webhook" || r.Revision != 7 || r.Status != "failed" || r.Description != "Upgrade failed" {
		t.Errorf("release = %+v", r)
	}
}

func TestSecretNameFallback(t *testing.T) {
	for _, tc := range []struct {
		secret   string
		labels   map[string]string
		wantName string
		wantRev  int
	}{
		{"sh.helm.release.v1.fleet-agent-c-m-8k2lq.v12", nil, "fleet-agent-c-m-8k2lq", 12},
		{"sh.helm.release.v1.my.vault-agent.v3", nil, "my.vault-agent", 3},
		{"sh.helm.release.v1.rancher.v2", map[string]string{"name": "rancher"}, "rancher", 2},
		{"sh.helm.release.v1.rancher.v2", map[string]string{"version": "5"}, "rancher", 2}, // the name wins; the label makes it malformed
		{"sh.helm.release.v1.my.vault", nil, "", 0},                                        // no revision: not a release name
		{"sh.helm.release.v1.app.vlatest", nil, "", 0},                                     // revision not a number
		{"sh.helm.release.v1.", nil, "", 0},                                                // nothing after the prefix
		{"fleet-agent.v3", nil, "", 0},                                                     // not a release Secret name
		{"sh.helm.release.v1.app.v0", nil, "", 0},                                          // revisions start at 1
	} {
		r := FromSecret(tc.secret, "ns", tc.labels, nil)
		if r.Name != tc.wantName || r.Revision != tc.wantRev {
			t.Errorf("%s %v: got %q v%d, want %q v%d", tc.secret, tc.labels, r.Name, r.Revision, tc.wantName, tc.wantRev)
		}
		if r.PayloadError == nil || !strings.Contains(r.PayloadError.Error(), "empty") {
			t.Errorf("%s: no payload must be an 'empty' error, got %v", tc.secret, r.PayloadError)
		}
	}
}

// The time a revision entered its status: an uninstall keeps last_deployed and records when it
// started in info.deleted; a record that cannot be read falls back to the storage labels, the
// createdAt Helm's Secrets driver writes on create when no update (modifiedAt) followed.
func TestSince(t *testing.T) {
	uninstalling := `{"name":"longhorn","info":{"first_deployed":"2026-09-12T10:02:11Z","last_deployed":"2026-09-12T10:02:11Z",` +
		`"deleted":"2026-11-28T06:41:03Z","description":"Deletion in progress (or silently failed)","status":"uninstalling"},"version":1,"namespace":"longhorn-system"}`
	r := FromSecret("sh.helm.release.v1.longhorn.v1", "longhorn-system", map[string]string{"name": "longhorn", "owner": "helm", "status": "uninstalling", "version": "1"},
		b64(gzipped(t, []byte(uninstalling))))
	if want := time.Date(2026, 11, 28, 6, 41, 3, 0, time.UTC); !r.Since().Equal(want) {
		t.Errorf("uninstalling: Since = %v, want info.deleted %v", r.Since(), want)
	}
	r = FromSecret("sh.helm.release.v1.app.v9", "apps", map[string]string{"name": "app", "owner": "helm", "status": "pending-rollback", "version": "9", "createdAt": "1795851008"}, []byte("not a record"))
	if want := time.Unix(1795851008, 0).UTC(); !r.Since().Equal(want) {
		t.Errorf("unreadable record: Since = %v, want createdAt %v", r.Since(), want)
	}
}

// TestDecodeSkipsValuesConfigAndManifest: a 104 KB release payload whose config holds 20
// million empty objects took 1.9 GB to decode into Helm's full release type. Only the record's
// metadata is decoded now; the config is scanned past, not built.
func TestDecodeSkipsValuesConfigAndManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 40 MB payload")
	}
	var raw bytes.Buffer
	raw.WriteString(`{"name":"fleet-agent-local","namespace":"cattle-fleet-local-system","version":3,` +
		`"info":{"status":"pending-upgrade","last_deployed":"2026-11-28T08:00:00Z","description":"Upgrade \"fleet-agent-local\" failed"},` +
		`"chart":{"metadata":{"name":"fleet-agent","version":"106.0.0+up0.12.0"},"templates":[{"name":"templates/deployment.yaml","data":"YXBpVmVyc2lvbjogYXBwcy92MQ=="}]},` +
		`"manifest":"---\n# Source: fleet-agent/templates/deployment.yaml\napiVersion: apps/v1\n","config":{"x":[`)
	for i := 0; i < 20_000_000; i++ {
		if i > 0 {
			raw.WriteByte(',')
		}
		raw.WriteString("{}")
	}
	raw.WriteString("]}}")
	payload := []byte(base64.StdEncoding.EncodeToString(gzipBytes(t, raw.Bytes())))
	t.Logf("payload: %d KB stored, %d MB decompressed", len(payload)>>10, raw.Len()>>20)
	raw = bytes.Buffer{}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	r := FromSecret("sh.helm.release.v1.fleet-agent-local.v3", "cattle-fleet-local-system", map[string]string{"status": "pending-upgrade"}, payload)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if r.PayloadError != nil || r.Status != "pending-upgrade" || r.Chart != "fleet-agent" || r.LastDeployed.IsZero() {
		t.Fatalf("the record's metadata must decode: %+v", r)
	}
	// Allocated in total (not only live): the 40 MB decompressed text and little else.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 200<<20 {
		t.Errorf("decoding allocated %d MiB, want under 200 MiB (the config must not be built)", alloc>>20)
	}
	t.Logf("decoded in %v, allocated %d MiB", took, (after.TotalAlloc-before.TotalAlloc)>>20)
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// Every revision keeps the identity of each document of its manifest — apiVersion, kind,
// namespace, name, template path — and nothing else of it: no value reaches the Release.
func TestFromSecretKeepsManifestIdentitiesOnly(t *testing.T) {
	manifest := "---\n# Source: apf/templates/fs.yaml\napiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: FlowSchema\nmetadata:\n  name: apf-fs\nspec:\n  matchingPrecedence: 1000\n" +
		"---\n# Source: apf/templates/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: apps\nstringData:\n  password: s3cr3t-value\n"
	rec := `{"name":"apf","namespace":"apps","version":2,"info":{"status":"deployed","description":"Upgrade complete"},` +
		`"config":{"password":"s3cr3t-value"},"manifest":` + strconvQuote(manifest) + `}`
	r := FromSecret("sh.helm.release.v1.apf.v2", "apps", map[string]string{"name": "apf", "owner": "helm", "status": "deployed", "version": "2"}, b64(gzipped(t, []byte(rec))))
	if r.PayloadError != nil {
		t.Fatal(r.PayloadError)
	}
	if len(r.Docs) != 2 || r.Docs[0].APIVersion != "flowcontrol.apiserver.k8s.io/v1beta3" || r.Docs[0].Kind != "FlowSchema" || r.Docs[0].Name != "apf-fs" ||
		r.Docs[0].Source != "apf/templates/fs.yaml" || r.Docs[1].Namespace != "apps" || r.Docs[1].Name != "creds" {
		t.Fatalf("docs: %+v", r.Docs)
	}
	if s := fmt.Sprintf("%+v", *r); strings.Contains(s, "s3cr3t") || strings.Contains(s, "matchingPrecedence") {
		t.Errorf("a value of the manifest or config is kept: %s", s)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// A release record is only a Secret anyone allowed to write Secrets in the namespace can
// forge: its name, namespace and revision must agree with the Secret's name, namespace and
// storage labels, or the release is malformed (and the snapshot leaves it out).
func TestFromSecretMalformed(t *testing.T) {
	labels := func(name, version string) map[string]string {
		return map[string]string{"name": name, "owner": "helm", "status": "deployed", "version": version}
	}
	record := func(name, ns string, version int) []byte {
		return b64(gzipped(t, []byte(fmt.Sprintf(`{"name":%q,"namespace":%q,"version":%d,"info":{"status":"deployed"}}`, name, ns, version))))
	}
	for _, tc := range []struct {
		desc   string
		secret string
		labels map[string]string
		data   []byte
		want   string // in the Malformed error; "" for a well-formed release
	}{
		{"consistent", "sh.helm.release.v1.app.v3", labels("app", "3"), record("app", "tenant-a", 3), ""},
		{"record without a namespace (Helm omits it when empty)", "sh.helm.release.v1.app.v3", labels("app", "3"), record("app", "", 3), ""},
		{"record in another namespace", "sh.helm.release.v1.app.v3", labels("app", "3"), record("app", "kube-system", 3), `namespace "kube-system"`},
		{"record of another release", "sh.helm.release.v1.app.v3", labels("app", "3"), record("app$(id)", "tenant-a", 3), `release "app$(id)"`},
		{"record of another revision", "sh.helm.release.v1.app.v3", labels("app", "3"), record("app", "tenant-a", 9), "revision 9"},
		{"label name differs", "sh.helm.release.v1.app.v3", labels("other", "3"), record("app", "tenant-a", 3), `name="other"`},
		{"label version differs", "sh.helm.release.v1.app.v3", labels("app", "4"), record("app", "tenant-a", 3), `version="4"`},
		{"no owner label", "sh.helm.release.v1.app.v3", map[string]string{"name": "app", "version": "3"}, record("app", "tenant-a", 3), "owner=helm"},
		{"not a release Secret name", "app-release", labels("app", "3"), record("app", "tenant-a", 3), "its name"},
		{"undecodable, labels disagree", "sh.helm.release.v1.app.v3", labels("app", "7"), []byte("not base64!"), `version="7"`},
	} {
		r := FromSecret(tc.secret, "tenant-a", tc.labels, tc.data)
		switch {
		case tc.want == "" && r.Malformed != nil:
			t.Errorf("%s: malformed: %v", tc.desc, r.Malformed)
		case tc.want != "" && (r.Malformed == nil || !strings.Contains(r.Malformed.Error(), tc.want)):
			t.Errorf("%s: Malformed = %v, want it to say %s", tc.desc, r.Malformed, tc.want)
		}
		if r.Namespace != "tenant-a" {
			t.Errorf("%s: namespace %q, want the Secret's", tc.desc, r.Namespace)
		}
		if name, rev, ok := parseSecretName(tc.secret); ok && (r.Name != name || r.Revision != rev) {
			t.Errorf("%s: release %q v%d, want the Secret name's %q v%d", tc.desc, r.Name, r.Revision, name, rev)
		}
	}
}
