package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	fleetv1 "github.com/rancher/fleet/pkg/apis/fleet.cattle.io/v1alpha1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/rancher"
	redactpkg "github.com/unstick-dev/unstick/internal/redact"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// BundleWriter is the Sink of `unstick collect`: it keeps what a live read returns, redacted,
// and writes it as an offline bundle (docs/bundle-format.md) that scans the same.
type BundleWriter struct {
	mu       sync.Mutex
	info     BundleInfo
	clusters map[string]*BundleInfoCluster
	files    map[string][]json.RawMessage // bundle path → List items
	logs     map[string][]string
	redacted map[string]int
}

// NewBundleWriter starts an empty bundle collected at t.
func NewBundleWriter(collector string, t time.Time) *BundleWriter {
	return &BundleWriter{
		info:     BundleInfo{CollectedAt: t.UTC().Truncate(time.Second), Collector: collector},
		clusters: map[string]*BundleInfoCluster{},
		files:    map[string][]json.RawMessage{},
		logs:     map[string][]string{},
		redacted: map[string]int{},
	}
}

func (w *BundleWriter) cluster(name string) *BundleInfoCluster {
	c := w.clusters[name]
	if c == nil {
		c = &BundleInfoCluster{Name: name}
		w.clusters[name] = c
	}
	return c
}

// DeclareCluster records a cluster and where it was read from.
func (w *BundleWriter) DeclareCluster(ci snapshot.ClusterInfo) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.cluster(ci.Name)
	c.Server, c.Context, c.FleetCluster, c.ContextServer = redactpkg.String(ci.Server), ci.Context, ci.FleetCluster, redactpkg.String(ci.ContextServer)
	if ci.ServerVersion != "" {
		c.KubernetesVersion = ci.ServerVersion
	}
	if c.Context == "" {
		c.Context = ci.Name
	}
	c.Role = ci.Role
}

// MarkCRDsCollected records that the cluster's CRDs were listed (even if there were none).
func (w *BundleWriter) MarkCRDsCollected(cluster string) {
	w.mu.Lock()
	w.cluster(cluster).CRDsCollected = true
	w.mu.Unlock()
}

// SetCRDObjects keeps how many objects a CRD with stored versions to migrate has. A count
// the server did not give is not written: the bundle then says nothing of it.
func (w *BundleWriter) SetCRDObjects(cluster, crd string, n int) {
	if n < 0 {
		return
	}
	w.mu.Lock()
	c := w.cluster(cluster)
	if c.CRDObjects == nil {
		c.CRDObjects = map[string]int{}
	}
	c.CRDObjects[crd] = n
	w.mu.Unlock()
}

// Error keeps a read error; the bundle carries it so a later scan reports it too.
func (w *BundleWriter) Error(e finding.ScanError) {
	e.Message = redactpkg.String(e.Message)
	w.mu.Lock()
	w.info.Errors = append(w.info.Errors, e)
	w.mu.Unlock()
}

// AddLog keeps a container log tail.
func (w *BundleWriter) AddLog(cluster, namespace, pod, container string, previous bool, _ string, lines []string) {
	p := path.Join("clusters", cluster, "logs", namespace, pod, container)
	if previous {
		p += ".previous.log"
	} else {
		p += ".log"
	}
	// The loaders redact log lines already (tailLines); a sink fed by anything else is
	// redacted here too, so no bundle ever holds a credential from a log.
	lines = redactpkg.Lines(append([]string(nil), lines...))
	n := 0
	for _, l := range lines {
		if strings.Contains(l, redactpkg.Mask) {
			n++
		}
	}
	w.mu.Lock()
	w.logs[p] = lines
	if n > 0 {
		w.redacted["log lines with credentials"] += n
	}
	w.mu.Unlock()
}

// AddJSON keeps one object, redacted, in the List file of its kind and namespace.
func (w *BundleWriter) AddJSON(cluster, _ string, h *snapshot.Header, raw []byte) error {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	counts := map[string]int{}
	keepAllowed(h.APIVersion, h.Kind, obj, counts)
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	ns := h.Metadata.Namespace
	if ns == "" {
		ns = "_cluster"
	}
	file := strings.ToLower(h.Kind)
	if g, _, ok := strings.Cut(h.APIVersion, "/"); ok && snapshot.QualifiedGroups[g] {
		file += "." + g // Rancher's, CAPI's and Fleet's Clusters in one namespace: one file each
	}
	p := path.Join("clusters", cluster, ns, file+".json")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cluster(cluster)
	w.files[p] = append(w.files[p], b)
	for k, v := range counts {
		w.redacted[k] += v
	}
	return nil
}

