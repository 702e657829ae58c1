package helmrelease

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func fuzzGzip(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// FuzzDecode feeds Decode and FromSecret a release Secret's name, labels and payload. Both must
// never panic; FromSecret always returns a record, carrying Decode's error; what decodes
// survives Helm's own encoding again.
func FuzzDecode(f *testing.F) {
	stored := []byte(base64.StdEncoding.EncodeToString(fuzzGzip([]byte(record))))
	apiView := []byte(base64.StdEncoding.EncodeToString(stored))
	wrapped := bytes.Join([][]byte{stored[:60], stored[60:120], stored[120:]}, []byte("\n"))
	bomb := []byte(base64.StdEncoding.EncodeToString(fuzzGzip(append([]byte(`{"name":"x","manifest":"`), bytes.Repeat([]byte("A"), 1<<16)...))))
	for _, s := range []struct {
		secret, version, status, modified string
		data                              []byte
	}{
		{"sh.helm.release.v1.fleet-agent-c-m-8k2lq.v4", "4", "pending-upgrade", "1795844400", stored},
		{"sh.helm.release.v1.fleet-agent-c-m-8k2lq.v4", "4", "pending-upgrade", "1795844400", apiView},
		{"sh.helm.release.v1.fleet-agent-c-m-8k2lq.v4", "", "", "", wrapped},
		{"sh.helm.release.v1.rancher-webhook.v12", "12", "deployed", "", []byte(record)},
		{"sh.helm.release.v1.rancher.v3", "3", "failed", "", stored[:len(stored)/2]},
		{"sh.helm.release.v1.fleet.v0", "x", "superseded", "-1", []byte("H4sIAAAAAAAA/wAAAP//")},
		{"sh.helm.release.v1..v", "", "", "", bomb},
		{"not-a-release", "", "", "", []byte("null")},
		{"sh.helm.release.v1.a.v99999999999999999999", "", "", "9223372036854775807", []byte("{}")},
	} {
		f.Add(s.secret, s.version, s.status, s.modified, s.data)
	}
	f.Fuzz(func(t *testing.T, secret, version, status, modified string, data []byte) {
		labels := map[string]string{"owner": "helm", "name": "", "version": version, "status": status, "modifiedAt": modified}
		rel, err := Decode(data)
		if (rel == nil) == (err == nil) {
			t.Fatalf("Decode: want a release or an error, got %v and %v", rel, err)
		}
		if err != nil && strings.TrimSpace(err.Error()) == "" {
			t.Fatal("Decode returned an empty error")
		}
		r := FromSecret(secret, "cattle-fleet-system", labels, data)
		if r == nil {
			t.Fatal("FromSecret returned nil")
		}
		if (r.PayloadError == nil) != (err == nil) {
			t.Fatalf("FromSecret's PayloadError %v disagrees with Decode's %v", r.PayloadError, err)
		}
		if r.SecretName != secret {
			t.Errorf("SecretName = %q, want %q", r.SecretName, secret)
		}
		if err != nil {
			// the labels alone: the status label is kept as given
			if r.Status != status {
				t.Errorf("Status = %q, want the label %q", r.Status, status)
			}
			if v, verr := strconv.Atoi(version); verr == nil && v != 0 && r.Revision != v {
				t.Errorf("Revision = %d, want the label %s", r.Revision, version)
			}
			return
		}
		// what decoded once decodes again from Helm's stored form, to the same record
		j, merr := json.Marshal(rel)
		if merr != nil {
			return // e.g. a chart value JSON cannot hold again; not the decoder's concern
		}
		again, err := Decode([]byte(base64.StdEncoding.EncodeToString(fuzzGzip(j))))
		if err != nil {
			t.Fatalf("re-encoded release does not decode: %v\n%s", err, j)
		}
		if again.Name != rel.Name || again.Version != rel.Version || again.Namespace != rel.Namespace {
			t.Errorf("round trip changed the record: %s/%s v%d -> %s/%s v%d", rel.Namespace, rel.Name, rel.Version, again.Namespace, again.Name, again.Version)
		}
	})
}
