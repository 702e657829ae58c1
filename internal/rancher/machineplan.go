// Package rancher holds pure views over the objects Rancher keeps for the Kubernetes upgrades
// it drives: provisioned ("v2prov") RKE2/K3s clusters — provisioning.cattle.io Clusters,
// rke.cattle.io RKEControlPlanes and machine-plan Secrets, CAPI Machines — and imported
// RKE2/K3s clusters with version management (management.cattle.io Clusters, the SUC Plans
// Rancher writes downstream). Nothing here reads a cluster; the snapshot hands objects in.
package rancher

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/unstick-dev/unstick/internal/redact"
)

// SecretTypeMachinePlan is the type of the Secret Rancher's planner writes one of per
// machine (rancher/rancher pkg/capr: SecretTypeMachinePlan), named
// <rkebootstrap>-machine-plan in the machine's namespace (fleet-default).
const SecretTypeMachinePlan = "rke.cattle.io/machine-plan"

// Data keys of a machine-plan Secret. The planner writes plan, max-failures and
// failure-threshold (pkg/capr/planner/store.go UpdatePlan); rancher-system-agent writes the
// rest back (rancher/system-agent pkg/k8splan/watcher.go: applied-checksum, applied-output,
// probe-statuses; its applyinator the failed-* keys and failure-count). Keys unstick does
// not judge are left out of what it keeps without complaint: appliedPlan's sibling
// applied-periodic-output, success-count, last-apply-time, probe-period-seconds, and the
// plan-state and plan-revision keys newer agents and planners exchange.
const (
	KeyPlan             = "plan"        // the node plan: files, instructions — and join tokens
	KeyAppliedPlan      = "appliedPlan" // the plan last applied successfully: the same secrets
	KeyAppliedChecksum  = "applied-checksum"
	KeyAppliedOutput    = "applied-output" // gzip(JSON map instruction → output)
	KeyFailedChecksum   = "failed-checksum"
	KeyFailedOutput     = "failed-output"
	KeyFailureCount     = "failure-count"
	KeyFailureThreshold = "failure-threshold"
	KeyMaxFailures      = "max-failures"
	KeyProbeStatuses    = "probe-statuses" // JSON map probe → {healthy, successCount, failureCount}

	// KeyPlanChecksum and KeyAppliedPlanChecksum are unstick's own keys: the SHA-256 of the
	// plan and appliedPlan bodies, which the bodies are replaced by before anything leaves
	// the loader (Rancher's PlanHash is the same sum: pkg/capr/planner/store.go).
	KeyPlanChecksum        = "unstick.dev/plan-checksum"
	KeyAppliedPlanChecksum = "unstick.dev/applied-plan-checksum"
	// KeyProblems carries what could not be decoded into a bundle, so that a scan of the
	// bundle reports it as the scan of the cluster did.
	KeyProblems = "unstick.dev/problems"
)

// Annotations the planner and rancher-system-agent's drain put on a machine-plan Secret
// (rancher/rancher pkg/capr/common.go).
const (
	AnnotationDrainOptions = "rke.cattle.io/drain-options"
	AnnotationDrainDone    = "rke.cattle.io/drain-done"
	AnnotationDrainError   = "rke.cattle.io/drain-error"
	AnnotationPreDrain     = "rke.cattle.io/pre-drain"
	AnnotationPostDrain    = "rke.cattle.io/post-drain"
	AnnotationUncordon     = "rke.cattle.io/uncordon"
	AnnotationJoinURL      = "rke.cattle.io/join-url"
	LabelMachineName       = "rke.cattle.io/machine-name"
	LabelClusterName       = "rke.cattle.io/cluster-name"
	LabelWorkerRole        = "rke.cattle.io/worker-role"
	LabelControlPlaneRole  = "rke.cattle.io/control-plane-role"
	LabelEtcdRole          = "rke.cattle.io/etcd-role"
)

// MaxOutputLines is how many trailing lines of applied-output/failed-output are kept.
const MaxOutputLines = 40

// ProbeStatus is one probe of a node plan as rancher-system-agent reports it
// (system-agent pkg/prober ProbeStatus).
type ProbeStatus struct {
	Healthy      bool `json:"healthy"`
	SuccessCount int  `json:"successCount"`
	FailureCount int  `json:"failureCount"`
}

