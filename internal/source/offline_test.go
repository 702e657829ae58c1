package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/snapshot"
)

// ---------------------------------------------------------------- helpers

// writeTree writes files (slash-separated paths relative to dir) into dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type tarEntry struct {
	name string
	body string
	typ  byte
	link string
}

// packTarGz packs entries into a .tar.gz, in the order given, as tar(1) would.
func packTarGz(t *testing.T, file string, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Unix(1795000000, 0)}
		if typ == tar.TypeDir {
			h.Mode, h.Size = 0o755, 0
		}
		if typ == tar.TypeSymlink {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeEntries turns a file map into tar entries under prefix, directories first, sorted.
func treeEntries(files map[string]string, prefix string) []tarEntry {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []tarEntry
	if prefix != "" {
		out = append(out, tarEntry{name: prefix, typ: tar.TypeDir})
	}
	dirs := map[string]bool{}
	for _, n := range names {
		for d := filepath.ToSlash(filepath.Dir(n)); d != "." && !dirs[d]; d = filepath.ToSlash(filepath.Dir(d)) {
			dirs[d] = true
			out = append(out, tarEntry{name: prefix + d + "/", typ: tar.TypeDir})
		}
		out = append(out, tarEntry{name: prefix + n, body: files[n]})
	}
	return out
}

func load(t *testing.T, path string) *snapshot.Snapshot {
	t.Helper()
	s, err := (&Offline{Path: path}).Load(context.Background())
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return s
}

// errorFor returns the scan errors whose file names file.
func errorsFor(s *snapshot.Snapshot, file string) []string {
	var out []string
	for _, e := range s.Errors {
		if e.File == file || strings.HasPrefix(e.File, file+":") {
			out = append(out, e.String())
		}
	}
	return out
}

func skippedFor(s *snapshot.Snapshot, file string) string {
	for _, k := range s.Skipped {
		if k.File == file {
			return k.Reason
		}
	}
	return ""
}

func describeSnap(s *snapshot.Snapshot) string {
	var b strings.Builder
	for _, c := range s.Clusters {
		fmt.Fprintf(&b, "cluster %q role=%s fleet=%q pods=%d cms=%d secrets=%d helm=%d fleetclusters=%d crds=%d logs=%d\n",
			c.Name, c.Role, c.FleetCluster, len(c.Pods), len(c.ConfigMaps), len(c.Secrets), len(c.HelmReleases), len(c.FleetClusters), len(c.CRDs), len(c.Logs))
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "error %s\n", e.String())
	}
	for _, k := range s.Skipped {
		fmt.Fprintf(&b, "skipped %s:%d: %s\n", k.File, k.Line, k.Reason)
	}
	return b.String()
}

func gzBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// helmSecretYAML is a release Secret as `kubectl get secret -o yaml` shows it: data.release is
// the API's base64 of Helm's stored value.
func helmSecretYAML(name, ns, status string, rev int, helmValue []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
type: helm.sh/release.v1
metadata:
  name: sh.helm.release.v1.%[1]s.v%[4]d
  namespace: %[2]s
  labels:
    name: %[1]s
    owner: helm
    status: %[3]s
    version: "%[4]d"
    modifiedAt: "1795844400"
data:
  release: %[5]s
`, name, ns, status, rev, base64.StdEncoding.EncodeToString(helmValue))
}

// helmStored is what Helm's Secrets driver stores: base64(gzip(JSON)).
func helmStored(rec map[string]any) []byte {
	j, _ := json.Marshal(rec)
	return []byte(base64.StdEncoding.EncodeToString(gzBytes(j)))
}

const goodPod = `apiVersion: v1
kind: Pod
metadata:
  name: fleet-agent-7d9c5b6f4-q8w2n
  namespace: cattle-fleet-system
  creationTimestamp: "2026-11-28T08:00:00Z"
spec:
  containers:
  - name: fleet-agent
    image: rancher/fleet-agent:v0.16.0
status:
  phase: Running
`

// badFiles is a directory of files that are broken in every way a bundle can be, and one good
// object.
func badFiles() map[string]string {
	corrupt := []byte(base64.StdEncoding.EncodeToString(append([]byte{0x1f, 0x8b, 0x08, 0x00}, []byte("not really gzip at all, cut short")...)))
	return map[string]string{
		"good.yaml":   goodPod,
		"binary.bin":  "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00",
		"broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n data:\n  key: value\n",
		"truncated.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cut","namespace":"cattle-fleet-system"},` +
			`"data":{"config":"{\"apiServerURL\":\"https://rancher`,
		"helm/sh.helm.release.v1.fleet-agent-local.v3.yaml": helmSecretYAML("fleet-agent-local", "cattle-fleet-local-system", "pending-upgrade", 3, corrupt),
	}
}

