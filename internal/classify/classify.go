// Package classify maps one log line, event message or status/condition message to a finding
// ID of the catalogue (SPEC §3), using a table of real error strings taken from the upstream
// code that emits them (rancher/fleet, helm, kubernetes, containerd, client-go, Go's crypto/x509
// and net packages, rancher/system-upgrade-controller). Every rule cites where its string comes
// from, so a reviewer can check it against the source and a user can see why a line matched.
//
// The table is ordered most specific first, and causes before the wrappers that carry them:
// a Helm "UPGRADE FAILED: ... admission webhook ... denied the request" is an admission problem,
// a "Failed to register agent: ... x509: certificate signed by unknown authority" is a TLS
// problem. See rules.go for the order and the reasons behind it.
package classify

import (
	"regexp"
	"strings"
	"sync"
)

// Scope says where a text comes from; a rule applies only to the scopes it names.
type Scope uint8

const (
	// Log is a line of a container log.
	Log Scope = 1 << iota
	// Event is the message of a Kubernetes Event.
	Event
	// Status is a status/condition message of an object (a BundleDeployment's condition,
	// a container's waiting/terminated message, a Plan's Complete condition, ...).
	Status
	// Any is every scope.
	Any = Log | Event | Status
)

// String names the scopes, for messages and tests.
func (s Scope) String() string {
	if s == 0 {
		return "none"
	}
	var parts []string
	if s&Log != 0 {
		parts = append(parts, "log")
	}
	if s&Event != 0 {
		parts = append(parts, "event")
	}
	if s&Status != 0 {
		parts = append(parts, "status")
	}
	return strings.Join(parts, "|")
}

// Rule is one entry of the table. A text matches when every All substring occurs in it
// (case-insensitively) and, if Regexp is set, the regular expression matches the lower-cased
// text as well.
type Rule struct {
	ID     string   // catalogue ID, e.g. "agent/crd-missing"
	Scopes Scope    // where the rule applies
	All    []string // lower-case substrings that must all appear (case-insensitive match)
	Regexp string   // optional, used instead of / in addition to All; compiled once
	// Family, when set, is the internal/messages parser of the message family the rule
	// stands for: the text matches only when that parser reads it (over the lower-cased,
	// unescaped text, as Regexp), so a log line, an event and a quoted condition are read
	// by the same parser.
	Family func(text string) bool
	Source string // citation: upstream repo + file/function or issue URL the string comes from
}

// Match is the result of classifying one text.
type Match struct {
	ID   string
	Rule *Rule
	Text string // the text as given (not lower-cased)
}

// compiledRule pairs a table entry with its expression and the ids of its literals in the
// matcher. The expression is compiled the first time a text holds all the rule's literals: a
// scan compiles only the expressions its texts reach.
type compiledRule struct {
	rule *Rule
	re   func() *regexp.Regexp // nil when the rule has no expression, or one the literals decide
	lits []uint16              // All: every one must occur
	alts []uint16              // a Regexp that is a plain alternation of literals: one must occur
}

// ruleTable returns the compiled rule table and the automaton over all its All literals, built
// from rules() on the first classification, so a process that classifies nothing (version,
// explain, a live fix) does not pay for them.
var ruleTable = sync.OnceValues(func() ([]compiledRule, *matcher) { return compile(rules()) })

func compile(rs []Rule) ([]compiledRule, *matcher) {
	out := make([]compiledRule, len(rs))
	ids := map[string]uint16{}
	var all []string
	intern := func(s string) uint16 {
		id, ok := ids[s]
		if !ok {
			id = uint16(len(all))
			ids[s] = id
			all = append(all, s)
		}
		return id
	}
	for i := range rs {
		r := &rs[i]
		if len(r.All) == 0 {
			// Every rule needs a literal: it is the one-pass pre-filter that keeps a scan of
			// thousands of lines cheap.
			panic("classify: rule " + r.ID + " has no All literal")
		}
		for _, s := range r.All {
			if s == "" || s != strings.ToLower(s) {
				panic("classify: rule " + r.ID + ": All entry is empty or not lower-case: " + s)
			}
			out[i].lits = append(out[i].lits, intern(s))
		}
		out[i].rule = r
		if r.Regexp == "" {
			continue
		}
		if alts, ok := literalAlternation(r.Regexp); ok {
			for _, a := range alts {
				out[i].alts = append(out[i].alts, intern(a))
			}
			continue
		}
		expr := r.Regexp
		out[i].re = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
	}
	return out, newMatcher(all)
}

