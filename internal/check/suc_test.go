package check_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/imageref"
	"github.com/unstick-dev/unstick/internal/source"
)

// The acceptance incident of issue 4: a stuck Plan whose Job pod sits in ImagePullBackOff with
// "manifest unknown", and a node labelled with the Plan's hash while its Job failed, are one
// incident: the image is the root cause, the Job and the node are symptoms.
func TestMissingPlanImageIsOneIncident(t *testing.T) {
	rep := scanDir(t, scenarioPath("suc/image-missing-incident"), scenarioNow)
	if len(rep.Incidents) != 1 {
		t.Fatalf("want 1 incident, got %d:\n%s", len(rep.Incidents), describe(rep))
	}
	inc := rep.Incidents[0]
	if inc.RootCause.ID != "suc/image-missing" || !strings.Contains(inc.RootCause.Summary, "registry.example.com/ops/os-upgrade:v2026.11.2") {
		t.Errorf("root cause %s: %s", inc.RootCause.ID, inc.RootCause.Summary)
	}
	kinds := map[string]string{}
	for _, s := range inc.Symptoms {
		kinds[s.ID] = s.Object.Kind
	}
	for id, kind := range map[string]string{"image/pull-not-found": "Pod", "suc/job-deadline": "Job", "suc/node-label-blocks-rerun": "Node", "suc/plan-stuck": "Plan"} {
		if kinds[id] != kind {
			t.Errorf("symptom %s on a %s missing (symptoms: %v)\n%s", id, kind, kinds, describe(rep))
		}
	}
}

func evaluateWith(t *testing.T, dir string, images map[string]imageref.Facts, preflight bool) []finding.Finding {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := &check.Context{Snap: snap, Now: scenarioNow, Thresholds: check.NewThresholds(cat), Catalog: cat, Images: images, Preflight: preflight}
	_, fs, errs := check.Evaluate(ctx, check.Filter{})
	if len(errs) > 0 {
		t.Fatalf("check errors: %v", errs)
	}
	return fs
}

func findingIDs(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.ID)
	}
	return out
}

// With registry facts, the Plan images are judged by the registry even when no Job ran yet.
func TestPlanImagesJudgedByRegistryFacts(t *testing.T) {
	dir := scenarioPath("suc/image-floating-healthy") // a finished Plan: no Job, no pod, no event
	ref := "rancher/k3s-upgrade:v1.30.3-k3s1"
	kubectl := "rancher/kubectl:v1.30.3"
	ok := func(plats ...imageref.Platform) imageref.Facts {
		return imageref.Facts{Ref: ref, Canonical: "docker.io/" + ref, Status: imageref.OK, Digest: "sha256:" + strings.Repeat("1", 64), Platforms: plats}
	}
	amd64 := imageref.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := imageref.Platform{OS: "linux", Architecture: "arm64"}

	for _, c := range []struct {
		name   string
		facts  imageref.Facts
		want   []string
		forbid []string
	}{
		{"missing", imageref.Facts{Ref: ref, Canonical: "docker.io/" + ref, Status: imageref.Missing, Error: "manifest unknown (HTTP 404)"}, []string{"suc/image-missing"}, []string{"suc/image-arch"}},
		{"arm64 only", ok(arm64), []string{"suc/image-arch"}, []string{"suc/image-missing"}},
		{"multi-arch", ok(amd64, arm64), nil, []string{"suc/image-missing", "suc/image-arch"}},
		{"unauthorized is not missing", imageref.Facts{Ref: ref, Status: imageref.Unauthorized}, nil, []string{"suc/image-missing", "suc/image-arch"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := evaluateWith(t, dir, map[string]imageref.Facts{ref: c.facts, kubectl: {Ref: kubectl, Status: imageref.OK, Platforms: []imageref.Platform{amd64}}}, true)
			ids := findingIDs(fs)
			for _, w := range c.want {
				if !slices.Contains(ids, w) {
					t.Errorf("want %s, got %v", w, ids)
				}
			}
			for _, f := range c.forbid {
				if slices.Contains(ids, f) {
					t.Errorf("must not report %s: %v", f, ids)
				}
			}
		})
	}
}

// A missing kubectl image is the controller's problem, reported once for the controller, not
// once per Plan.
func TestMissingKubectlImageIsTheControllers(t *testing.T) {
	dir := scenarioPath("suc/kubectl-skew-healthy")
	kubectl := "rancher/kubectl:v1.30.3"
	fs := evaluateWith(t, dir, map[string]imageref.Facts{kubectl: {Ref: kubectl, Canonical: "docker.io/" + kubectl, Status: imageref.Missing}}, true)
	n := 0
	for _, f := range fs {
		if f.ID == "suc/controller-image" {
			n++
			if f.Object.Kind != "Deployment" || f.Object.Name != "system-upgrade-controller" {
				t.Errorf("controller-image on %s", f.Object)
			}
		}
		if f.ID == "suc/image-missing" {
			t.Errorf("a missing kubectl image is not a Plan image: %s", f.Summary)
		}
	}
	if n != 1 {
		t.Errorf("%d suc/controller-image findings, want 1: %v", n, findingIDs(fs))
	}
}

// Preflight reports agents without requests even where nothing shows them biting; a scan
// does not.
func TestAgentNoRequestsOnlyInPreflightWithoutPressure(t *testing.T) {
	dir := scenarioPath("fleet/agent-pending-upgrade-incident")
	if slices.Contains(findingIDs(evaluateWith(t, dir, nil, false)), "config/agent-no-requests") {
		t.Error("scan reported config/agent-no-requests without pressure")
	}
	if !slices.Contains(findingIDs(evaluateWith(t, dir, nil, true)), "config/agent-no-requests") {
		t.Error("preflight did not report config/agent-no-requests")
	}
}

// With a target version, Kubernetes upgrade Plans are judged as if moved to it: the image
// they would pull for it, and the kubectl image against its minor.
func TestTargetVersion(t *testing.T) {
	cat, _ := catalog.Load()
	snap, err := (&source.Offline{Path: scenarioPath("suc/image-floating-healthy")}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	target := "rancher/k3s-upgrade:v1.33.1-k3s1"
	ctx := &check.Context{Snap: snap, Now: scenarioNow, Thresholds: check.NewThresholds(cat), Catalog: cat, Preflight: true,
		TargetVersion: "v1.33.1+k3s1", Images: map[string]imageref.Facts{target: {Ref: target, Status: imageref.Missing}}}
	_, fs, _ := check.Evaluate(ctx, check.Filter{})
	var missing, skew bool
	for _, f := range fs {
		missing = missing || f.ID == "suc/image-missing" && strings.Contains(f.Summary, target)
		skew = skew || f.ID == "suc/kubectl-skew" && strings.Contains(f.Summary, "target version v1.33.1+k3s1")
	}
	if !missing || !skew {
		t.Errorf("want suc/image-missing for %s (%v) and suc/kubectl-skew against the target (%v): %v", target, missing, skew, findingIDs(fs))
	}
}
