package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/helmrelease"
	"github.com/unstick-dev/unstick/internal/manifest"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// deprecatedRun judges one Helm release (deployed, its documents given) on a cluster at 1.35
// moving to target, and returns the findings by ID.
func deprecatedRun(t *testing.T, target string, docs []manifest.Doc) map[string]finding.Finding {
	t.Helper()
	c := &snapshot.Cluster{Name: "edge-2", Role: snapshot.Downstream,
		Nodes: []*corev1.Node{node("a", "v1.35.4+k3s1")},
		HelmReleases: []*helmrelease.Release{
			{Name: "gpu-operator", Namespace: "gpu-system", Revision: 7, Status: "deployed", SecretName: "sh.helm.release.v1.gpu-operator.v7", Docs: docs},
		}}
	fs, err := apiRemoved.Run(gateContext(t, &snapshot.Snapshot{Clusters: []*snapshot.Cluster{c}}, target))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]finding.Finding{}
	for _, f := range fs {
		out[f.ID] = f
	}
	return out
}

// A release whose deployed revision uses APIs the target serves deprecated is a warning of
// its own (not linked to the release's other findings), naming the release that removes each
// as a plan when that release is after the newest one unstick knows (1.37).
func TestDeprecatedInTargetHelmRelease(t *testing.T) {
	got := deprecatedRun(t, "v1.37.1+k3s1", gpuDocs())
	dep, ok := got["api/deprecated-in-target"]
	if !ok || dep.Severity != finding.Warning || len(got) != 1 {
		t.Fatalf("want one warning api/deprecated-in-target, got %+v", got)
	}
	var ev []string
	for _, e := range dep.Evidence {
		ev = append(ev, e.Text)
	}
	want := []string{
		"revision 7 (deployed) gpu-operator/templates/deviceclass.yaml: DeviceClass gpu.example.com uses resource.k8s.io/v1beta2, deprecated in Kubernetes 1.36 (removal planned for Kubernetes 1.39); replacement resource.k8s.io/v1",
		"revision 7 (deployed) gpu-operator/templates/claim.yaml: ResourceClaimTemplate gpu-system/single-gpu uses resource.k8s.io/v1beta1, deprecated in Kubernetes 1.35 (removal planned for Kubernetes 1.38); replacement resource.k8s.io/v1",
	}
	if len(ev) != 2 || ev[0] != want[0] || !strings.HasPrefix(ev[1], want[1]) {
		t.Errorf("evidence:\n%s\nwant:\n%s", strings.Join(ev, "\n"), strings.Join(want, "\n"))
	}
	if len(dep.Keys) != 1 || !strings.HasPrefix(dep.Keys[0], "deprecated:") {
		t.Errorf("keys %v: a deprecation is its own incident", dep.Keys)
	}
	if dep.Vars["release"] != "gpu-operator" || dep.Vars["kubernetes-version"] != "v1.37" {
		t.Errorf("vars %v", dep.Vars)
	}
}

// An API the target removes is api/removed-in-target, not a deprecation too; the other
// document, still served, stays a deprecation. A removal after 1.37 reads as a plan.
func TestDeprecatedInTargetLeavesRemovalsToTheGate(t *testing.T) {
	got := deprecatedRun(t, "v1.38.0", gpuDocs())
	rit, dep := got["api/removed-in-target"], got["api/deprecated-in-target"]
	if len(got) != 2 || !strings.Contains(rit.Summary, "ResourceClaimTemplate resource.k8s.io/v1beta1") || strings.Contains(rit.Summary, "DeviceClass") {
		t.Fatalf("want removed-in-target for v1beta1 alone, got %+v", got)
	}
	if len(rit.Evidence) != 1 || !strings.Contains(rit.Evidence[0].Text, "removal planned for Kubernetes 1.38") {
		t.Errorf("a removal after the newest known release must read as a plan: %+v", rit.Evidence)
	}
	if len(dep.Evidence) != 1 || !strings.Contains(dep.Evidence[0].Text, "DeviceClass gpu.example.com") {
		t.Errorf("deprecation evidence %+v", dep.Evidence)
	}
}

// Without a target nothing is deprecated "in target"; at a target that does not deprecate
// the API yet, neither.
func TestDeprecatedInTargetNeedsATarget(t *testing.T) {
	if got := deprecatedRun(t, "", gpuDocs()); len(got) != 0 {
		t.Errorf("no target: %+v", got)
	}
	// resource.k8s.io/v1beta2 DeviceTaintRule is deprecated from 1.39 on.
	taint := []manifest.Doc{{APIVersion: "resource.k8s.io/v1beta2", Kind: "DeviceTaintRule", Name: "maintenance"}}
	if got := deprecatedRun(t, "v1.37.1", taint); len(got) != 0 {
		t.Errorf("target 1.37: %+v", got)
	}
}

func gpuDocs() []manifest.Doc {
	return []manifest.Doc{
		{APIVersion: "resource.k8s.io/v1beta2", Kind: "DeviceClass", Name: "gpu.example.com", Source: "gpu-operator/templates/deviceclass.yaml"},
		{APIVersion: "resource.k8s.io/v1beta1", Kind: "ResourceClaimTemplate", Namespace: "gpu-system", Name: "single-gpu", Source: "gpu-operator/templates/claim.yaml"},
		{APIVersion: "v1", Kind: "Service", Namespace: "gpu-system", Name: "gpu-operator"},
	}
}