// checkBadFiles holds a snapshot of badFiles to what the loader must make of it.
func checkBadFiles(t *testing.T, s *snapshot.Snapshot, prefix string) {
	t.Helper()
	if len(s.Clusters) != 1 {
		t.Fatalf("want one cluster, got:\n%s", describeSnap(s))
	}
	c := s.Clusters[0]
	if len(c.Pods) != 1 || c.Pods[0].Name != "fleet-agent-7d9c5b6f4-q8w2n" {
		t.Errorf("the good object was not loaded:\n%s", describeSnap(s))
	}
	if src := c.Source("Pod", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n"); !strings.HasPrefix(src, prefix+"good.yaml") {
		t.Errorf("good object's source = %q, want %sgood.yaml...", src, prefix)
	}
	if r := skippedFor(s, prefix+"binary.bin"); r == "" {
		t.Errorf("binary.bin is not among the skipped files:\n%s", describeSnap(s))
	}
	if errs := errorsFor(s, prefix+"binary.bin"); len(errs) > 0 {
		t.Errorf("binary.bin is skipped, not an error: %v", errs)
	}
	var yamlErr bool
	for _, e := range s.Errors {
		if e.File == prefix+"broken.yaml" {
			yamlErr = true
			// the parser names the mapping it could not finish (line 4) or the bad line (5)
			if e.Line != 4 && e.Line != 5 {
				t.Errorf("broken.yaml error at line %d, want 4 or 5: %s", e.Line, e.String())
			}
			if !strings.Contains(e.Message, "YAML") {
				t.Errorf("broken.yaml error does not say YAML: %s", e.String())
			}
		}
	}
	if !yamlErr {
		t.Errorf("no error names broken.yaml:\n%s", describeSnap(s))
	}
	if errs := errorsFor(s, prefix+"truncated.json"); len(errs) != 1 || !strings.Contains(errs[0], "JSON") {
		t.Errorf("truncated.json: want one JSON error, got %v\n%s", errs, describeSnap(s))
	}
	helmFile := prefix + "helm/sh.helm.release.v1.fleet-agent-local.v3.yaml"
	if errs := errorsFor(s, helmFile); len(errs) != 1 || !strings.Contains(errs[0], "sh.helm.release.v1.fleet-agent-local.v3") {
		t.Errorf("corrupt Helm payload: want one error naming the file and the Secret, got %v\n%s", errs, describeSnap(s))
	}
	if len(c.HelmReleases) != 1 {
		t.Fatalf("the corrupt Helm Secret gave %d release records, want 1 from its labels", len(c.HelmReleases))
	}
	r := c.HelmReleases[0]
	if r.Name != "fleet-agent-local" || r.Revision != 3 || r.Status != "pending-upgrade" || r.PayloadError == nil {
		t.Errorf("release from labels = %+v", r)
	}
	if r.ModifiedAt.IsZero() {
		t.Errorf("modifiedAt label not read: %+v", r)
	}
	if len(s.Errors) != 3 {
		t.Errorf("want exactly 3 errors (YAML, JSON, Helm payload), got:\n%s", describeSnap(s))
	}
}