// Rules returns a copy of the table, in match order (for documentation, `unstick explain`
// and tests).
func Rules() []Rule {
	table, _ := ruleTable()
	out := make([]Rule, len(table))
	for i, c := range table {
		out[i] = *c.rule
		out[i].All = append([]string(nil), c.rule.All...)
	}
	return out
}

// literalAlternation reports whether re is a plain alternation of literals ("a|b|c", with only
// escaped punctuation such as `\.`), and returns them. Such rules are evaluated with the literal
// automaton instead of the regexp engine: same result, a fraction of the cost.
func literalAlternation(re string) ([]string, bool) {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '\\':
			if i+1 >= len(re) {
				return nil, false
			}
			n := re[i+1]
			if n >= 'a' && n <= 'z' || n >= 'A' && n <= 'Z' || n >= '0' && n <= '9' {
				return nil, false // \b, \s, \d, ...
			}
			cur.WriteByte(n)
			i++
		case c == '|':
			parts = append(parts, cur.String())
			cur.Reset()
		case strings.IndexByte(`.+*?()[]{}^$`, c) >= 0:
			return nil, false
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	for _, p := range parts {
		if p == "" || p != strings.ToLower(p) {
			return nil, false
		}
	}
	return parts, true
}

// normalize lower-cases text (ASCII letters: every literal and expression of the table is
// ASCII) and removes the JSON/Go escaping of quotes — a run of backslashes before a '"' — so
// that a klog structured line (err="...\"name\"...") matches the same rules as the plain
// message. It is exactly what the literal automaton sees while scanning, and it allocates only
// when something changes.
func normalize(text string) string {
	change := false
	for i := 0; i < len(text); i++ {
		if b := text[i]; b >= 'A' && b <= 'Z' || b == '\\' && strings.HasPrefix(strings.TrimLeft(text[i:], `\`), `"`) {
			change = true
			break
		}
	}
	if !change {
		return text
	}
	var buf strings.Builder
	buf.Grow(len(text))
	for i := 0; i < len(text); i++ {
		b := text[i]
		if b == '\\' {
			j := i + 1
			for j < len(text) && text[j] == '\\' {
				j++
			}
			if j < len(text) && text[j] == '"' {
				i = j - 1
				continue
			}
		}
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf.WriteByte(b)
	}
	return buf.String()
}

// classifyText runs the table over text: one pass of the literal automaton, then the rules in
// order, checking literals by bit and running a rule's expression (over the normalised text,
// computed at most once) only when all its literals are present.
func classifyText(text string, scope Scope) *compiledRule {
	table, lits := ruleTable()
	var found litSet
	lits.scan(text, &found)
	if found.empty() {
		return nil
	}
	var lower string
	for i := range table {
		c := &table[i]
		if c.rule.Scopes&scope == 0 {
			continue
		}
		ok := true
		for _, id := range c.lits {
			if !found.has(id) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if len(c.alts) > 0 {
			ok = false
			for _, id := range c.alts {
				if found.has(id) {
					ok = true
					break
				}
			}
			if !ok {
				continue
			}
		}
		if c.re != nil || c.rule.Family != nil {
			if lower == "" {
				lower = normalize(text)
			}
			if c.re != nil && !c.re().MatchString(lower) || c.rule.Family != nil && !c.rule.Family(lower) {
				continue
			}
		}
		return c
	}
	return nil
}

// Classify returns the first rule in table order that matches text in scope.
func Classify(text string, scope Scope) (Match, bool) {
	if text == "" || scope == 0 {
		return Match{}, false
	}
	c := classifyText(text, scope)
	if c == nil {
		return Match{}, false
	}
	return Match{ID: c.rule.ID, Rule: c.rule, Text: text}, true
}

// ClassifyLines scans many lines (a log) and returns one Match per ID, keeping the LAST
// matching line for each ID (the most recent evidence), in order of first appearance.
func ClassifyLines(lines []string, scope Scope) []Match {
	var out []Match
	var index map[string]int
	for _, line := range lines {
		if line == "" {
			continue
		}
		m, ok := Classify(line, scope)
		if !ok {
			continue
		}
		if index == nil {
			index = make(map[string]int)
		}
		if i, seen := index[m.ID]; seen {
			out[i] = m
			continue
		}
		index[m.ID] = len(out)
		out = append(out, m)
	}
	return out
}
