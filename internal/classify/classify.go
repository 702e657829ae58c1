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
	Source string   // citation: upstream repo + file/function or issue URL the string comes from
}

// Match is the result of classifying one text.
type Match struct {
	ID   string
	Rule *Rule
	Text string // the text as given (not lower-cased)
}

// compiledRule pairs a table entry with its compiled expression.
type compiledRule struct {
	rule *Rule
	re   *regexp.Regexp
}

// table is the compiled rule table, built once from rules().
var table = compile(rules())

func compile(rs []Rule) []compiledRule {
	out := make([]compiledRule, len(rs))
	for i := range rs {
		r := &rs[i]
		for _, s := range r.All {
			if s != strings.ToLower(s) {
				panic("classify: rule " + r.ID + ": All entry is not lower-case: " + s)
			}
		}
		out[i].rule = r
		if r.Regexp != "" {
			out[i].re = regexp.MustCompile(r.Regexp)
		}
	}
	return out
}

// Rules returns a copy of the table, in match order (for documentation, `unstick explain`
// and tests).
func Rules() []Rule {
	out := make([]Rule, len(table))
	for i, c := range table {
		out[i] = *c.rule
		out[i].All = append([]string(nil), c.rule.All...)
	}
	return out
}

// normalize lower-cases text once and removes the JSON/Go escaping of quotes, so that a
// klog structured line (err="...\"name\"...") matches the same rules as the plain message.
func normalize(text string) string {
	lower := strings.ToLower(text)
	for strings.Contains(lower, `\"`) {
		lower = strings.ReplaceAll(lower, `\"`, `"`)
	}
	return lower
}

// classifyLower runs the table over an already normalised text.
func classifyLower(lower string, scope Scope) *compiledRule {
	for i := range table {
		c := &table[i]
		if c.rule.Scopes&scope == 0 {
			continue
		}
		ok := true
		for _, s := range c.rule.All {
			if !strings.Contains(lower, s) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if c.re != nil && !c.re.MatchString(lower) {
			continue
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
	c := classifyLower(normalize(text), scope)
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