// ---------------------------------------------------------------- (a) and (b)

func TestLoadBadFilesDirectory(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, badFiles())
	s := load(t, dir)
	checkBadFiles(t, s, "")
}

func TestLoadBadFilesTarGz(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, filepath.Join(dir, "bundle"), badFiles())
	fromDir := load(t, filepath.Join(dir, "bundle"))

	archive := filepath.Join(dir, "bundle.tar.gz")
	packTarGz(t, archive, treeEntries(badFiles(), ""))
	s := load(t, archive)
	checkBadFiles(t, s, "")

	// the same objects and the same errors as the directory
	if got, want := describeSnap(s), describeSnap(fromDir); got != want {
		t.Errorf("archive and directory differ:\narchive:\n%s\ndirectory:\n%s", got, want)
	}
}

// ---------------------------------------------------------------- (c) file shapes

func TestLoadFileShapes(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"multi.yaml": `# pods and their config
apiVersion: v1
kind: ConfigMap
metadata:
  name: fleet-agent
  namespace: cattle-fleet-system
data:
  config: '{"agentTLSMode":"strict"}'
---
---
apiVersion: v1
kind: Namespace
metadata:
  name: cattle-fleet-system
--- # a comment on the separator
apiVersion: v1
kind: ServiceAccount
metadata:
  name: fleet-agent
  namespace: cattle-fleet-system
`,
		"list.yaml": `apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: fleet-agent-7d9c5b6f4-q8w2n
    namespace: cattle-fleet-system
- apiVersion: v1
  kind: Pod
  metadata:
    name: fleet-agent-7d9c5b6f4-zz9kq
    namespace: cattle-fleet-system
`,
		"podlist.json": `{"apiVersion":"v1","kind":"PodList","metadata":{},"items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"helm-operation-x2k4p","namespace":"cattle-system"}}]}`,
		"stream.json": `{"apiVersion":"v1","kind":"Node","metadata":{"name":"cp-1"}}
{"apiVersion":"v1","kind":"Node","metadata":{"name":"worker-1"}}
`,
		// fleet dump: <resource>_<namespace>_<name>, no extension
		"bundledeployments_cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a_fleet-agent-c-m-8k2lq": `{"apiVersion":"fleet.cattle.io/v1alpha1","kind":"BundleDeployment","metadata":{"name":"fleet-agent-c-m-8k2lq","namespace":"cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a"},"spec":{"deploymentID":"s-1:2"}}`,
		"clusters_fleet-default_c-m-8k2lq": "apiVersion: fleet.cattle.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: c-m-8k2lq\n  namespace: fleet-default\n",
		"README.md":                        "# Support bundle\n\nCollected with `kubectl get -o yaml`, e.g.:\n\n```yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: [broken\n```\n",
		"notes.txt":                        "ticket 4711: agent stuck since the upgrade: see logs\n",
		"logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log":          "line 1\nline 2\r\nline 3\n",
		"logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.previous.log": "crashed 1\ncrashed 2\n",
	})
	s := load(t, dir)
	if len(s.Errors) != 0 {
		t.Errorf("no errors expected:\n%s", describeSnap(s))
	}
	if len(s.Clusters) != 1 {
		t.Fatalf("want one cluster:\n%s", describeSnap(s))
	}
	c := s.Clusters[0]
	if c.Name != "local" {
		t.Errorf("a bundle holding Fleet Clusters is named local, got %q", c.Name)
	}
	for _, want := range []struct{ kind, ns, name, src string }{
		{"ConfigMap", "cattle-fleet-system", "fleet-agent", "multi.yaml:2"},
		{"Namespace", "", "cattle-fleet-system", "multi.yaml:11"},
		{"ServiceAccount", "cattle-fleet-system", "fleet-agent", "multi.yaml:16"},
		{"Pod", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n", "list.yaml:1 items[0]"},
		{"Pod", "cattle-fleet-system", "fleet-agent-7d9c5b6f4-zz9kq", "list.yaml:1 items[1]"},
		{"Pod", "cattle-system", "helm-operation-x2k4p", "podlist.json:1 items[0]"},
		{"Node", "", "cp-1", "stream.json:1"},
		{"Node", "", "worker-1", "stream.json:2"},
		{"BundleDeployment", "cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a", "fleet-agent-c-m-8k2lq", "bundledeployments_cluster-fleet-default-c-m-8k2lq-0b1c2d3e4f5a_fleet-agent-c-m-8k2lq:1"},
		{"Cluster", "fleet-default", "c-m-8k2lq", "clusters_fleet-default_c-m-8k2lq:1"},
	} {
		if c.Get(want.kind, want.ns, want.name) == nil {
			t.Errorf("%s %s/%s not loaded", want.kind, want.ns, want.name)
			continue
		}
		if got := c.Source(want.kind, want.ns, want.name); got != want.src {
			t.Errorf("%s %s/%s source = %q, want %q", want.kind, want.ns, want.name, got, want.src)
		}
	}
	if len(c.Pods) != 3 || len(c.Nodes) != 2 || len(c.BundleDeployments) != 1 || len(c.FleetClusters) != 1 {
		t.Errorf("object counts:\n%s", describeSnap(s))
	}
	for _, f := range []string{"README.md", "notes.txt"} {
		if skippedFor(s, f) == "" {
			t.Errorf("%s should be skipped:\n%s", f, describeSnap(s))
		}
	}
	l := c.Logs[snapshot.LogKey("cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n", "fleet-agent")]
	if l == nil {
		t.Fatalf("log not loaded:\n%s", describeSnap(s))
	}
	if strings.Join(l.Current, "|") != "line 1|line 2|line 3" || strings.Join(l.Previous, "|") != "crashed 1|crashed 2" {
		t.Errorf("log lines: current %q previous %q", l.Current, l.Previous)
	}
	if l.CurrentFile != "logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log" ||
		l.PreviousFile != "logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.previous.log" {
		t.Errorf("log files: %q %q", l.CurrentFile, l.PreviousFile)
	}
}

