package config

import (
	"sort"
	"strings"
	"time"

	"github.com/unstick-dev/unstick/internal/finding"
)

// Active reports whether the suppression still holds at now.
func (s Suppression) Active(now time.Time) bool { return now.Before(s.Expires) }

// Matches reports whether the suppression covers f: its ID (or family), its cluster (the
// one it was found on or the one it is about) and its object.
func (s Suppression) Matches(f finding.Finding) bool {
	id := strings.TrimSuffix(s.ID, "*")
	if f.ID != id && !(strings.HasSuffix(id, "/") && strings.HasPrefix(f.ID, id)) {
		return false
	}
	if len(s.Clusters) > 0 && !contains(s.Clusters, f.Cluster) && (f.Affects == "" || !contains(s.Clusters, f.Affects)) {
		return false
	}
	if s.Object != "" {
		o := f.Object
		if s.Object != o.String() && s.Object != o.Kind+"/"+o.Name {
			return false
		}
	}
	return true
}

// Expired lists the suppressions that no longer hold at now.
func (c *Config) Expired(now time.Time) []Suppression {
	var out []Suppression
	for _, s := range c.Suppress {
		if !s.Active(now) {
			out = append(out, s)
		}
	}
	return out
}

// Suppressed is the outcome of applying suppressions: how many findings each active
// suppression hid, by its index in Config.Suppress.
type Suppressed struct {
	Count map[int]int
	Total int
}

// Apply removes the findings that active suppressions cover, after grouping: from the
// findings and from every incident. An incident whose root cause is suppressed is led by its
// first remaining symptom (symptoms are ordered most causal first), or disappears when
// nothing of it remains. Incidents stay ordered by root-cause severity.
func (c *Config) Apply(now time.Time, incidents []finding.Incident, fs []finding.Finding) ([]finding.Incident, []finding.Finding, Suppressed) {
	res := Suppressed{Count: map[int]int{}}
	var active []int
	for i, s := range c.Suppress {
		if s.Active(now) {
			active = append(active, i)
		}
	}
	if len(active) == 0 {
		return incidents, fs, res
	}
	hidden := func(f finding.Finding) (int, bool) {
		for _, i := range active {
			if c.Suppress[i].Matches(f) {
				return i, true
			}
		}
		return 0, false
	}
	var keptFs []finding.Finding
	for _, f := range fs {
		if i, ok := hidden(f); ok {
			res.Count[i]++
			res.Total++
			continue
		}
		keptFs = append(keptFs, f)
	}
	var keptIncs []finding.Incident
	for _, inc := range incidents {
		var left []finding.Finding
		for _, f := range append([]finding.Finding{inc.RootCause}, inc.Symptoms...) {
			if _, ok := hidden(f); !ok {
				left = append(left, f)
			}
		}
		if len(left) == 0 {
			continue
		}
		keptIncs = append(keptIncs, finding.NewIncident(left[0], append([]finding.Finding{}, left[1:]...)))
	}
	sort.SliceStable(keptIncs, func(i, j int) bool { return keptIncs[i].RootCause.Severity > keptIncs[j].RootCause.Severity })
	return keptIncs, keptFs, res
}

// OverrideSeverities gives every finding of an overridden ID its configured severity — the
// catalogue's copy already carries it, but a check may grade a finding itself — and keeps
// findings and incidents ordered worst first.
func (c *Config) OverrideSeverities(incidents []finding.Incident, fs []finding.Finding) {
	if len(c.Severity) == 0 {
		return
	}
	sev := map[string]finding.Severity{}
	for _, s := range c.Severity {
		sev[s.ID] = s.Severity
	}
	fix := func(f *finding.Finding) {
		if s, ok := sev[f.ID]; ok {
			f.Severity = s
		}
	}
	for i := range fs {
		fix(&fs[i])
	}
	for i := range incidents {
		fix(&incidents[i].RootCause)
		for j := range incidents[i].Symptoms {
			fix(&incidents[i].Symptoms[j])
		}
	}
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Severity > fs[j].Severity })
	sort.SliceStable(incidents, func(i, j int) bool { return incidents[i].RootCause.Severity > incidents[j].RootCause.Severity })
}