// MachinePlan is what unstick keeps of a machine-plan Secret: its status keys, never the plan.
type MachinePlan struct {
	Namespace, Name string
	Labels          map[string]string
	Annotations     map[string]string // rke.cattle.io/* only, drain-error redacted

	PlanChecksum, AppliedPlanChecksum string // SHA-256 of the bodies; empty when absent
	AppliedChecksum, FailedChecksum   string
	FailureCount                      int
	FailureThreshold, MaxFailures     int // 0: not set
	Probes                            map[string]ProbeStatus
	AppliedOutput, FailedOutput       []string // trailing lines, redacted

	// Problems says what could not be decoded (bad JSON, bad gzip), for a scan error.
	Problems []string
}

// Machine is the CAPI Machine the plan belongs to (rke.cattle.io/machine-name).
func (p *MachinePlan) Machine() string { return p.Labels[LabelMachineName] }

// Cluster is the provisioned cluster (rke.cattle.io/cluster-name).
func (p *MachinePlan) Cluster() string { return p.Labels[LabelClusterName] }

// HasPlan says the planner delivered a plan.
func (p *MachinePlan) HasPlan() bool { return p.PlanChecksum != "" }

// InSync is the planner's own test: the plan equals the applied plan.
func (p *MachinePlan) InSync() bool {
	return p.PlanChecksum != "" && p.PlanChecksum == p.AppliedPlanChecksum
}

// AppliedCurrent says rancher-system-agent applied the current plan (its checksum).
func (p *MachinePlan) AppliedCurrent() bool {
	return p.PlanChecksum != "" && p.AppliedChecksum == p.PlanChecksum
}

// FailingCurrent says the current plan failed (failed-checksum is its checksum and
// failure-count is positive), as the planner judges it (store.go SecretToNode).
func (p *MachinePlan) FailingCurrent() bool {
	return p.FailureCount > 0 && p.PlanChecksum != "" && p.FailedChecksum == p.PlanChecksum
}

// UnhealthyProbes lists the probes not healthy, sorted.
func (p *MachinePlan) UnhealthyProbes() []string {
	var out []string
	for n, s := range p.Probes {
		if !s.Healthy {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Tier is the machine's role tier as the planner names it ("etcd", "control plane",
// "worker"), from the role labels the plan Secret carries.
func (p *MachinePlan) Tier() string { return TierOf(p.Labels) }

// TierOf names the planner tier of labels carrying rke.cattle.io role labels.
func TierOf(labels map[string]string) string {
	switch {
	case labels[LabelEtcdRole] == "true":
		return "etcd"
	case labels[LabelControlPlaneRole] == "true":
		return "control plane"
	case labels[LabelWorkerRole] == "true":
		return "worker"
	}
	return ""
}

// SafeData reduces a machine-plan Secret's data to what unstick keeps: the status keys, the
// probe statuses re-encoded, the outputs decompressed, trimmed and redacted, and the plan
// bodies replaced by their checksums. The join tokens in plan/appliedPlan never get past it.
// problems names what could not be decoded.
func SafeData(data map[string][]byte) (out map[string][]byte, problems []string) {
	out = map[string][]byte{}
	defer func() {
		if len(problems) > 0 {
			out[KeyProblems] = []byte(strings.Join(problems, "\n"))
		}
	}()
	if v := strings.TrimSpace(string(data[KeyProblems])); v != "" {
		problems = append(problems, redact.Lines(strings.Split(v, "\n"))...)
	}
	for _, k := range []string{KeyAppliedChecksum, KeyFailedChecksum, KeyFailureCount, KeyFailureThreshold, KeyMaxFailures} {
		// Checksums and counters: a hex string or a number (-1: no limit). Empty is normal:
		// rancher-system-agent blanks failed-checksum (and failed-output) after every
		// successful apply and applied-checksum on its first start (pkg/k8splan/watcher.go).
		// Anything else is dropped.
		switch s := strings.TrimSpace(string(data[k])); {
		case s == "":
		case isToken(s):
			out[k] = []byte(s)
		default:
			problems = append(problems, k+" is not a checksum or number")
		}
	}
	for _, k := range []string{KeyPlan, KeyAppliedPlan} {
		if v := data[k]; len(v) > 0 {
			sum := sha256.Sum256(v)
			ck := KeyPlanChecksum
			if k == KeyAppliedPlan {
				ck = KeyAppliedPlanChecksum
			}
			out[ck] = []byte(hex.EncodeToString(sum[:]))
		}
	}
	for _, k := range []string{KeyPlanChecksum, KeyAppliedPlanChecksum} {
		if _, done := out[k]; !done {
			if s := strings.TrimSpace(string(data[k])); s != "" && isToken(s) {
				out[k] = []byte(s) // a bundle unstick wrote
			}
		}
	}
	if v, ok := data[KeyProbeStatuses]; ok && len(v) > 0 {
		var ps map[string]ProbeStatus
		if err := json.Unmarshal(v, &ps); err != nil {
			problems = append(problems, fmt.Sprintf("%s is not valid JSON: %v", KeyProbeStatuses, err))
		} else {
			b, _ := json.Marshal(ps)
			out[KeyProbeStatuses] = b
		}
	}
	for _, k := range []string{KeyAppliedOutput, KeyFailedOutput} {
		if v, ok := data[k]; ok && len(v) > 0 {
			lines, err := OutputLines(v)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", k, err))
			}
			if len(lines) > 0 {
				out[k] = []byte(strings.Join(lines, "\n"))
			}
		}
	}
	return out, problems
}

func isToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-') {
			return false
		}
	}
	return true
}