// A broken document further down a multi-document file is reported at its line in the file,
// and the documents before it still load.
func TestLoadYAMLErrorLineInLaterDocument(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n  labels: {x: [1, 2}\n",
	})
	s := load(t, dir)
	// go-yaml names the line of the construct it could not finish, often the one before the
	// bad line: 9 or 10 in the file, not 4 or 5 of the second document
	if len(s.Errors) != 1 || s.Errors[0].File != "ns.yaml" || (s.Errors[0].Line != 9 && s.Errors[0].Line != 10) {
		t.Errorf("want one error at ns.yaml:9 or :10:\n%s", describeSnap(s))
	}
	if s.Clusters[0].Get("Namespace", "", "a") == nil {
		t.Errorf("the document before the broken one must load:\n%s", describeSnap(s))
	}
}

// Byte-order marks: PowerShell's `kubectl get -o yaml > x.yaml` writes UTF-16 with a BOM, and
// editors add UTF-8 BOMs. Neither may hide the object.
func TestLoadByteOrderMarks(t *testing.T) {
	dir := t.TempDir()
	utf16 := func(s string) string {
		b := []byte{0xff, 0xfe}
		for _, r := range s {
			b = append(b, byte(r), byte(r>>8))
		}
		return string(b)
	}
	writeTree(t, dir, map[string]string{
		"utf8.yaml":  "\ufeffapiVersion: v1\nkind: Namespace\nmetadata:\n  name: cattle-fleet-system\n",
		"utf8.json":  "\ufeff{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"kube-system\"}}",
		"utf16.yaml": utf16("apiVersion: v1\r\nkind: Namespace\r\nmetadata:\r\n  name: cattle-system\r\n"),
	})
	s := load(t, dir)
	c := s.Clusters[0]
	for _, ns := range []string{"cattle-fleet-system", "kube-system", "cattle-system"} {
		if c.Get("Namespace", "", ns) == nil {
			t.Errorf("Namespace %s not loaded:\n%s", ns, describeSnap(s))
		}
	}
	if len(s.Errors) != 0 || len(s.Skipped) != 0 {
		t.Errorf("nothing should be skipped or fail:\n%s", describeSnap(s))
	}
}

