// Package catalog is the embedded finding catalogue: the wording, severity, detection rule and
// fix ladder of every finding ID. IDs are stable API; checks only name them.
package catalog

import (
	_ "embed"
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/unstick-dev/unstick/internal/finding"
)

//go:embed catalog.yaml
var builtin []byte

// Threshold is a documented, overridable knob of a detection rule.
type Threshold struct {
	Name        string `json:"name"`
	Default     string `json:"default"`
	Description string `json:"description"`
}

// Rung is one step of an entry's fix ladder.
type Rung struct {
	Rung     string   `json:"rung"` // observe | resync | restart | repair | realign
	Action   string   `json:"action"`
	Risk     string   `json:"risk"` // none | low | medium | high
	Commands []string `json:"commands,omitempty"`
}

// Entry is the catalogue's word on one finding ID.
type Entry struct {
	ID       string           `json:"id"`
	Title    string           `json:"title"`
	Severity finding.Severity `json:"severity"`
	// Rank orders findings inside an incident: the highest rank is the root cause.
	// Causes (a pending Helm release, a missing CRD) rank above what they cause
	// (an agent that did not move, a BundleDeployment in ErrApplied).
	Rank        int         `json:"rank"`
	Explanation string      `json:"explanation"`
	Detection   string      `json:"detection"`
	Thresholds  []Threshold `json:"thresholds,omitempty"`
	Ladder      []Rung      `json:"ladder"`
	References  []string    `json:"references,omitempty"`

	// Per-ID policy, kept here so that one place says it and tests derive from it.

	// Preflight marks an upgrade gate: preflight lists it in its checklist and judges it even
	// before anything shows it biting (a configuration risk, a missing image).
	Preflight bool `json:"preflight,omitempty"`
	// Gauge names the threshold that hides a young finding of this ID; serve measures every
	// such finding from its start, with the threshold at its minimum, for an age gauge.
	Gauge string `json:"gauge,omitempty"`
	// Autofix says `fix` has automatic steps for an incident whose root cause is this ID.
	Autofix bool `json:"autofix,omitempty"`
	// AgentLogs says an agent's own log lines (or its pod's events) can establish this finding.
	AgentLogs bool `json:"agentLogs,omitempty"`
	// Risk says the finding is about what an upgrade will run into, not about something
	// stuck now (an API the next version removes, too little headroom, a floating tag): its
	// since, if any, is when the risk appeared, not how long anything has been stuck.
	Risk bool `json:"risk,omitempty"`
}

// Catalog is an immutable set of entries keyed by ID.
type Catalog struct {
	byID map[string]*Entry
	ids  []string
}

// Load parses the embedded catalogue.
func Load() (*Catalog, error) { return Parse(builtin, "builtin catalog.yaml") }

// LoadWithOverrides parses the embedded catalogue and lays the entries of file over it
// (a user's wording, severity or ladder wins field by field for the IDs it names).
func LoadWithOverrides(file string) (*Catalog, error) {
	c, err := Load()
	if err != nil || file == "" {
		return c, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading catalogue overrides: %w", err)
	}
	var over []Entry
	if err := yaml.UnmarshalStrict(b, &over); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, o := range over {
		e, ok := c.byID[o.ID]
		if !ok {
			return nil, fmt.Errorf("%s: unknown finding ID %q%s", file, o.ID, c.suggestSuffix(o.ID))
		}
		merge(e, o)
	}
	return c, nil
}

func merge(e *Entry, o Entry) {
	if o.Title != "" {
		e.Title = o.Title
	}
	if o.Severity != 0 {
		e.Severity = o.Severity
	}
	if o.Rank != 0 {
		e.Rank = o.Rank
	}
	if o.Explanation != "" {
		e.Explanation = o.Explanation
	}
	if o.Detection != "" {
		e.Detection = o.Detection
	}
	if len(o.Ladder) > 0 {
		e.Ladder = o.Ladder
	}
}

// Parse reads a catalogue document (a YAML list of entries) and validates it.
func Parse(b []byte, name string) (*Catalog, error) {
	var entries []Entry
	if err := yaml.UnmarshalStrict(b, &entries); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Catalog{byID: map[string]*Entry{}}
	for i := range entries {
		e := &entries[i]
		if err := validate(e); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", name, i, err)
		}
		if _, dup := c.byID[e.ID]; dup {
			return nil, fmt.Errorf("%s: duplicate ID %q", name, e.ID)
		}
		c.byID[e.ID] = e
		c.ids = append(c.ids, e.ID)
	}
	sort.Strings(c.ids)
	return c, nil
}

