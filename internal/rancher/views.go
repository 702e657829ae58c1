package rancher

import (
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/redact"
)

// API groups and kinds unstick reads for Rancher-driven upgrades. Several share the kind
// name Cluster: the snapshot indexes them by group (snapshot.KeyFor).
const (
	GroupProvisioning = "provisioning.cattle.io"
	GroupRKE          = "rke.cattle.io"
	GroupManagement   = "management.cattle.io"
	GroupCAPI         = "cluster.x-k8s.io"

	KindRKEControlPlane = "RKEControlPlane"
	KindRKEBootstrap    = "RKEBootstrap"
	KindMachine         = "Machine"
	KindSetting         = "Setting"
)

// Settings on the management cluster the checks read (management.cattle.io/v3 Setting,
// field value); every other Setting's value is dropped on load.
const (
	SettingServerURL         = "server-url"
	SettingSystemRegistry    = "system-default-registry"
	SettingImportedVersionMg = "imported-cluster-version-management"
)

// KeptSetting reports a Setting whose value is kept.
func KeptSetting(name string) bool {
	return name == SettingServerURL || name == SettingSystemRegistry || name == SettingImportedVersionMg
}

// ProvisioningLogName is the ConfigMap in a provisioned cluster's c-m-* namespace holding
// the planner's history (key "log"); ProvisioningLogLines is how many trailing lines are kept.
const (
	ProvisioningLogName  = "provisioning-log"
	ProvisioningLogKey   = "log"
	ProvisioningLogLines = 30
)

// IsProvisioningLog reports the provisioning-log ConfigMap of a provisioned cluster.
func IsProvisioningLog(namespace, name string) bool {
	return name == ProvisioningLogName && strings.HasPrefix(namespace, "c-m-")
}

// LogTail keeps the last ProvisioningLogLines non-empty lines of a provisioning log, redacted.
func LogTail(log string) string {
	lines := splitLines([]byte(log))
	if len(lines) > ProvisioningLogLines {
		lines = lines[len(lines)-ProvisioningLogLines:]
	}
	return strings.Join(redact.Lines(lines), "\n")
}

// Condition is one status condition of a Rancher or CAPI object (both the wrangler form with
// lastUpdateTime and the metav1 form with lastTransitionTime).
type Condition struct {
	Type, Status, Reason, Message string
	Time                          time.Time
}

// Conditions reads status.conditions of an object; malformed entries are skipped.
func Conditions(obj map[string]any) []Condition {
	var out []Condition
	list, _ := Nested(obj, "status", "conditions").([]any)
	for _, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		c := Condition{Type: str(m["type"]), Status: str(m["status"]), Reason: str(m["reason"]), Message: str(m["message"])}
		for _, k := range []string{"lastUpdateTime", "lastTransitionTime"} {
			if t, err := time.Parse(time.RFC3339, str(m[k])); err == nil && t.After(c.Time) {
				c.Time = t.UTC()
			}
		}
		if c.Type != "" {
			out = append(out, c)
		}
	}
	return out
}

// Cond returns the condition of that type, if any.
func Cond(obj map[string]any, typ string) (Condition, bool) {
	for _, c := range Conditions(obj) {
		if c.Type == typ {
			return c, true
		}
	}
	return Condition{}, false
}

// Nested walks maps by keys; nil when a step is missing or not a map.
func Nested(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// String is the string at path, "" when absent or not a string.
func String(obj map[string]any, path ...string) string { return str(Nested(obj, path...)) }

// Bool is the bool at path.
func Bool(obj map[string]any, path ...string) (value, set bool) {
	b, ok := Nested(obj, path...).(bool)
	return b, ok
}

// StringMap is the map of strings at path (labels, annotations).
func StringMap(obj map[string]any, path ...string) map[string]string {
	m, _ := Nested(obj, path...).(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// VersionTriple is a Kubernetes version's major.minor.patch without "v", pre-release or
// build metadata (v1.30.4+rke2r1 → 1.30.4), as the planner compares kubelet versions.
func VersionTriple(v string) string {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "+-"); i >= 0 {
		v = v[:i]
	}
	return v
}

// Distribution is "rke2" or "k3s" from a version string (v1.30.4+rke2r1, v1.30.4+k3s1).
func Distribution(v string) string {
	switch {
	case strings.Contains(v, "rke2"):
		return "rke2"
	case strings.Contains(v, "k3s"):
		return "k3s"
	}
	return ""
}

// PlannedImages are the images Rancher's planner has every node of a provisioned cluster
// pull for version: the system-agent-installer image of the distribution (rancher/rancher
// pkg/capr/planner getInstallerImage: "rancher/system-agent-installer-" + runtime + ":" +
// the version with "+" turned into "-", behind the system default registry) and, for RKE2,
// the rke2-runtime image the installed rke2 starts from (a Windows node pulls its
// "-windows-amd64" variant). registry is the registry prefix ("" for Docker Hub).
func PlannedImages(version, registry, nodeOS string) []string {
	dist := Distribution(version)
	if dist == "" || version == "" {
		return nil
	}
	prefix := ""
	if registry = strings.TrimSuffix(strings.TrimSpace(registry), "/"); registry != "" {
		prefix = registry + "/"
	}
	tag := strings.ReplaceAll(version, "+", "-")
	out := []string{prefix + "rancher/system-agent-installer-" + dist + ":" + tag}
	if dist == "rke2" {
		if nodeOS == "windows" {
			out = append(out, prefix+"rancher/rke2-runtime:"+tag+"-windows-amd64")
		} else {
			out = append(out, prefix+"rancher/rke2-runtime:"+tag)
		}
	}
	return out
}

// ClusterRegistry is the registry a provisioned cluster pulls its system images from: its own
// spec.rkeConfig.machineGlobalConfig system-default-registry, else Rancher's
// system-default-registry setting.
func ClusterRegistry(pc map[string]any, setting string) string {
	if r := String(pc, "spec", "rkeConfig", "machineGlobalConfig", "system-default-registry"); r != "" {
		return r
	}
	return setting
}