// ---------------------------------------------------------------- (d) clusters/ layout

func multiCluster() map[string]string {
	return map[string]string{
		"unstick-bundle.yaml": `apiVersion: unstick.dev/v1alpha1
kind: BundleInfo
collectedAt: "2026-11-29T08:00:00Z"
collector: unstick v0.1.0
clusters:
  - name: rancher
    role: management
    server: https://rancher.example.com
  - name: prod-eu-1
    role: downstream
    fleetCluster: fleet-default/c-m-8k2lq
  - name: edge-7
    role: downstream
`,
		"clusters/rancher/fleet/clusters.yaml": `apiVersion: fleet.cattle.io/v1alpha1
kind: ClusterList
items:
- apiVersion: fleet.cattle.io/v1alpha1
  kind: Cluster
  metadata:
    name: c-m-8k2lq
    namespace: fleet-default
    labels:
      management.cattle.io/cluster-display-name: prod-eu-1
      management.cattle.io/cluster-name: c-m-8k2lq
- apiVersion: fleet.cattle.io/v1alpha1
  kind: Cluster
  metadata:
    name: c-m-4x7zt
    namespace: fleet-default
    labels:
      management.cattle.io/cluster-display-name: edge-7
      management.cattle.io/cluster-name: c-m-4x7zt
- apiVersion: fleet.cattle.io/v1alpha1
  kind: Cluster
  metadata:
    name: local
    namespace: fleet-local
`,
		"clusters/prod-eu-1/pods.yaml": goodPod,
		"clusters/prod-eu-1/logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent.log": "hello\n",
		"clusters/edge-7/pods.yaml": strings.ReplaceAll(goodPod, "q8w2n", "m2v9x"),
	}
}

func checkMultiCluster(t *testing.T, s *snapshot.Snapshot) {
	t.Helper()
	if want := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC); !s.CollectedAt.Equal(want) {
		t.Errorf("CollectedAt = %s, want the metadata's %s", s.CollectedAt, want)
	}
	if len(s.Clusters) != 3 {
		t.Fatalf("want 3 clusters:\n%s", describeSnap(s))
	}
	m, prod, edge := s.Cluster("rancher"), s.Cluster("prod-eu-1"), s.Cluster("edge-7")
	if m == nil || prod == nil || edge == nil {
		t.Fatalf("clusters not named after clusters/<name>:\n%s", describeSnap(s))
	}
	if m.Role != snapshot.Management || prod.Role != snapshot.Downstream || edge.Role != snapshot.Downstream {
		t.Errorf("roles:\n%s", describeSnap(s))
	}
	if m.Server != "https://rancher.example.com" {
		t.Errorf("server of rancher = %q", m.Server)
	}
	if len(m.FleetClusters) != 3 || len(prod.Pods) != 1 || len(edge.Pods) != 1 || len(prod.Logs) != 1 {
		t.Errorf("objects landed in the wrong cluster:\n%s", describeSnap(s))
	}
	if prod.FleetCluster != "fleet-default/c-m-8k2lq" {
		t.Errorf("prod-eu-1 fleetCluster (from metadata) = %q", prod.FleetCluster)
	}
	if edge.FleetCluster != "fleet-default/c-m-4x7zt" {
		t.Errorf("edge-7 not matched by its cluster-display-name label: %q", edge.FleetCluster)
	}
	if m.FleetCluster != "fleet-local/local" {
		t.Errorf("management cluster's own Fleet Cluster = %q, want fleet-local/local", m.FleetCluster)
	}
	if len(s.Errors) != 0 {
		t.Errorf("no errors expected:\n%s", describeSnap(s))
	}
}