// Redacted summarises what was removed, e.g. "12 Secret payloads".
func (w *BundleWriter) Redacted() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k, v := range w.redacted {
		out = append(out, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(out)
	return out
}

// keepAllowed reduces an object to the allowlist of its kind (snapshot.Keep) and counts what it
// removed. A Helm release Secret keeps, as its data, a re-encoded record of the release's
// metadata only (no values; of the manifest, each document's identity), and a Fleet Bundle or
// Content keeps, of its resources, each document's identity.
func keepAllowed(apiVersion, kind string, obj map[string]any, counts map[string]int) {
	sizes := measured(apiVersion, kind, obj)
	defer keepSizes(obj, sizes)
	var helm string
	if kind == "Secret" && obj["type"] == helmrelease.SecretType {
		data, _ := obj["data"].(map[string]any)
		if enc, ok := data["release"].(string); ok {
			if min, err := minimalRelease(enc); err == nil {
				helm = min
				delete(obj, "data")
			}
		}
	}
	plan, planAnn := machinePlanData(kind, obj, counts)
	log := provisioningLog(kind, obj)
	if kind == rancher.KindSetting && strings.HasPrefix(apiVersion, rancher.GroupManagement+"/") {
		if md, _ := obj["metadata"].(map[string]any); md == nil || !rancher.KeptSetting(fmt.Sprint(md["name"])) {
			delete(obj, "value")
			delete(obj, "default")
		}
	}
	var skeleton []any
	var content string
	if strings.HasPrefix(apiVersion, "fleet.cattle.io/") {
		switch kind {
		case "Bundle":
			if spec, ok := obj["spec"].(map[string]any); ok {
				skeleton = skeletonResources(spec["resources"])
			}
		case "Content":
			content = skeletonContent(obj["content"])
		}
	}
	snapshot.Keep(apiVersion, kind, obj, counts)
	if helm != "" {
		obj["data"] = map[string]any{"release": helm}
		counts["Helm release payloads reduced to their metadata"]++
	}
	if plan != nil {
		obj["data"] = plan
		for k, v := range planAnn {
			annotations(obj)[k] = v
		}
	}
	if log != "" {
		if data, ok := obj["data"].(map[string]any); ok {
			data[rancher.ProvisioningLogKey] = log
		}
	}
	if skeleton != nil {
		if spec, ok := obj["spec"].(map[string]any); ok {
			spec["resources"] = skeleton
			counts["Fleet bundle resources reduced to their documents' identities"]++
		}
	}
	if content != "" {
		obj["content"] = content
		counts["Fleet bundle resources reduced to their documents' identities"]++
	}
}

// machinePlanData reduces a Rancher machine-plan Secret's data to its status keys (never the
// plan bodies, which hold join tokens) and its rke.cattle.io/* annotations, before the Secret
// allowlist blanks the rest. nil for any other object.
func machinePlanData(kind string, obj map[string]any, counts map[string]int) (map[string]any, map[string]string) {
	if kind != "Secret" || obj["type"] != rancher.SecretTypeMachinePlan {
		return nil, nil
	}
	raw := map[string][]byte{}
	data, _ := obj["data"].(map[string]any)
	for k, v := range data {
		if s, ok := v.(string); ok {
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				raw[k] = b
			}
		}
	}
	delete(obj, "data")
	safe, _ := rancher.SafeData(raw)
	counts["machine-plan bodies reduced to checksums"]++
	var ann map[string]string
	if md, ok := obj["metadata"].(map[string]any); ok {
		a := map[string]string{}
		if m, ok := md["annotations"].(map[string]any); ok {
			for k, v := range m {
				if s, ok := v.(string); ok {
					a[k] = s
				}
			}
		}
		ann = rancher.SafeAnnotations(a)
	}
	return rancher.EncodeData(safe), ann
}

