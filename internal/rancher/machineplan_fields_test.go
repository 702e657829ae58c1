package rancher

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// Every data key of a machine-plan Secret, with the values Rancher's planner
// (pkg/capr/planner/store.go) and rancher-system-agent (pkg/k8splan/watcher.go) write in
// normal operation, is data: decoding it reports no problem, and a node that applied its plan
// stays in sync and not failing.
func TestSafeDataAcceptsWhatTheWritersWrite(t *testing.T) {
	plan := []byte(`{"instructions":[{"name":"install","image":"rancher/system-agent-installer-rke2:v1.31.4-rke2r1"}],"probes":{"kubelet":{"httpGet":{"url":"http://127.0.0.1:10248/healthz"}}}}`)
	sum := sha256.Sum256(plan)
	planSum := hex.EncodeToString(sum[:])
	old := sha256.Sum256([]byte(`{"instructions":[]}`))
	unixDate := "Mon Dec  1 10:04:05 UTC 2026" // time.UnixDate, as the agent writes last-apply-time
	cases := []struct {
		key    string
		values [][]byte
	}{
		{KeyPlan, [][]byte{plan}},
		{KeyAppliedPlan, [][]byte{plan}},
		{KeyAppliedChecksum, [][]byte{[]byte(planSum)}},
		{KeyAppliedOutput, [][]byte{{}, gz(t, `{"install":"W0lORk9dIGluc3RhbGxlZA=="}`)}},
		{"applied-periodic-output", [][]byte{{}, gz(t, `{"etcd-snapshot-list":{"stdout":"","stderr":"","exitCode":0,"lastSuccessfulRunTime":"`+unixDate+`"}}`)}},
		{KeyFailedChecksum, [][]byte{{}, []byte(hex.EncodeToString(old[:]))}},
		{KeyFailedOutput, [][]byte{{}, gz(t, `{"install":"ZXJyb3I="}`)}},
		{KeyFailureCount, [][]byte{[]byte("0"), []byte("2")}},
		{"success-count", [][]byte{[]byte("0"), []byte("14")}},
		{KeyMaxFailures, [][]byte{[]byte("5"), []byte("-1")}},
		{KeyFailureThreshold, [][]byte{[]byte("1"), []byte("-1")}},
		{"last-apply-time", [][]byte{[]byte(unixDate)}},
		{KeyProbeStatuses, [][]byte{[]byte(`{}`), []byte(`{"kubelet":{"healthy":true,"successCount":1,"failureCount":0}}`)}},
		{"probe-period-seconds", [][]byte{[]byte("5")}},
		{"plan-state", [][]byte{[]byte("pending"), []byte("succeeded")}},
		{"plan-revision", [][]byte{[]byte("3")}},
	}
	for _, c := range cases {
		for _, v := range c.values {
			t.Run(c.key+"="+printable(v), func(t *testing.T) {
				in := map[string][]byte{KeyPlan: plan, KeyAppliedPlan: plan, KeyAppliedChecksum: []byte(planSum),
					KeyFailedChecksum: {}, KeyFailureCount: []byte("0")}
				in[c.key] = v
				safe, problems := SafeData(in)
				if len(problems) != 0 {
					t.Fatalf("a value the upstream writers produce is reported as a problem: %q", problems)
				}
				p := FromSafeData("fleet-default", "m-machine-plan", nil, nil, safe)
				if !p.InSync() || !p.AppliedCurrent() || p.FailingCurrent() {
					t.Errorf("in sync %v, applied current %v, failing %v; want a node that applied its plan", p.InSync(), p.AppliedCurrent(), p.FailingCurrent())
				}
			})
		}
	}
}

func printable(v []byte) string {
	switch {
	case len(v) == 0:
		return `""`
	case len(v) > 1 && v[0] == 0x1f && v[1] == 0x8b:
		return "gzip"
	case len(v) > 24:
		return string(v[:24]) + "…"
	}
	return string(v)
}
