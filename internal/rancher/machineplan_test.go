package rancher

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return b.Bytes()
}

// The plan bodies carry the cluster's join token: nothing of them may survive SafeData but
// their checksums, and a bundle's copy reads back the same.
func TestSafeDataDropsPlanBodies(t *testing.T) {
	const token = "K10deadbeef::server:JOIN-TOKEN-never-printed"
	plan := []byte(`{"files":[{"content":"` + token + `"}]}`)
	sum := sha256.Sum256(plan)
	in := map[string][]byte{
		KeyPlan: plan, KeyAppliedPlan: plan, KeyAppliedChecksum: []byte(hex.EncodeToString(sum[:])),
		KeyProbeStatuses: []byte(`{"kubelet":{"healthy":false,"failureCount":4}}`),
		KeyFailedOutput:  gz(t, `{"install":"`+"ZXJyb3IgYXBwbHlpbmcgcGxhbg=="+`"}`),
	}
	safe, problems := SafeData(in)
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	for k, v := range safe {
		if strings.Contains(string(v), "JOIN-TOKEN") || strings.Contains(k, "plan") && k != KeyPlanChecksum && k != KeyAppliedPlanChecksum {
			t.Errorf("key %s kept %q", k, v)
		}
	}
	p := FromSafeData("fleet-default", "m-machine-plan", map[string]string{LabelMachineName: "m"}, nil, safe)
	if !p.InSync() || !p.AppliedCurrent() {
		t.Errorf("in sync %v, applied current %v; want both", p.InSync(), p.AppliedCurrent())
	}
	if got := p.UnhealthyProbes(); len(got) != 1 || got[0] != "kubelet" {
		t.Errorf("unhealthy probes %v", got)
	}
	if len(p.FailedOutput) != 1 || p.FailedOutput[0] != "install: error applying plan" {
		t.Errorf("failed output %q", p.FailedOutput)
	}
	again, _ := SafeData(safe)
	if q := FromSafeData("fleet-default", "m-machine-plan", nil, nil, again); q.PlanChecksum != p.PlanChecksum || !q.InSync() {
		t.Errorf("a bundle's copy reads back differently: %+v", q)
	}
}

func TestSafeDataMalformed(t *testing.T) {
	in := map[string][]byte{
		KeyProbeStatuses: []byte(`{"kubelet": {"healthy": tr`),
		KeyAppliedOutput: []byte("\x1f\x8b\x08\x00cut"),
		KeyFailureCount:  []byte("three; rm -rf /"),
	}
	safe, problems := SafeData(in)
	if len(problems) != 3 {
		t.Fatalf("want 3 problems, got %q", problems)
	}
	if _, ok := safe[KeyProbeStatuses]; ok {
		t.Error("malformed probe-statuses kept")
	}
	if _, again := SafeData(safe); len(again) != 3 {
		t.Errorf("problems are not carried into a bundle: %q", again)
	}
}

func TestSafeAnnotations(t *testing.T) {
	got := SafeAnnotations(map[string]string{AnnotationJoinURL: "https://10.0.0.1:9345", AnnotationDrainError: "x", "kubectl.kubernetes.io/last-applied-configuration": "{}"})
	if len(got) != 1 || got[AnnotationDrainError] == "" {
		t.Errorf("got %v", got)
	}
}