var rungs = map[string]bool{"observe": true, "resync": true, "restart": true, "repair": true, "realign": true}

func validate(e *Entry) error {
	switch {
	case e.ID == "" || !strings.Contains(e.ID, "/"):
		return fmt.Errorf("ID %q is not of the form family/name", e.ID)
	case e.Title == "":
		return fmt.Errorf("%s: no title", e.ID)
	case e.Severity == 0:
		return fmt.Errorf("%s: no severity", e.ID)
	case e.Explanation == "" || e.Detection == "":
		return fmt.Errorf("%s: explanation and detection are required", e.ID)
	case len(e.Ladder) == 0:
		return fmt.Errorf("%s: empty fix ladder", e.ID)
	}
	for _, r := range e.Ladder {
		if !rungs[r.Rung] {
			return fmt.Errorf("%s: unknown rung %q", e.ID, r.Rung)
		}
	}
	if e.Gauge != "" {
		ok := false
		for _, t := range e.Thresholds {
			ok = ok || t.Name == e.Gauge
		}
		if !ok {
			return fmt.Errorf("%s: gauge %q is not one of the entry's thresholds", e.ID, e.Gauge)
		}
	}
	return nil
}

// Get returns the entry for id.
func (c *Catalog) Get(id string) (*Entry, bool) {
	e, ok := c.byID[id]
	return e, ok
}

// IDs lists every ID, sorted.
func (c *Catalog) IDs() []string { return append([]string(nil), c.ids...) }

// IDsWhere lists, sorted, the IDs whose entry satisfies keep: how code asks the catalogue
// which IDs carry a policy attribute (Preflight, Gauge, Autofix, AgentLogs).
func (c *Catalog) IDsWhere(keep func(*Entry) bool) []string {
	var out []string
	for _, id := range c.ids {
		if keep(c.byID[id]) {
			out = append(out, id)
		}
	}
	return out
}

// Steps renders an entry's ladder as the remediation of a finding.
func (e *Entry) Steps() []finding.Step {
	out := make([]finding.Step, 0, len(e.Ladder))
	for _, r := range e.Ladder {
		out = append(out, finding.Step{Rung: r.Rung, Action: r.Action, Risk: r.Risk, Commands: r.Commands})
	}
	return out
}

// Suggest returns up to three IDs like id, the most similar first: the ID with one or two
// typos, then IDs holding id whole ("crashloop" → pod/crashloop), then IDs holding every word
// of it ("fleet/agent-stuck" → fleet/agent-upgrade-stuck). IDs that merely share a few
// letters are not offered: a short ID is a few edits away from any short word.
func (c *Catalog) Suggest(id string) []string {
	q := strings.ToLower(strings.TrimSpace(id))
	if q == "" {
		return nil
	}
	type scored struct {
		id          string
		rank, edits int
	}
	var s []scored
	for _, k := range c.ids {
		_, name, _ := strings.Cut(k, "/")
		edits := min(EditDistance(q, k), EditDistance(q, name))
		rank := 0
		switch {
		case edits <= max(1, len(q)/6):
			rank = 1
		case strings.Contains(k, q):
			rank = 2
		case edits <= max(2, len(q)/4):
			rank = 3
		case allWordsIn(q, k):
			rank = 4
		default:
			continue
		}
		s = append(s, scored{k, rank, edits})
	}
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].rank != s[j].rank {
			return s[i].rank < s[j].rank
		}
		return s[i].edits < s[j].edits
	})
	var out []string
	for _, x := range s {
		if len(out) == 3 {
			break
		}
		out = append(out, x.id)
	}
	return out
}

// allWordsIn reports whether every word of q (split at "/" and "-") is a word of id.
func allWordsIn(q, id string) bool {
	split := func(r rune) bool { return r == '/' || r == '-' }
	have := map[string]bool{}
	for _, w := range strings.FieldsFunc(id, split) {
		have[w] = true
	}
	words := strings.FieldsFunc(q, split)
	for _, w := range words {
		if !have[w] {
			return false
		}
	}
	return len(words) > 0
}

func (c *Catalog) suggestSuffix(id string) string {
	if s := c.Suggest(id); len(s) > 0 {
		return " (did you mean " + strings.Join(s, ", ") + "?)"
	}
	return ""
}

// EditDistance is the Levenshtein distance between a and b, for "did you mean" suggestions.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
