package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// NotAnObject says why a JSON document is not a Kubernetes object: a bare value, a sequence, an
// empty mapping, a field of the wrong type, a missing apiVersion or kind. It answers "" for a
// document whose header decodes and names both (h then holds it).
func NotAnObject(raw []byte, h *Header) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "an empty document"
	}
	switch c := t[0]; {
	case c == '"':
		return "a bare string, not a Kubernetes object"
	case c == '-' || c >= '0' && c <= '9':
		return "a bare number, not a Kubernetes object"
	case c == 't' || c == 'f':
		return "a bare boolean, not a Kubernetes object"
	case c == 'n':
		return "an empty document (null), not a Kubernetes object"
	case c == '[':
		return "a sequence, not a mapping: not a Kubernetes object"
	case c != '{':
		return "not a mapping: not a Kubernetes object"
	}
	if err := json.Unmarshal(t, h); err != nil {
		return wrongTypeField(t)
	}
	switch {
	case h.APIVersion == "" && h.Kind == "":
		if bytes.Equal(bytes.Join(bytes.Fields(t), nil), []byte("{}")) {
			return "an empty mapping, not a Kubernetes object"
		}
		return "no apiVersion and kind, not a Kubernetes object"
	case h.APIVersion == "":
		return fmt.Sprintf("no apiVersion (kind %s), not read", h.Kind)
	case h.Kind == "":
		return fmt.Sprintf("no kind (apiVersion %s), not read", h.APIVersion)
	}
	return ""
}

// wrongTypeField names the header field whose JSON type is not what Kubernetes gives it.
func wrongTypeField(obj []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return "not a mapping: not a Kubernetes object"
	}
	want := []struct{ field, first, what string }{
		{"apiVersion", `"`, "a string"},
		{"kind", `"`, "a string"},
		{"metadata", `{`, "a mapping"},
		{"items", `[`, "a list"},
	}
	for _, w := range want {
		v, ok := m[w.field]
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		if bytes.Equal(v, []byte("null")) || bytes.HasPrefix(v, []byte(w.first)) {
			if w.field != "metadata" {
				continue
			}
			var md struct {
				Name      json.RawMessage `json:"name"`
				Namespace json.RawMessage `json:"namespace"`
			}
			if json.Unmarshal(v, &md) == nil {
				for f, x := range map[string]json.RawMessage{"name": md.Name, "namespace": md.Namespace} {
					if x != nil && !bytes.HasPrefix(bytes.TrimSpace(x), []byte(`"`)) && string(bytes.TrimSpace(x)) != "null" {
						return fmt.Sprintf("metadata.%s is not a string, not read", f)
					}
				}
			}
			continue
		}
		return fmt.Sprintf("%s is not %s, not read", w.field, w.what)
	}
	return "a header field of the wrong type, not read"
}

// servedBy is the API group of each kind unstick decodes into a type (core is ""), for the kinds
// whose name belongs to one group only among Kubernetes' and Fleet's.
var servedBy = map[string]string{
	"Pod": "", "Node": "", "Namespace": "", "ConfigMap": "", "Secret": "", "ResourceQuota": "",
	"Deployment": "apps", "ReplicaSet": "apps", "DaemonSet": "apps", "StatefulSet": "apps",
	"Job":                      "batch",
	"CustomResourceDefinition": "apiextensions.k8s.io",
	"BundleDeployment":         "fleet.cattle.io", "ClusterRegistration": "fleet.cattle.io",
}

// builtinGroup reports an API group served by Kubernetes itself (core, apps, batch,
// *.k8s.io), where a kind not of that group cannot exist; other groups belong to CRDs, which
// may reuse any kind name (a volcano Job), and are kept as other objects.
func builtinGroup(g string) bool {
	return !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io") || g == "fleet.cattle.io"
}

// Mismatch says why apiVersion cannot serve kind, for a kind unstick reads as a type: a Pod
// with apiVersion apps/v1, a core kind at a version other than v1. "" when they fit or the
// kind is not one unstick types.
func Mismatch(apiVersion, kind string) string {
	want, ok := servedBy[kind]
	if !ok {
		return ""
	}
	group := groupOf(apiVersion)
	switch {
	case group != want && builtinGroup(group):
		return fmt.Sprintf("apiVersion %s does not serve kind %s (%s is %s); not read", apiVersion, kind, kind, servedAs(want))
	case want == "" && apiVersion != "v1":
		return fmt.Sprintf("apiVersion %s does not serve kind %s (%s is v1); not read", apiVersion, kind, kind)
	}
	return ""
}

func servedAs(group string) string {
	if group == "" {
		return "v1"
	}
	return "in API group " + group
}