func TestLoadClustersLayout(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, multiCluster())
	checkMultiCluster(t, load(t, dir))
}

// A bundle made by putting single-cluster bundles side by side under clusters/<name>/: each
// keeps its own unstick-bundle.yaml ("same layout inside"), which names its role and Fleet
// Cluster and says when it was collected.
func TestLoadPerClusterMetadata(t *testing.T) {
	dir := t.TempDir()
	files := multiCluster()
	delete(files, "unstick-bundle.yaml")
	files["clusters/rancher/unstick-bundle.yaml"] = `apiVersion: unstick.dev/v1alpha1
kind: BundleInfo
collectedAt: "2026-11-29T07:58:00Z"
clusters:
  - name: rancher
    role: management
    server: https://rancher.example.com
`
	files["clusters/prod-eu-1/unstick-bundle.yaml"] = `apiVersion: unstick.dev/v1alpha1
kind: BundleInfo
collectedAt: "2026-11-29T08:00:00Z"
clusters:
  - name: prod-eu-1
    role: downstream
    fleetCluster: fleet-default/c-m-8k2lq
`
	files["clusters/edge-7/unstick-bundle.yaml"] = `apiVersion: unstick.dev/v1alpha1
kind: BundleInfo
collectedAt: "2026-11-29T07:59:00Z"
clusters:
  - name: edge-7
`
	writeTree(t, dir, files)
	checkMultiCluster(t, load(t, dir))
}

func TestLoadBadMetadata(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"unstick-bundle.yaml": "apiVersion: unstick.dev/v1alpha1\nkind: BundleInfo\nclusters:\n  - name: a\n    role: boss\n",
		"pods.yaml":           goodPod,
	})
	s := load(t, dir)
	if errs := errorsFor(s, "unstick-bundle.yaml"); len(errs) != 1 || !strings.Contains(errs[0], "boss") {
		t.Errorf("bad metadata: want one error naming the role, got %v", errs)
	}
	if len(s.Clusters) != 1 || len(s.Clusters[0].Pods) != 1 {
		t.Errorf("objects must still load:\n%s", describeSnap(s))
	}
}

// ---------------------------------------------------------------- (e) one top directory

func TestLoadTarGzTopDirectory(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, filepath.Join(dir, "support-bundle"), multiCluster())
	fromDir := load(t, filepath.Join(dir, "support-bundle"))
	checkMultiCluster(t, fromDir)

	for _, prefix := range []string{"support-bundle/", "./support-bundle/"} {
		archive := filepath.Join(dir, "x.tgz")
		packTarGz(t, archive, treeEntries(multiCluster(), prefix))
		s := load(t, archive)
		checkMultiCluster(t, s)
		if got, want := describeSnap(s), describeSnap(fromDir); got != want {
			t.Errorf("%s: archive and directory differ:\narchive:\n%s\ndirectory:\n%s", prefix, got, want)
		}
	}
}

// ---------------------------------------------------------------- (f) hostile archives

