package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// fuzzLoadTimeout bounds one Load in the fuzz targets: a bundle of at most a few MiB that takes
// longer is a hang.
const fuzzLoadTimeout = 30 * time.Second

// fuzzFileNames are the shapes one fuzzed file is written as: a YAML file, a JSON file, a
// `fleet dump` file without extension and a container log.
var fuzzFileNames = []string{
	"objects.yaml",
	"objects.json",
	"bundledeployments_cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a_fleet-agent-c-m-8k2lq",
	"logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log",
	"logs.txt", // a pod's logs in kubectl cluster-info dump (there at <namespace>/<pod>/logs.txt)
}

// loadWithin runs Load and fails the test when it does not return in time.
func loadWithin(t *testing.T, o *Offline) (*snapshot.Snapshot, error) {
	t.Helper()
	type result struct {
		s   *snapshot.Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := o.Load(context.Background())
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(fuzzLoadTimeout):
		t.Fatalf("Load(%s) did not return within %s", o.Path, fuzzLoadTimeout)
		return nil, nil
	}
}

// checkLoadResult holds what every Load must give: a snapshot or an error, never both nor
// neither, and every problem attributed to a file that is part of the input.
func checkLoadResult(t *testing.T, s *snapshot.Snapshot, err error, known func(file string) bool) {
	t.Helper()
	if err != nil {
		if s != nil {
			t.Fatalf("Load returned a snapshot and the error %v", err)
		}
		if strings.TrimSpace(err.Error()) == "" {
			t.Fatal("Load returned an empty error")
		}
		return
	}
	if s == nil {
		t.Fatal("Load returned neither a snapshot nor an error")
	}
	for _, e := range s.Errors {
		file, _, _ := strings.Cut(e.File, ":")
		file, _, _ = strings.Cut(file, " items[")
		if !known(file) {
			t.Errorf("scan error does not name a file of the bundle: %s", e.String())
		}
		if strings.TrimSpace(e.Message) == "" {
			t.Errorf("scan error without a message: %+v", e)
		}
	}
	for _, k := range s.Skipped {
		if !known(k.File) || k.Reason == "" {
			t.Errorf("skipped entry without file or reason: %+v", k)
		}
	}
}

func fuzzHelmSecret() []byte {
	rec := map[string]any{
		"name": "fleet-agent-local", "namespace": "cattle-fleet-local-system", "version": 3,
		"info":  map[string]any{"status": "pending-upgrade", "last_deployed": "2026-11-28T07:59:00Z", "description": "Upgrade started"},
		"chart": map[string]any{"metadata": map[string]any{"name": "fleet-agent", "version": "0.16.0", "appVersion": "0.16.0"}},
	}
	return []byte(helmSecretYAML("fleet-agent-local", "cattle-fleet-local-system", "pending-upgrade", 3, helmStored(rec)))
}

