package fleetconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/yamlbudget/bombtest"
)

// The fleet-controller config as Fleet's chart renders it (charts/fleet/templates/configmap.yaml)
// keeps only the interval: the CA, URLs, bootstrap repository, its secret's name and labels go.
func TestReduceKeepsOnlyTheInterval(t *testing.T) {
	config := `{
      "systemDefaultRegistry": "registry.example.com",
      "agentImage": "registry.example.com/rancher/fleet-agent:v0.16.0",
      "apiServerURL": "https://rancher.example.com",
      "apiServerCA": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lCQURBS0JnZ3Foa2pPUFFRREFqQWpNU0V3SHdZRFZRUUREQmhyTTNNdGMyVnkK",
      "agentCheckinInterval": "1h",
      "labels": {"rancher.example.com/region": "us-east-3"},
      "bootstrap": {"repo": "https://git.example.com/fleet.git", "secret": "fleet-bootstrap-git-auth", "clusterLabels": {"env": "mgmt"}},
      "gitClientTimeout": "30s"
    }`
	if got, want := Reduce(config), `{"agentCheckinInterval":"1h"}`; got != want {
		t.Fatalf("Reduce = %s, want %s", got, want)
	}
	for in, want := range map[string]string{
		`{"agentCheckinInterval": "1d", "apiServerCA": "x"}`:    `{"agentCheckinInterval":"[redacted: not a duration]"}`,
		`{"agentCheckinInterval": 3600}`:                        `{"agentCheckinInterval":"[redacted: not a duration]"}`,
		`{"agentCheckinInterval": 0}`:                           `{"agentCheckinInterval":"0s"}`,
		`{"agentCheckinInterval": {"token": "abc"}}`:            `{"agentCheckinInterval":"[redacted: not a duration]"}`,
		"agentCheckinInterval: 90m\napiServerURL: https://x\n":  `{"agentCheckinInterval":"90m"}`,
		`{"agentCheckinInterval":"[redacted: not a duration]"}`: `{"agentCheckinInterval":"[redacted: not a duration]"}`,
		`{"apiServerURL": "https://rancher.example.com"}`:       "",
		`not: [valid`: "",
		"":            "",
	} {
		if got := Reduce(in); got != want {
			t.Errorf("Reduce(%q) = %q, want %q", in, got, want)
		}
		if got := Reduce(Reduce(in)); got != want {
			t.Errorf("Reduce is not stable on its own output for %q: %q", in, got)
		}
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]time.Duration{"1h": time.Hour, "1h0m0s": time.Hour, "15s": 15 * time.Second, "24h": 24 * time.Hour, "0s": DefaultInterval, "": DefaultInterval} {
		got, _, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"-5m": "-5m is negative", "25h": "25h is longer than 24h", "1d": "not a Go duration", "[redacted: not a duration]": "not a Go duration", "[redacted]": "not kept by the collector"} {
		_, _, err := Parse(in)
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) error = %v, want %q", in, err, want)
		}
		if want == "not a Go duration" && err != nil && strings.Contains(err.Error(), in) {
			t.Errorf("Parse(%q) repeats the value", in)
		}
	}
}

// Anyone who may edit the fleet-controller ConfigMap writes its config: one that is an alias
// bomb is read as no config, without expanding it, and CheckAliases says why.
func TestConfigAliasBomb(t *testing.T) {
	for name, doc := range bombtest.Shapes(Namespace, ConfigMapName) {
		t.Run(name, func(t *testing.T) {
			config := "agentCheckinInterval: 90m\n" + doc
			var reduced, interval string
			var set bool
			bombtest.WithinAlloc(t, "Reduce and ConfigInterval", func() {
				reduced = Reduce(config)
				interval, set = ConfigInterval(config)
			})
			if reduced != "" || interval != "" || set {
				t.Errorf("Reduce = %q, ConfigInterval = %q %v: want the config unread", reduced, interval, set)
			}
			if err := CheckAliases(config); err == nil || !strings.HasPrefix(err.Error(), "with its YAML aliases expanded it holds ") {
				t.Errorf("CheckAliases: %v", err)
			}
		})
	}
	if got := Reduce("base: &b {agentCheckinInterval: 90m}\n<<: *b\n"); got != `{"agentCheckinInterval":"90m"}` {
		t.Errorf("a merge key is no bomb: Reduce = %q", got)
	}
}