func TestLoadTarGzEscapingPaths(t *testing.T) {
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(sandbox, "evil.tar.gz")
	entries := treeEntries(multiCluster(), "bundle/")
	entries = append(entries,
		tarEntry{name: "../evil", body: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: evil\n"},
		tarEntry{name: "bundle/../../evil2.yaml", body: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: evil2\n"},
		tarEntry{name: "/etc/evil3.yaml", body: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: evil3\n"},
		tarEntry{name: "..", body: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: evil4\n"},
		tarEntry{name: "bundle/link.yaml", typ: tar.TypeSymlink, link: "/etc/passwd"},
	)
	packTarGz(t, archive, entries)
	cwd, _ := os.Getwd()
	s := load(t, archive)

	for _, p := range []string{filepath.Join(dir, "evil"), filepath.Join(sandbox, "evil"), filepath.Join(cwd, "evil"), filepath.Join(dir, "evil2.yaml")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	for _, c := range s.Clusters {
		for _, ns := range []string{"evil", "evil2", "evil3", "evil4"} {
			if c.Get("Namespace", "", ns) != nil {
				t.Errorf("object from an escaping entry loaded: %s", ns)
			}
		}
	}
	for _, name := range []string{"../evil", "bundle/../../evil2.yaml", "/etc/evil3.yaml", ".."} {
		if errs := errorsFor(s, name); len(errs) != 1 || !strings.Contains(errs[0], "escapes") {
			t.Errorf("entry %q: want one error saying it escapes the bundle, got %v", name, errs)
		}
	}
	// the hostile entries do not stop the rest from loading, nor the top directory from being seen
	if s.Cluster("rancher") == nil || s.Cluster("prod-eu-1") == nil {
		t.Errorf("the good entries must still load under their clusters:\n%s", describeSnap(s))
	}
	if got := skippedFor(s, "link.yaml"); got == "" {
		t.Errorf("symlink entry should be reported as skipped:\n%s", describeSnap(s))
	}
}

func TestLoadTruncatedArchive(t *testing.T) {
	dir := t.TempDir()
	archive := filepath.Join(dir, "cut.tar.gz")
	files := map[string]string{"a.yaml": goodPod, "b.yaml": strings.Repeat("# padding\n", 4000) + goodPod}
	packTarGz(t, archive, treeEntries(files, ""))
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(archive, b[:len(b)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := (&Offline{Path: archive}).Load(context.Background())
	if err != nil {
		t.Fatalf("a truncated archive should load what it holds, got %v", err)
	}
	if len(s.Errors) == 0 || !strings.Contains(s.Errors[len(s.Errors)-1].String(), "cut.tar.gz") {
		t.Errorf("truncation must be reported naming the archive:\n%s", describeSnap(s))
	}
	if len(s.Clusters) != 1 || len(s.Clusters[0].Pods) != 1 {
		t.Errorf("the entries before the cut must load:\n%s", describeSnap(s))
	}
}

func TestLoadNotABundle(t *testing.T) {
	dir := t.TempDir()
	if _, err := (&Offline{Path: filepath.Join(dir, "missing")}).Load(context.Background()); err == nil {
		t.Error("a missing path must fail")
	}
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	if _, err := (&Offline{Path: empty}).Load(context.Background()); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Errorf("an empty directory must fail clearly, got %v", err)
	}
	plain := filepath.Join(dir, "plain.tgz")
	os.WriteFile(plain, []byte("apiVersion: v1\n"), 0o644)
	if _, err := (&Offline{Path: plain}).Load(context.Background()); err == nil || !strings.Contains(err.Error(), "tar.gz") {
		t.Errorf("a non-gzip file must fail clearly, got %v", err)
	}
}

func TestLoadLimits(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"big.yaml":                         goodPod + strings.Repeat("# filler\n", 200),
		"pods.yaml":                        strings.ReplaceAll(goodPod, "q8w2n", "zz9kq"),
		"logs/cattle-fleet-system/p/c.log": strings.Repeat("0123456789", 10) + "\n" + "a\nb\nc\nd\n",
	})
	lim := DefaultLimits
	lim.MaxFileBytes = 1000
	lim.MaxLogLines = 3
	lim.MaxLineBytes = 20
	s, err := (&Offline{Path: dir, Limits: lim}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorsFor(s, "big.yaml"); len(errs) != 1 || !strings.Contains(errs[0], "limit") {
		t.Errorf("oversized file: want one error, got %v", errs)
	}
	if len(s.Clusters[0].Pods) != 1 {
		t.Errorf("the other file must load:\n%s", describeSnap(s))
	}
	l := s.Clusters[0].Logs[snapshot.LogKey("cattle-fleet-system", "p", "c")]
	if l == nil || strings.Join(l.Current, "|") != "b|c|d" {
		t.Errorf("log tail = %v", l)
	}
}
