// Package manifest reads the identity of each document in a Kubernetes manifest — its
// apiVersion, kind, namespace and name, plus, for a CustomResourceDefinition, its versions —
// and nothing else. Helm release manifests, Fleet Bundle resources and Fleet Contents pass
// through here so that the snapshot knows which APIs they use without keeping a single value:
// the manifest body is dropped as soon as its identities are read.
//
// The reader works line by line on the top-level keys, so it also reads the templates of a
// chart staged in a Fleet Bundle (files with {{ }} that are not YAML until rendered): a field
// that is templated is left empty, and a document whose apiVersion or kind is templated is
// not reported.
package manifest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unique"

	"sigs.k8s.io/yaml"
)

// Doc is one document of a manifest, by identity only.
type Doc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	// Source is where the document comes from inside its manifest: the template path Helm
	// writes as "# Source: chart/templates/x.yaml", or the Fleet bundle resource name (the
	// file's path in the GitRepo).
	Source string `json:"source,omitempty"`
	// CRD is set for a CustomResourceDefinition: the versions it serves and stores.
	CRD *CRD `json:"crd,omitempty"`
}

// CRD is what is kept of a CustomResourceDefinition document.
type CRD struct {
	Group    string    `json:"group"`
	Plural   string    `json:"plural"`
	Versions []Version `json:"versions"`
}

// Version is one entry of a CRD's spec.versions.
type Version struct {
	Name    string `json:"name"`
	Served  bool   `json:"served"`
	Storage bool   `json:"storage"`
}

// StorageVersion is the version marked storage, or "".
func (c *CRD) StorageVersion() string {
	for _, v := range c.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// Has reports whether the CRD lists version v in spec.versions.
func (c *CRD) Has(v string) bool {
	for _, x := range c.Versions {
		if x.Name == v {
			return true
		}
	}
	return false
}

// interned makes the document's strings share one copy with every equal string: a fleet's
// release revisions repeat the same kinds, versions, names and template paths thousands of
// times, and the snapshot keeps them as long as it lives (serve).
func (d Doc) interned() Doc {
	for _, s := range []*string{&d.APIVersion, &d.Kind, &d.Namespace, &d.Name, &d.Source} {
		if *s != "" {
			*s = unique.Make(*s).Value()
		}
	}
	return d
}

// MaxDocs bounds the documents read from one manifest: a manifest is a few hundred at most,
// and a hostile one must not make the snapshot grow without limit.
const MaxDocs = 2000

// maxDecoded bounds one decompressed resource or Content.
const maxDecoded = 64 << 20

// Docs returns the identity of every document in a YAML or JSON manifest (documents separated
// by "---" lines). source names every document whose manifest carries no "# Source:" line.
func Docs(text, source string) []Doc {
	var out []Doc
	for _, d := range split(text) {
		if len(out) >= MaxDocs {
			break
		}
		if doc, ok := identify(d, source); ok {
			out = append(out, doc.interned())
		}
	}
	return out
}

// split cuts a manifest at its "---" separator lines.
func split(text string) []string {
	var docs []string
	var cur strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "---") && strings.TrimSpace(strings.TrimLeft(line, "-")) == "" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
	}
	return append(docs, cur.String())
}

func identify(doc, source string) (Doc, bool) {
	t := strings.TrimSpace(doc)
	if t == "" {
		return Doc{}, false
	}
	if t[0] == '{' {
		var h struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(t), &h) != nil || h.APIVersion == "" || h.Kind == "" {
			return Doc{}, false
		}
		d := Doc{APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace, Source: source}
		if isCRD(d) {
			d.CRD = crdOf([]byte(t))
		}
		return d, true
	}
	d := Doc{Source: source}
	inMeta := false
	metaIndent := -1
	for _, line := range strings.Split(doc, "\n") {
		if s, ok := strings.CutPrefix(line, "# Source: "); ok {
			d.Source = strings.TrimSpace(s)
			continue
		}
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(trimmed)
		if indent == 0 {
			inMeta = false
			key, val, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			switch key {
			case "apiVersion":
				d.APIVersion = scalar(val)
			case "kind":
				d.Kind = scalar(val)
			case "metadata":
				inMeta, metaIndent = true, -1
			}
			continue
		}
		if !inMeta {
			continue
		}
		if metaIndent < 0 {
			metaIndent = indent
		}
		if indent != metaIndent {
			continue
		}
		key, val, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		switch key {
		case "name":
			d.Name = scalar(val)
		case "namespace":
			d.Namespace = scalar(val)
		}
	}
	if d.APIVersion == "" || d.Kind == "" {
		return Doc{}, false
	}
	if isCRD(d) && !strings.Contains(doc, "{{") {
		d.CRD = crdOf([]byte(doc))
	}
	return d, true
}

func isCRD(d Doc) bool {
	return d.Kind == "CustomResourceDefinition" && strings.HasPrefix(d.APIVersion, "apiextensions.k8s.io/")
}

