package cli

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/check"
)

// setThresholds applies --threshold NAME=VALUE flags on top of the catalogue's defaults and
// the config file's values; example is a flag value shown when one is malformed.
func setThresholds(th *check.Thresholds, flags []string, example string) error {
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usageErrorf("--threshold %q: want NAME=VALUE, e.g. %s", kv, example)
		}
		if err := th.Set(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return usageErrorf("--threshold: %v", err)
		}
	}
	return nil
}