// provisioningLog is the redacted tail of a provisioned cluster's provisioning-log.
func provisioningLog(kind string, obj map[string]any) string {
	if kind != "ConfigMap" {
		return ""
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil || !rancher.IsProvisioningLog(fmt.Sprint(md["namespace"]), fmt.Sprint(md["name"])) {
		return ""
	}
	data, _ := obj["data"].(map[string]any)
	s, _ := data[rancher.ProvisioningLogKey].(string)
	return rancher.LogTail(s)
}

// skeletonResources rewrites Fleet bundle resources as the identities of their documents, one
// plain resource per file (see manifest.Skeleton); nil when there is nothing to keep.
func skeletonResources(v any) []any {
	raw, err := json.Marshal(v)
	if err != nil || v == nil {
		return nil
	}
	var rs []manifest.Resource
	if json.Unmarshal(raw, &rs) != nil {
		return nil
	}
	var out []any
	for _, r := range rs {
		docs, _ := manifest.ResourceDocs([]manifest.Resource{r})
		if len(docs) == 0 {
			continue
		}
		out = append(out, map[string]any{"name": r.Name, "content": manifest.Skeleton(docs)})
	}
	return out
}

// skeletonContent rewrites a Fleet Content's content (base64 of gzip of {"resources": [...]},
// as the API returns it) the same way; "" when it cannot be read.
func skeletonContent(v any) string {
	s, ok := v.(string)
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return ""
	}
	d, err := manifest.Gunzip(b)
	if err != nil {
		return ""
	}
	var m struct {
		Resources any `json:"resources"`
	}
	if json.Unmarshal(d, &m) != nil {
		return ""
	}
	out, err := json.Marshal(map[string]any{"resources": skeletonResources(m.Resources)})
	if err != nil {
		return ""
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(out); err != nil || zw.Close() != nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(gz.Bytes())
}

// measured weighs a Helm release Secret or a Fleet Bundle before keepAllowed reduces it, the
// same way the loader weighs it (snapshot.MeasureBundle, SecretDataBytes); "" for other kinds.
func measured(apiVersion, kind string, obj map[string]any) string {
	isBundle := kind == "Bundle" && strings.HasPrefix(apiVersion, "fleet.cattle.io/")
	isRelease := kind == "Secret" && obj["type"] == helmrelease.SecretType
	if !isBundle && !isRelease {
		return ""
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	if isBundle {
		var b fleetv1.Bundle
		if json.Unmarshal(raw, &b) != nil {
			return ""
		}
		return snapshot.SizesJSON(snapshot.MeasureBundle(&b))
	}
	var sec corev1.Secret
	if json.Unmarshal(raw, &sec) != nil {
		return ""
	}
	return snapshot.SizesJSON(snapshot.ObjectSize{Bytes: snapshot.SecretDataBytes(sec.Data)})
}

// keepSizes records what measured weighed as the reduced object's snapshot.SizesAnnotation.
func keepSizes(obj map[string]any, sizes string) {
	if sizes == "" {
		return
	}
	annotations(obj)[snapshot.SizesAnnotation] = sizes
}

// annotations is the object's metadata.annotations map, made when it has none.
func annotations(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	return ann
}

// minimalRelease re-encodes a Helm release record with only what unstick reads (name,
// namespace, revision, status, times, description, chart name and versions), in Helm's own
// storage encoding, so the bundle's Secret decodes like the original: no values, no manifest.
func minimalRelease(apiValue string) (string, error) {
	raw, err := base64.StdEncoding.DecodeString(apiValue)
	if err != nil {
		return "", err
	}
	rel, err := helmrelease.Decode(raw)
	if err != nil {
		return "", err
	}
	// The manifest keeps each document's identity (apiVersion, kind, namespace, name, template
	// path), never its body: what the api/ checks read.
	out := &release.Release{Name: rel.Name, Namespace: rel.Namespace, Version: rel.Version, Manifest: manifest.Skeleton(manifest.Docs(rel.Manifest, ""))}
	if rel.Info != nil {
		// The description is free text Helm fills with errors ("Upgrade \"x\" failed: ..."),
		// which may quote a value: it passes the redactor.
		out.Info = &release.Info{FirstDeployed: rel.Info.FirstDeployed, LastDeployed: rel.Info.LastDeployed, Deleted: rel.Info.Deleted, Description: redactpkg.String(rel.Info.Description), Status: rel.Info.Status}
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		out.Chart = &chart.Chart{Metadata: &chart.Metadata{Name: rel.Chart.Metadata.Name, Version: rel.Chart.Metadata.Version, AppVersion: rel.Chart.Metadata.AppVersion, APIVersion: rel.Chart.Metadata.APIVersion}}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(b); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	helmForm := base64.StdEncoding.EncodeToString(gz.Bytes())
	return base64.StdEncoding.EncodeToString([]byte(helmForm)), nil
}

// Write writes the bundle to dest: a .tar.gz/.tgz file, or a new (or empty) directory.
func (w *BundleWriter) Write(dest string) (files int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	contents := map[string][]byte{}
	for p, items := range w.files {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
		b, err := json.MarshalIndent(list, "", " ")
		if err != nil {
			return 0, err
		}
		contents[p] = b
	}
	for p, lines := range w.logs {
		contents[p] = []byte(strings.Join(lines, "\n") + "\n")
	}
	info := w.info
	names := make([]string, 0, len(w.clusters))
	for n := range w.clusters {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		info.Clusters = append(info.Clusters, *w.clusters[n])
	}
	for k, v := range w.redacted {
		info.Redacted = append(info.Redacted, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(info.Redacted)
	meta, err := info.Marshal()
	if err != nil {
		return 0, err
	}
	contents[BundleInfoFile] = meta
	paths := make([]string, 0, len(contents))
	for p := range contents {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		// Cluster names come from kubeconfig contexts: none may lead out of the bundle.
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return 0, fmt.Errorf("bundle path %q is not local to the bundle", p)
		}
	}
	if strings.HasSuffix(dest, ".tar.gz") || strings.HasSuffix(dest, ".tgz") {
		err := writeFileAtomic(dest, func(f io.Writer) error { return writeTarGz(f, paths, contents, info.CollectedAt) })
		return len(paths), err
	}
	return len(paths), writeDirAtomic(dest, paths, contents)
}

func writeTarGz(f io.Writer, paths []string, contents map[string][]byte, mtime time.Time) error {
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, p := range paths {
		b := contents[p]
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o600, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