// scalar reads a plain YAML scalar value; a templated, block or flow value reads as "".
func scalar(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		v = v[1 : len(v)-1]
	}
	if strings.Contains(v, "{{") || strings.ContainsAny(v, "{}[]|>&*!") {
		return ""
	}
	return v
}

// crdOf reads a CRD document's group, plural and versions; nil when it does not parse or
// its aliases expand past what CheckAliases allows (it is decoded whole).
func crdOf(b []byte) *CRD {
	if CheckAliases(string(b)) != nil {
		return nil
	}
	var v struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Plural string `json:"plural"`
			} `json:"names"`
			Version  string    `json:"version"` // apiextensions.k8s.io/v1beta1
			Versions []Version `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil
	}
	c := &CRD{Group: v.Spec.Group, Plural: v.Spec.Names.Plural, Versions: v.Spec.Versions}
	if len(c.Versions) == 0 && v.Spec.Version != "" {
		c.Versions = []Version{{Name: v.Spec.Version, Served: true, Storage: true}}
	}
	return c
}

// Resource is one Fleet bundle resource (fleet.cattle.io/v1alpha1 BundleResource): a file of
// the bundle, by its path in the GitRepo, with content that is plain or "base64+gz".
type Resource struct {
	Name     string `json:"name,omitempty"`
	Content  string `json:"content,omitempty"`
	Encoding string `json:"encoding,omitempty"`
}

// ResourceDocs returns the documents of Fleet bundle resources, each named after its file.
// A resource that cannot be decoded is skipped and counted in the error.
func ResourceDocs(rs []Resource) ([]Doc, error) {
	var out []Doc
	var bad []string
	for _, r := range rs {
		text, err := decodeResource(r)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", r.Name, err))
			continue
		}
		if isArchive(text) {
			continue // a packaged chart (.tgz): not a manifest
		}
		for _, d := range Docs(text, r.Name) {
			if len(out) >= MaxDocs {
				break
			}
			out = append(out, d)
		}
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("resources not decoded: %s", strings.Join(bad, "; "))
	}
	return out, nil
}

func decodeResource(r Resource) (string, error) {
	switch r.Encoding {
	case "":
		return r.Content, nil
	case "base64+gz":
		b, err := base64.StdEncoding.DecodeString(r.Content)
		if err != nil {
			return "", fmt.Errorf("base64: %w", err)
		}
		d, err := Gunzip(b)
		return string(d), err
	default:
		return "", fmt.Errorf("unknown encoding %q", r.Encoding)
	}
}

func isArchive(s string) bool { return strings.HasPrefix(s, "\x1f\x8b") }

// Gunzip decompresses b, bounded.
func Gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	d, err := io.ReadAll(io.LimitReader(zr, maxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if len(d) > maxDecoded {
		return nil, fmt.Errorf("larger than %d MiB decompressed", maxDecoded>>20)
	}
	return d, nil
}

// ContentDocs returns the documents of a Fleet Content's content: gzip of the JSON
// {"resources": [BundleResource...]} that Fleet's manifest package writes.
func ContentDocs(content []byte) ([]Doc, error) {
	if len(content) == 0 {
		return nil, nil
	}
	d, err := Gunzip(content)
	if err != nil {
		return nil, err
	}
	var m struct {
		Resources []Resource `json:"resources"`
	}
	if err := json.Unmarshal(d, &m); err != nil {
		return nil, fmt.Errorf("content JSON: %w", err)
	}
	return ResourceDocs(m.Resources)
}

// Skeleton writes documents back as a manifest that holds their identities only (what
// `collect` keeps of a Helm release manifest or a bundle resource): reading it with Docs
// gives the same documents.
func Skeleton(docs []Doc) string {
	var b strings.Builder
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		if d.Source != "" {
			fmt.Fprintf(&b, "# Source: %s\n", d.Source)
		}
		fmt.Fprintf(&b, "apiVersion: %s\nkind: %s\n", quote(d.APIVersion), quote(d.Kind))
		if d.Name != "" || d.Namespace != "" {
			b.WriteString("metadata:\n")
			if d.Name != "" {
				fmt.Fprintf(&b, "  name: %s\n", quote(d.Name))
			}
			if d.Namespace != "" {
				fmt.Fprintf(&b, "  namespace: %s\n", quote(d.Namespace))
			}
		}
		if d.CRD != nil {
			fmt.Fprintf(&b, "spec:\n  group: %s\n  names:\n    plural: %s\n  versions:\n", quote(d.CRD.Group), quote(d.CRD.Plural))
			for _, v := range d.CRD.Versions {
				fmt.Fprintf(&b, "  - name: %s\n    served: %t\n    storage: %t\n", quote(v.Name), v.Served, v.Storage)
			}
		}
	}
	return b.String()
}

func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
