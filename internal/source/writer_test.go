package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

const canary = "CANARY-7f3e9b2d-do-not-leak"

// helmSecretJSON builds a Helm release Secret as the API returns it: data.release is base64
// (the API's) of Helm's base64(gzip(JSON)).
func helmSecretJSON(t *testing.T, name string, rev int, status string) []byte {
	t.Helper()
	rec := map[string]any{
		"name": name, "namespace": "cattle-fleet-system", "version": rev,
		"info": map[string]any{"status": status, "description": "Preparing upgrade",
			"first_deployed": "2026-10-01T08:00:00Z", "last_deployed": "2026-11-28T07:12:40Z"},
		"chart":    map[string]any{"metadata": map[string]any{"name": "fleet-agent", "version": "0.16.0", "appVersion": "0.16.0"}},
		"config":   map[string]any{"token": canary},
		"manifest": "apiVersion: v1\nkind: Secret\nstringData:\n  password: " + canary + "\n",
	}
	j, _ := json.Marshal(rec)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(j)
	_ = zw.Close()
	helm := base64.StdEncoding.EncodeToString(gz.Bytes())
	sec := map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
		"metadata": map[string]any{"name": "sh.helm.release.v1." + name + ".v" + itoa(rev), "namespace": "cattle-fleet-system",
			"labels": map[string]any{"name": name, "owner": "helm", "status": status, "version": itoa(rev)}},
		"data": map[string]any{"release": base64.StdEncoding.EncodeToString([]byte(helm))},
	}
	b, _ := json.Marshal(sec)
	return b
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func feed(t *testing.T, sink Sink, objs ...[]byte) {
	t.Helper()
	sink.DeclareCluster(snapshot.ClusterInfo{Name: "prod-eu-1", Server: "https://rancher.example.com/k8s/clusters/c-m-4x7kq2zt"})
	for _, raw := range objs {
		var h snapshot.Header
		if err := json.Unmarshal(raw, &h); err != nil {
			t.Fatal(err)
		}
		if err := sink.AddJSON("prod-eu-1", "live prod-eu-1", &h, raw); err != nil {
			t.Fatal(err)
		}
	}
	sink.AddLog("prod-eu-1", "cattle-fleet-system", "fleet-agent-6d4c9b7f5-x2x9k", "fleet-agent", false, "", []string{`level=error msg="another operation (install/upgrade/rollback) is in progress"`})
	sink.MarkCRDsCollected("prod-eu-1")
}

// A collected bundle loads into the same snapshot the live read built, and holds no secret.
func TestCollectedBundleScansLikeTheLiveRead(t *testing.T) {
	objs := [][]byte{
		helmSecretJSON(t, "fleet-agent-c-m-4x7kq2zt", 3, "deployed"),
		helmSecretJSON(t, "fleet-agent-c-m-4x7kq2zt", 4, "pending-upgrade"),
		[]byte(`{"apiVersion":"v1","kind":"Secret","type":"Opaque","metadata":{"name":"registry-creds","namespace":"cattle-fleet-system","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"stringData\":{\"password\":\"` + canary + `\"}}"}},"data":{"password":"` + base64.StdEncoding.EncodeToString([]byte(canary)) + `"}}`),
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fleet-agent","namespace":"cattle-fleet-system"},"data":{"config":"{\"token\":\"` + canary + `\"}"}}`),
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"fleet-agent-6d4c9b7f5-x2x9k","namespace":"cattle-fleet-system"},"spec":{"containers":[{"name":"fleet-agent","image":"rancher/fleet-agent:v0.15.3","env":[{"name":"BOOTSTRAP_TOKEN","value":"` + canary + `"},{"name":"NAMESPACE","value":"cattle-fleet-system"}]}]},"status":{"phase":"Running"}}`),
	}
	b := snapshot.NewBuilder()
	feed(t, b, objs...)
	live := b.Build()

	w := NewBundleWriter("unstick test", time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC))
	feed(t, w, objs...)
	for _, dest := range []string{filepath.Join(t.TempDir(), "bundle"), filepath.Join(t.TempDir(), "bundle.tar.gz")} {
		if _, err := w.Write(dest); err != nil {
			t.Fatal(err)
		}
		assertNoCanary(t, dest)
		off, err := (&Offline{Path: dest}).Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(off.Errors) != 0 {
			t.Fatalf("%s: errors %v", dest, off.Errors)
		}
		lc, oc := live.Cluster("prod-eu-1"), off.Cluster("prod-eu-1")
		if oc == nil {
			t.Fatalf("%s: no cluster prod-eu-1", dest)
		}
		if !oc.CRDsCollected {
			t.Errorf("%s: CRDs-collected flag lost", dest)
		}
		if oc.Server != lc.Server {
			t.Errorf("server %q, want %q", oc.Server, lc.Server)
		}
		if len(oc.HelmReleases) != 2 {
			t.Fatalf("%s: %d Helm releases, want 2", dest, len(oc.HelmReleases))
		}
		for i := range lc.HelmReleases {
			l, o := *lc.HelmReleases[i], *oc.HelmReleases[i]
			if !reflect.DeepEqual(l, o) {
				t.Errorf("%s: release record differs after collect:\nlive    %+v\nbundle  %+v", dest, l, o)
			}
		}
		if len(oc.Pods) != 1 || len(oc.Logs) != 1 || len(oc.Secrets) != 3 || len(oc.ConfigMaps) != 1 {
			t.Errorf("%s: pods %d logs %d secrets %d configmaps %d", dest, len(oc.Pods), len(oc.Logs), len(oc.Secrets), len(oc.ConfigMaps))
		}
	}
	if got := strings.Join(w.Redacted(), "; "); !strings.Contains(got, "Secret values") || !strings.Contains(got, "environment values") {
		t.Errorf("redaction summary %q", got)
	}
}

// assertNoCanary greps every byte written, decompressing archives and decoding base64 layers.
func assertNoCanary(t *testing.T, dest string) {
	t.Helper()
	var blobs [][]byte
	if strings.HasSuffix(dest, ".tar.gz") {
		es, err := readTarGz(dest, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			blobs = append(blobs, e.data)
		}
	} else {
		_ = filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() {
				b, _ := os.ReadFile(p)
				blobs = append(blobs, b)
			}
			return nil
		})
	}
	for _, b := range blobs {
		if bytes.Contains(b, []byte(canary)) {
			t.Fatalf("%s: the canary leaked into the bundle", dest)
		}
		// Helm payloads hide behind two base64 layers and gzip.
		for _, tok := range strings.FieldsFunc(string(b), func(r rune) bool { return r == '"' || r == ' ' || r == '\n' }) {
			d, err := base64.StdEncoding.DecodeString(tok)
			if err != nil {
				continue
			}
			if d2, err := base64.StdEncoding.DecodeString(string(d)); err == nil {
				d = d2
			}
			if zr, err := gzip.NewReader(bytes.NewReader(d)); err == nil {
				var out bytes.Buffer
				_, _ = out.ReadFrom(zr)
				d = out.Bytes()
			}
			if bytes.Contains(d, []byte(canary)) {
				t.Fatalf("%s: the canary leaked inside an encoded payload", dest)
			}
		}
	}
}
