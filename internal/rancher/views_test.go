package rancher

import (
	"reflect"
	"testing"
)

// Objects read from a bundle may hold anything where a condition list or a string should be:
// the views skip what is malformed and never panic.
func TestViewsTolerateMalformedObjects(t *testing.T) {
	for _, obj := range []map[string]any{
		nil,
		{"status": "conditions"},
		{"status": map[string]any{"conditions": "not a list"}},
		{"status": map[string]any{"conditions": []any{"x", 3, nil, map[string]any{"status": "True"}, map[string]any{"type": 7}}}},
		{"spec": []any{"kubernetesVersion"}},
	} {
		if got := Conditions(obj); len(got) != 0 {
			t.Errorf("Conditions(%v) = %v", obj, got)
		}
		if s := String(obj, "spec", "kubernetesVersion"); s != "" {
			t.Errorf("String(%v) = %q", obj, s)
		}
		_, _ = Bool(obj, "status", "agentConnected")
		_ = StringMap(obj, "metadata", "labels")
	}
	c, ok := Cond(map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Reconciled", "status": "Unknown", "message": "waiting", "lastTransitionTime": "not a time", "lastUpdateTime": "2026-11-28T07:00:00Z"},
	}}}, "Reconciled")
	if !ok || c.Message != "waiting" || c.Time.IsZero() {
		t.Errorf("Cond = %+v, %v", c, ok)
	}
}

func TestPlannedImages(t *testing.T) {
	for _, tc := range []struct {
		version, registry, os string
		want                  []string
	}{
		{"v1.31.4+rke2r1", "", "linux", []string{"rancher/system-agent-installer-rke2:v1.31.4-rke2r1", "rancher/rke2-runtime:v1.31.4-rke2r1"}},
		{"v1.31.4+rke2r1", "registry.example.com/", "windows", []string{"registry.example.com/rancher/system-agent-installer-rke2:v1.31.4-rke2r1", "registry.example.com/rancher/rke2-runtime:v1.31.4-rke2r1-windows-amd64"}},
		{"v1.31.4+k3s1", "mirror.local:5000", "linux", []string{"mirror.local:5000/rancher/system-agent-installer-k3s:v1.31.4-k3s1"}},
		{"v1.31.4", "", "linux", nil}, // not a distribution version Rancher provisions
	} {
		if got := PlannedImages(tc.version, tc.registry, tc.os); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("PlannedImages(%q, %q, %q) = %v, want %v", tc.version, tc.registry, tc.os, got, tc.want)
		}
	}
}
