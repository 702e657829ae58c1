package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/source"
)

// checkinFleet is a management cluster (local) with one downstream Fleet Cluster, prod-us-3,
// whose agent last checked in lastSeenAgo before 09:30; the fleet-controller config, the
// agent Deployment's CHECKIN_INTERVAL and the Fleet Cluster's agentEnvVars are set only when
// given.
type checkinFleet struct {
	lastSeenAgo  time.Duration
	config       string // the ConfigMap's data.config, verbatim; "" for no ConfigMap
	agentEnv     string // the agent Deployment's CHECKIN_INTERVAL; "" for no downstream cluster
	clusterEnv   string // spec.agentEnvVars CHECKIN_INTERVAL of the Fleet Cluster; "" for none
	withoutValue bool   // the agent Deployment has CHECKIN_INTERVAL from a valueFrom
}

var checkinNow = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func (f checkinFleet) run(t *testing.T) ([]finding.Finding, error) {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agentEnvVars := ""
	if f.clusterEnv != "" {
		agentEnvVars = "\n  agentEnvVars:\n  - name: CHECKIN_INTERVAL\n    value: '" + f.clusterEnv + "'"
	}
	write("clusters/local/fleet/clusters.fleet.cattle.io.yaml", `apiVersion: fleet.cattle.io/v1alpha1
kind: Cluster
metadata:
  name: c-m-9dw4t
  namespace: fleet-default
  creationTimestamp: '2026-04-30T06:30:00Z'
  labels:
    management.cattle.io/cluster-display-name: prod-us-3
    management.cattle.io/cluster-name: c-m-9dw4t
spec:
  clientID: a3f092280aac9419d542a4673f07eca5c057ae0b5e33043905
  kubeConfigSecret: c-m-9dw4t-kubeconfig
  kubeConfigSecretNamespace: fleet-default
  redeployAgentGeneration: 1`+agentEnvVars+`
status:
  agent:
    lastSeen: '`+checkinNow.Add(-f.lastSeenAgo).Format(time.RFC3339)+`'
    namespace: cattle-fleet-system
  agentDeployedGeneration: 1
  agentMigrated: true
  agentNamespaceMigrated: true
  cattleNamespaceMigrated: true
  namespace: cluster-fleet-default-c-m-9dw4t-e13f3d6ad7ac
`)
	if f.config != "" {
		write("clusters/local/cattle-fleet-system/configmaps.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: fleet-controller
  namespace: cattle-fleet-system
data:
  config: |
`+indent(f.config, "    "))
	}
	if f.agentEnv != "" || f.withoutValue {
		env := "        - name: CHECKIN_INTERVAL\n          value: '" + f.agentEnv + "'\n"
		if f.withoutValue {
			env = "        - name: CHECKIN_INTERVAL\n          valueFrom:\n            configMapKeyRef: {name: fleet-agent-settings, key: interval}\n"
		}
		write("clusters/prod-us-3/cattle-fleet-system/deployments.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: fleet-agent
  namespace: cattle-fleet-system
spec:
  selector:
    matchLabels: {app: fleet-agent}
  template:
    metadata:
      labels: {app: fleet-agent}
    spec:
      containers:
      - name: fleet-agent
        image: rancher/fleet-agent:v0.16.0
        env:
        - name: AGENT_SCOPE
          value: ''
`+env)
	}
	snap, err := (&source.Offline{Path: dir}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return fleetAgentHeartbeat.Run(&Context{Snap: snap, Now: checkinNow, Thresholds: NewThresholds(cat), Catalog: cat})
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// The fleet-controller config as Fleet's chart renders it, with the given interval.
func chartConfig(interval string) string {
	return `{
  "systemDefaultRegistry": "",
  "agentImage": "rancher/fleet-agent:v0.16.0",
  "apiServerURL": "https://rancher.example.com",
  "apiServerCA": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
  "agentCheckinInterval": ` + interval + `,
  "agentTLSMode": "system-store",
  "bootstrap": {"repo": "https://git.example.com/fleet.git", "secret": "fleet-bootstrap-git-auth", "namespace": "fleet-local"},
  "gitClientTimeout": "30s"
}`
}

func evidenceText(f finding.Finding) string {
	var b strings.Builder
	for _, e := range f.Evidence {
		b.WriteString(e.Source + ": " + e.Text + "\n")
	}
	return b.String()
}

func TestHeartbeatJudgedAgainstTheCheckinInterval(t *testing.T) {
	const def = "(agents check in every 15m)"
	for _, tc := range []struct {
		name  string
		fleet checkinFleet
		stale bool
		// summary and evidence are what a stale finding's summary and evidence say.
		summary, evidence string
	}{
		{"configured 1h, seen 3h ago", checkinFleet{lastSeenAgo: 3 * time.Hour, config: chartConfig(`"1h"`)}, true,
			"it checks in every 1h (agentCheckinInterval 1h from ConfigMap cattle-fleet-system/fleet-controller)",
			"check-in interval 1h (agentCheckinInterval 1h from ConfigMap cattle-fleet-system/fleet-controller); stale after 2h"},
		{"configured 1h, seen 40m ago", checkinFleet{lastSeenAgo: 40 * time.Minute, config: chartConfig(`"1h"`)}, false, "", ""},
		{"configured 1h, seen just under 2h ago", checkinFleet{lastSeenAgo: 119 * time.Minute, config: chartConfig(`"1h"`)}, false, "", ""},
		{"configured 1h, seen 2h ago", checkinFleet{lastSeenAgo: 2 * time.Hour, config: chartConfig(`"1h"`)}, true, "every 1h", "stale after 2h"},
		{"nothing configured, seen 40m ago", checkinFleet{lastSeenAgo: 40 * time.Minute}, true, def,
			"check-in interval 15m (Fleet's default; no agentCheckinInterval or CHECKIN_INTERVAL was read); stale after 30m"},
		{"configured 0s means the default", checkinFleet{lastSeenAgo: 40 * time.Minute, config: chartConfig(`"0s"`)}, true,
			"it checks in every 15m (agentCheckinInterval 0s from ConfigMap cattle-fleet-system/fleet-controller, which means Fleet's default 15m)", "stale after 30m"},
		{"a shorter interval does not lower the threshold", checkinFleet{lastSeenAgo: 20 * time.Minute, config: chartConfig(`"15s"`)}, false, "", ""},
		{"YAML config, as Fleet also reads it", checkinFleet{lastSeenAgo: 40 * time.Minute, config: "agentCheckinInterval: 1h\napiServerURL: https://rancher.example.com\n"}, false, "", ""},
		// The agent's own env is what it runs with: it wins over the management default.
		{"agent runs 15m although the config says 1h", checkinFleet{lastSeenAgo: 40 * time.Minute, config: chartConfig(`"1h"`), agentEnv: "15m0s"}, true,
			"it checks in every 15m (CHECKIN_INTERVAL 15m from Deployment cattle-fleet-system/fleet-agent on cluster prod-us-3)", "stale after 30m"},
		{"agent runs 2h although the config says 15m", checkinFleet{lastSeenAgo: 3 * time.Hour, config: chartConfig(`"15m"`), agentEnv: "2h0m0s"}, false, "", ""},
		// A bundle collected before the interval was kept holds the env value as [redacted].
		{"agent env redacted by an older collector: the config decides", checkinFleet{lastSeenAgo: 40 * time.Minute, config: chartConfig(`"1h"`), agentEnv: "[redacted]"}, false, "", ""},
		{"agent env from a reference: the config decides", checkinFleet{lastSeenAgo: 40 * time.Minute, config: chartConfig(`"1h"`), withoutValue: true}, false, "", ""},
		{"Fleet Cluster agentEnvVars", checkinFleet{lastSeenAgo: 3 * time.Hour, config: chartConfig(`"15m"`), clusterEnv: "1h"}, true,
			"(CHECKIN_INTERVAL 1h from spec.agentEnvVars of Fleet Cluster fleet-default/c-m-9dw4t)", "stale after 2h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := tc.fleet.run(t)
			if err != nil {
				t.Errorf("warnings: %v", err)
			}
			if !tc.stale {
				if len(fs) != 0 {
					t.Fatalf("want no finding, got %s\n%s", fs[0].Summary, evidenceText(fs[0]))
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("want one stale heartbeat, got %d", len(fs))
			}
			f := fs[0]
			if !strings.Contains(f.Summary, "Fleet agent of cluster prod-us-3 last checked in") || !strings.Contains(f.Summary, tc.summary) {
				t.Errorf("summary:\n  %s\nwant it to say %q", f.Summary, tc.summary)
			}
			if ev := evidenceText(f); !strings.Contains(ev, tc.evidence) {
				t.Errorf("evidence does not say %q:\n%s", tc.evidence, ev)
			}
		})
	}
}

// A garbage or absurd interval is not trusted: the scan warns (without repeating a value that
// is no duration) and judges against the next source, here Fleet's default 15m.
func TestHeartbeatIgnoresAnUntrustedInterval(t *testing.T) {
	for _, tc := range []struct {
		name, config, agentEnv, want, notWant string
	}{
		{"negative", `"-1h"`, "", "ignored agentCheckinInterval of ConfigMap cattle-fleet-system/fleet-controller: -1h is negative", ""},
		{"longer than a day", `"48h"`, "", "ignored agentCheckinInterval of ConfigMap cattle-fleet-system/fleet-controller: 48h is longer than 24h", ""},
		{"days are no Go duration", `"1d"`, "", "ignored agentCheckinInterval of ConfigMap cattle-fleet-system/fleet-controller: not a Go duration", "1d"},
		{"a number", `3600`, "", "ignored agentCheckinInterval of ConfigMap cattle-fleet-system/fleet-controller: not a Go duration", "3600"},
		{"agent env replaced by collect", `"1h"`, "[redacted: not a duration]", "ignored CHECKIN_INTERVAL of Deployment cattle-fleet-system/fleet-agent on cluster prod-us-3: not a Go duration", ""},
		{"agent env garbage", `"1h"`, "sixty-minutes", "ignored CHECKIN_INTERVAL of Deployment cattle-fleet-system/fleet-agent on cluster prod-us-3: not a Go duration", "sixty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := checkinFleet{lastSeenAgo: 40 * time.Minute, config: chartConfig(tc.config), agentEnv: tc.agentEnv}.run(t)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want the warning %q, got %v", tc.want, err)
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("the warning repeats the untrusted value: %v", err)
			}
			stale := len(fs) == 1
			if tc.agentEnv != "" {
				// The config's 1h is the next source: 40m is not stale.
				if stale {
					t.Errorf("want the config's interval used after the agent's garbage, got %s", fs[0].Summary)
				}
				return
			}
			if !stale {
				t.Fatal("want the default 15m used: a 40m-old heartbeat is stale")
			}
			if !strings.Contains(evidenceText(fs[0]), "Fleet's default") {
				t.Errorf("evidence: %s", evidenceText(fs[0]))
			}
		})
	}
}
