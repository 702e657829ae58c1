// Package fleetconfig reads the one Fleet setting unstick judges heartbeats by — how often
// agents check in — and nothing else of the Fleet controller's configuration, which also
// holds the API server's CA, bootstrap repositories and their secrets' names.
package fleetconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/redact"
	"github.com/unstick-dev/unstick/internal/yamlbudget"
)

// Where Fleet keeps its controller configuration (rancher/fleet v0.16 internal/config:
// ManagerConfigName, Key, DefaultNamespace) and the key of the agents' check-in interval in it.
const (
	Namespace     = "cattle-fleet-system"
	ConfigMapName = "fleet-controller"
	Key           = "config"
	IntervalKey   = "agentCheckinInterval"
	// EnvName is the agent Deployment's environment variable the controller writes the
	// interval into (agentmanagement agent/manifest.go), and the agent reads (cmd/agent).
	EnvName = redact.CheckinIntervalEnv
)

const (
	// DefaultInterval is what the agent uses when no interval, or a zero one, is set
	// (rancher/fleet pkg/durations DefaultClusterCheckInterval; agent clusterstatus/ticker.go).
	DefaultInterval = 15 * time.Minute
	// MaxInterval bounds what is believed: a bundle is untrusted, and an agent that checks in
	// less than once a day could hide any outage.
	MaxInterval = 24 * time.Hour
	// StaleFactor is how many intervals a heartbeat may be old before it is stale. The agent
	// reports on a plain ticker and, when a report fails, only logs it and waits for the next
	// tick (rancher/fleet v0.16 internal/cmd/agent/clusterstatus/ticker.go), so a healthy agent
	// that lost one report to a passing API error shows a heartbeat just under two intervals
	// old. Fleet v0.16 itself has no controller-side offline detection to borrow a factor
	// from: the only staleness judgement it makes is `fleet monitor`'s lastSeen older than 24h
	// (pkg/troubleshooting/collector.go). Two intervals is also what the 30m default threshold
	// is for the default 15m.
	StaleFactor = 2
)

// ErrNotKept says a bundle holds the value as redact.Mask: written by a collector that did
// not keep the interval, so there is nothing to judge and nothing to warn about.
var ErrNotKept = errors.New("not kept by the collector")

// aliasRoom is what YAML aliases may add to what the controller's config text holds: the
// config is a few KiB of settings, and anyone who may edit the ConfigMap writes it. 1 MiB and
// 16,384 nodes more is far beyond a shared value or two, and cheap to decode.
var aliasRoom = yamlbudget.Size{Bytes: 1 << 20, Nodes: 1 << 14}

// CheckAliases refuses a config whose YAML aliases expand past what its text holds plus
// aliasRoom; the error starts "with its YAML aliases expanded". Reduce and ConfigInterval
// read such a config as unreadable.
func CheckAliases(data string) error {
	b := []byte(data)
	return yamlbudget.Check(b, yamlbudget.Beyond(b, aliasRoom))
}

// IsControllerConfig reports the fleet-controller ConfigMap.
func IsControllerConfig(namespace, name string) bool {
	return namespace == Namespace && name == ConfigMapName
}

// Reduce keeps, of the controller's config (JSON or YAML, as Fleet reads it with
// sigs.k8s.io/yaml), only agentCheckinInterval: as written when it is a Go duration, else
// redact.NotDuration so the reader can say it was set but unusable without repeating what was
// there. Reduce of its own output returns the same. "" when the config cannot be read or does
// not set the interval.
func Reduce(data string) string {
	var raw map[string]any
	if data == "" || CheckAliases(data) != nil || yaml.Unmarshal([]byte(data), &raw) != nil || raw == nil {
		return ""
	}
	v, ok := raw[IntervalKey]
	if !ok {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		s = redact.NotDuration
		if isZero(v) {
			// Fleet's own sentinel for "the default" (internal/config sanitizeDurations).
			s = "0s"
		}
	} else if _, err := time.ParseDuration(s); err != nil && s != redact.NotDuration {
		s = redact.NotDuration
	}
	b, _ := json.Marshal(map[string]string{IntervalKey: s})
	return string(b)
}

func isZero(v any) bool {
	switch n := v.(type) {
	case float64:
		return n == 0
	case int:
		return n == 0
	case int64:
		return n == 0
	}
	return false
}

// ConfigInterval is the agentCheckinInterval a (reduced) config sets, and whether it sets one.
func ConfigInterval(data string) (string, bool) {
	var raw map[string]any
	if data == "" || CheckAliases(data) != nil || yaml.Unmarshal([]byte(data), &raw) != nil {
		return "", false
	}
	v, ok := raw[IntervalKey]
	if !ok {
		return "", false
	}
	s, isString := v.(string)
	if !isString {
		return redact.NotDuration, true
	}
	return s, true
}

// Parse judges a configured interval. Zero means Fleet's default (the agent's ticker falls
// back to it, and the controller writes "0s" into the agent's env when nothing is
// configured); a value that is no Go duration, negative, or longer than MaxInterval is an
// error whose text never repeats a value that does not parse.
func Parse(s string) (d time.Duration, isDefault bool, err error) {
	if s == redact.Mask {
		return 0, false, ErrNotKept
	}
	if s == "" {
		return DefaultInterval, true, nil // the agent reads an empty setting as unset
	}
	d, err = time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, false, errors.New("not a Go duration")
	case d == 0:
		return DefaultInterval, true, nil
	case d < 0:
		return 0, false, fmt.Errorf("%s is negative", s)
	case d > MaxInterval:
		return 0, false, fmt.Errorf("%s is longer than 24h", s)
	}
	return d, false, nil
}