// OutputLines turns an applied-output/failed-output value into its last MaxOutputLines
// lines, redacted. rancher-system-agent stores gzip(JSON map of instruction name → output
// bytes); a value that is not gzip (a bundle unstick wrote, a hand-made fixture) is read as
// text. A value that claims to be gzip and is not whole gives an error and whatever was read.
func OutputLines(v []byte) ([]string, error) {
	text := v
	var err error
	if len(v) >= 2 && v[0] == 0x1f && v[1] == 0x8b {
		var zr *gzip.Reader
		zr, err = gzip.NewReader(bytes.NewReader(v))
		if err == nil {
			text, err = io.ReadAll(io.LimitReader(zr, 4<<20))
		}
		if err != nil {
			err = fmt.Errorf("not readable gzip: %w", err)
			if len(text) == len(v) {
				return nil, err
			}
		}
	}
	var byInstr map[string][]byte
	var lines []string
	if json.Unmarshal(text, &byInstr) == nil && len(byInstr) > 0 {
		names := make([]string, 0, len(byInstr))
		for n := range byInstr {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			for _, l := range splitLines(byInstr[n]) {
				lines = append(lines, n+": "+l)
			}
		}
	} else {
		lines = splitLines(text)
	}
	if len(lines) > MaxOutputLines {
		lines = lines[len(lines)-MaxOutputLines:]
	}
	return redact.Lines(lines), err
}

func splitLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n") {
		if l = strings.TrimRight(l, " \t"); strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// SafeAnnotations keeps a machine-plan Secret's rke.cattle.io/* annotations except the join
// URL, with the drain error (free text from kubectl drain) redacted.
func SafeAnnotations(a map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		if !strings.HasPrefix(k, "rke.cattle.io/") || k == AnnotationJoinURL {
			continue
		}
		if k == AnnotationDrainError {
			v = redact.String(v)
		}
		out[k] = v
	}
	return out
}

// FromSafeData reads a MachinePlan from data SafeData produced.
func FromSafeData(namespace, name string, labels, annotations map[string]string, safe map[string][]byte) *MachinePlan {
	p := &MachinePlan{Namespace: namespace, Name: name, Labels: labels, Annotations: SafeAnnotations(annotations)}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.PlanChecksum = string(safe[KeyPlanChecksum])
	p.AppliedPlanChecksum = string(safe[KeyAppliedPlanChecksum])
	p.AppliedChecksum = string(safe[KeyAppliedChecksum])
	p.FailedChecksum = string(safe[KeyFailedChecksum])
	p.FailureCount, _ = strconv.Atoi(string(safe[KeyFailureCount]))
	p.FailureThreshold, _ = strconv.Atoi(string(safe[KeyFailureThreshold]))
	p.MaxFailures, _ = strconv.Atoi(string(safe[KeyMaxFailures]))
	if v := safe[KeyProbeStatuses]; len(v) > 0 {
		_ = json.Unmarshal(v, &p.Probes)
	}
	if v := safe[KeyAppliedOutput]; len(v) > 0 {
		p.AppliedOutput = strings.Split(string(v), "\n")
	}
	if v := safe[KeyFailedOutput]; len(v) > 0 {
		p.FailedOutput = strings.Split(string(v), "\n")
	}
	return p
}

// EncodeData base64-encodes data values as a Secret's data field holds them in JSON.
func EncodeData(data map[string][]byte) map[string]any {
	out := make(map[string]any, len(data))
	for k, v := range data {
		out[k] = base64.StdEncoding.EncodeToString(v)
	}
	return out
}