// fuzzFileSeeds are realistic bundle files and the broken shapes seen in support bundles.
func fuzzFileSeeds() [][]byte {
	return [][]byte{
		[]byte(goodPod),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fleet-agent\n  namespace: cattle-fleet-system\ndata:\n  config: '{\"agentTLSMode\":\"strict\"}'\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: cattle-fleet-system\n"),
		[]byte(`{"apiVersion":"v1","kind":"PodList","metadata":{},"items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"helm-operation-x2k4p","namespace":"cattle-system"},"status":{"phase":"Failed"}}]}`),
		// kubectl cluster-info dump: typed Lists without item kinds, a log block between them.
		[]byte("{\n    \"kind\": \"PodList\",\n    \"apiVersion\": \"v1\",\n    \"items\": [{\"metadata\": {\"name\": \"fleet-agent-0\", \"namespace\": \"cattle-fleet-system\"}}]\n}\n" +
			"==== START logs for container fleet-agent of pod cattle-fleet-system/fleet-agent-0 ====\nlevel=error msg=\"boom\"\n==== END logs for container fleet-agent of pod cattle-fleet-system/fleet-agent-0 ====\n" +
			"{\n    \"kind\": \"DaemonSetList\",\n    \"apiVersion\": \"apps/v1\",\n    \"items\": null\n}\n"),
		[]byte(`{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"name":"fleet-agent-c-m-8k2lq","namespace":"cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a"},"spec":{"deploymentID":"s-1:2"},"status":{"conditions":[{"type":"Ready","status":"False","lastUpdateTime":"2026-11-28T08:00:00Z"}]}}`),
		[]byte("apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c-m-8k2lq\n  namespace: fleet-default\n  labels:\n    management.cattle.io/cluster-display-name: prod-eu-1\nstatus:\n  agent:\n    lastSeen: \"2026-11-28T07:55:00Z\"\n"),
		[]byte("apiVersion: upgrade.cattle.io/v1\nkind: Plan\nmetadata:\n  name: server-plan\n  namespace: cattle-system\nspec:\n  concurrency: 1\n  version: v1.31.4+rke2r1\n  upgrade:\n    image: rancher/rke2-upgrade\n"),
		fuzzHelmSecret(),
		[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n data:\n  key: value\n"),
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cut","namespace":"cattle-fleet-system"},"data":{"config":"{\"apiServerURL\":\"https://rancher`),
		[]byte("a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: &c [*b, *b, *b, *b]\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\n"),
		[]byte("time=\"2026-11-28T08:00:01Z\" level=error msg=\"error while running post render on files: Kustomization\"\nE1128 08:00:02.000000       1 reflector.go:147] failed to list *v1alpha1.BundleDeployment: Unauthorized\n"),
		append([]byte{0xff, 0xfe}, []byte("a\x00p\x00i\x00V\x00e\x00r\x00s\x00i\x00o\x00n\x00:\x00 \x00v\x001\x00\n\x00")...),
		{},
	}
}

func FuzzLoadFile(f *testing.F) {
	for i, seed := range fuzzFileSeeds() {
		f.Add(seed, uint8(i%len(fuzzFileNames)))
	}
	f.Fuzz(func(t *testing.T, data []byte, shape uint8) {
		dir := t.TempDir()
		name := fuzzFileNames[int(shape)%len(fuzzFileNames)]
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := loadWithin(t, &Offline{Path: dir})
		checkLoadResult(t, s, err, func(file string) bool { return file == name })
		if err != nil {
			// one readable file in a directory always gives a snapshot
			t.Fatalf("Load of a one-file directory failed: %v", err)
		}
	})
}

// fuzzTarGz packs files (name, body) into a .tar.gz in memory.
func fuzzTarGz(files ...string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i := 0; i+1 < len(files); i += 2 {
		tw.WriteHeader(&tar.Header{Name: files[i], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[i+1])), ModTime: time.Unix(1795000000, 0)})
		tw.Write([]byte(files[i+1]))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// fuzzTarSeeds are archives as they are met: a `fleet dump`, a `tar czf` of an unstick bundle
// with its top directory, a multi-cluster bundle, hostile names and a truncated archive.
func fuzzTarSeeds() [][]byte {
	dump := fuzzTarGz(
		"bundledeployments_cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a_fleet-agent-c-m-8k2lq",
		`{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"name":"fleet-agent-c-m-8k2lq","namespace":"cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a"},"spec":{"deploymentID":"s-1:2"}}`,
		"clusters_fleet-default_c-m-8k2lq",
		"apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c-m-8k2lq\n  namespace: fleet-default\n",
		"bundles_fleet-local_fleet-agent-local",
		`{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"Bundle","metadata":{"name":"fleet-agent-local","namespace":"fleet-local"},"spec":{"helm":{"chart":"fleet-agent"}}}`,
	)
	info := "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\ncollectedAt: \"2026-11-29T08:00:00Z\"\ncollector: unstick v0.1.0\nclusters:\n- name: local\n  role: management\n"
	bundle := fuzzTarGz(
		"support/unstick-bundle.yaml", info,
		"support/pods.yaml", goodPod,
		"support/helm.yaml", string(fuzzHelmSecret()),
		"support/logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log", "time=\"2026-11-28T08:00:01Z\" level=info msg=\"Starting fleet agent\"\n",
	)
	multi := fuzzTarGz(
		"clusters/local/fleet.yaml", "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c-m-8k2lq\n  namespace: fleet-default\n",
		"clusters/prod-eu-1/pods.yaml", goodPod,
	)
	hostile := fuzzTarGz("../evil.yaml", goodPod, "/etc/evil.yaml", goodPod, "ok.yaml", goodPod)
	return [][]byte{dump, bundle, multi, hostile, bundle[:len(bundle)*2/3], gzBytes([]byte(goodPod)), {}}
}

// tarNames lists the names an archive declares, as far as it can be read.
func tarNames(data []byte) (names map[string]bool, hasMeta bool) {
	names = map[string]bool{}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return names, false
	}
	tr := tar.NewReader(zr)
	for i := 0; i < 100000; i++ {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names[h.Name] = true
		rel := strings.TrimPrefix(h.Name, "./")
		if rel == BundleInfoFile || strings.HasSuffix(rel, "/"+BundleInfoFile) {
			hasMeta = true
		}
	}
	return names, hasMeta
}

func FuzzLoadTarGz(f *testing.F) {
	for _, seed := range fuzzTarSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		archive := filepath.Join(dir, "support-bundle.tar.gz")
		if err := os.WriteFile(archive, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := loadWithin(t, &Offline{Path: archive})
		names, hasMeta := tarNames(data)
		known := func(file string) bool {
			if hasMeta || file == "support-bundle.tar.gz" || names[file] {
				// with metadata, the collection errors it lists are copied as they are
				return true
			}
			// a name is cited cleaned and relative to the bundle: after "./" and a shared top
			// directory
			for n := range names {
				c := path.Clean(strings.TrimPrefix(n, "./"))
				if c == file || strings.HasSuffix(c, "/"+file) {
					return true
				}
			}
			return false
		}
		checkLoadResult(t, s, err, known)
		if err != nil && !strings.Contains(err.Error(), archive) {
			t.Errorf("the error does not name the archive: %v", err)
		}
		// nothing is ever written next to the archive
		ents, rerr := os.ReadDir(dir)
		if rerr != nil || len(ents) != 1 {
			t.Errorf("the archive's directory changed: %v %v", ents, rerr)
		}
	})
}

// Guard the helpers above against silently producing invalid seeds.
func TestFuzzSeedsAreValid(t *testing.T) {
	for i, seed := range fuzzTarSeeds()[:4] {
		zr, err := gzip.NewReader(bytes.NewReader(seed))
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if _, err := io.Copy(io.Discard, tar.NewReader(zr)); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	var sec map[string]any
	j, err := yamlToMap(fuzzHelmSecret())
	if err != nil {
		t.Fatal(err)
	}
	sec = j
	data, _ := sec["data"].(map[string]any)
	raw, _ := data["release"].(string)
	if _, err := base64.StdEncoding.DecodeString(raw); err != nil {
		t.Fatalf("helm seed's data.release is not base64: %v", err)
	}
}

func yamlToMap(b []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(j, &m)
}
