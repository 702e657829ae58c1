package trace

import (
	"strings"
	"time"

	"github.com/rancher/wrangler/v3/pkg/genericcondition"
)

// condTime is a Fleet condition's lastUpdateTime, else its lastTransitionTime.
func condTime(c *genericcondition.GenericCondition) *time.Time {
	for _, s := range []string{c.LastUpdateTime, c.LastTransitionTime} {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return &t
		}
	}
	return nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// short is a commit as people quote it: its first 7 hex digits.
func short(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
