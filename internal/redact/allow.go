package redact

import (
	"sort"
	"strings"
	"time"
)

// Mode says what an allowlist rule keeps of the field it names.
type Mode int

const (
	// ModeKeep keeps the field and everything under it as it is.
	ModeKeep Mode = iota
	// ModeText keeps the field; every string under it passes the free-text redactor.
	ModeText
	// ModeBlank keeps the key and replaces its value by "" (a Secret's data: the checks read
	// which keys exist, never a value; "" stays valid base64).
	ModeBlank
	// ModeSetting keeps the value only when it is a system-upgrade-controller setting (its
	// key, or the "name" beside it, starts with KeepEnvPrefix) or a Fleet agent's
	// CHECKIN_INTERVAL that is a Go duration, else replaces it by Mask.
	ModeSetting
	// ModePresence keeps only that the field was set: its value becomes {}.
	ModePresence
	// ModeIfName keeps the field only in an object whose "name" is one of Rule.Names (the
	// drain and cordon containers of a system-upgrade-controller Job).
	ModeIfName
)

// Rule is one allowed field: a dotted path from the object's root, where "[]" after a name
// stands for every element of a list and "*" for every key of a map
// ("spec.template.spec.containers[].env[].value").
type Rule struct {
	Path  string
	Mode  Mode
	Count string   // what a replaced value is counted as (ModeBlank, ModeSetting)
	Names []string // ModeIfName
}

// Keep, KeepText, Blank, Setting, Presence and IfName build rules.
func Keep(paths ...string) []Rule     { return rules(ModeKeep, paths) }
func KeepText(paths ...string) []Rule { return rules(ModeText, paths) }
func Blank(path, count string) Rule {
	return Rule{Path: path, Mode: ModeBlank, Count: count}
}
func Setting(path, count string) Rule {
	return Rule{Path: path, Mode: ModeSetting, Count: count}
}
func Presence(path string) Rule { return Rule{Path: path, Mode: ModePresence} }
func IfName(path string, names ...string) Rule {
	return Rule{Path: path, Mode: ModeIfName, Names: names}
}

func rules(m Mode, paths []string) []Rule {
	out := make([]Rule, len(paths))
	for i, p := range paths {
		out[i] = Rule{Path: p, Mode: m}
	}
	return out
}

// Allowlist is a compiled set of rules for one kind.
type Allowlist struct{ root *node }

type node struct {
	rule     *Rule // set where a rule ends: the field is kept by its mode
	children map[string]*node
	any      *node // "*"
	elem     *node // "[]"
}

// Compile builds an allowlist from rules.
func Compile(rs ...[]Rule) *Allowlist {
	root := &node{}
	for _, group := range rs {
		for i := range group {
			r := group[i]
			n := root
			for _, seg := range strings.Split(r.Path, ".") {
				list := strings.HasSuffix(seg, "[]")
				seg = strings.TrimSuffix(seg, "[]")
				n = n.child(seg)
				if list {
					if n.elem == nil {
						n.elem = &node{}
					}
					n = n.elem
				}
			}
			n.rule = &r
		}
	}
	return &Allowlist{root: root}
}

func (n *node) child(seg string) *node {
	if seg == "*" {
		if n.any == nil {
			n.any = &node{}
		}
		return n.any
	}
	if n.children == nil {
		n.children = map[string]*node{}
	}
	c := n.children[seg]
	if c == nil {
		c = &node{}
		n.children[seg] = c
	}
	return c
}

// Apply keeps, in place, only the fields of obj the allowlist names, and returns the paths
// of what it removed (sorted, "[]" for list elements). Replaced values and free text that
// held a credential are counted in counts.
func (a *Allowlist) Apply(obj map[string]any, counts map[string]int) []string {
	removed := map[string]bool{}
	a.root.walkMap(obj, "", removed, counts)
	out := make([]string, 0, len(removed))
	for p := range removed {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// walkMap filters the keys of m by n's children.
func (n *node) walkMap(m map[string]any, path string, removed map[string]bool, counts map[string]int) {
	for k, v := range m {
		c := n.children[k]
		if c == nil {
			c = n.any
		}
		p := join(path, k)
		if c == nil {
			delete(m, k)
			removed[p] = true
			continue
		}
		if c.rule != nil {
			nv, keep := c.rule.apply(m, k, v, counts)
			if !keep {
				delete(m, k)
				removed[p] = true
			} else {
				m[k] = nv
			}
			continue
		}
		if !c.walk(v, p, removed, counts) {
			delete(m, k)
			removed[p] = true
		}
	}
}

// walk filters a value under a node with no rule of its own; it says false when the value
// has not the shape the node expects (a scalar where a map or list belongs) and must go.
func (n *node) walk(v any, path string, removed map[string]bool, counts map[string]int) bool {
	switch x := v.(type) {
	case map[string]any:
		if n.children == nil && n.any == nil {
			return false
		}
		n.walkMap(x, path, removed, counts)
		return true
	case []any:
		if n.elem == nil {
			return false
		}
		for i, e := range x {
			if n.elem.rule != nil {
				nv, keep := n.elem.rule.apply(nil, "", e, counts)
				if !keep {
					x[i] = nil
					removed[path+"[]"] = true
				} else {
					x[i] = nv
				}
				continue
			}
			if !n.elem.walk(e, path+"[]", removed, counts) {
				x[i] = nil
				removed[path+"[]"] = true
			}
		}
		return true
	case nil:
		return true
	default:
		return false
	}
}

// apply keeps v (the value of key k in parent) by the rule's mode.
func (r *Rule) apply(parent map[string]any, k string, v any, counts map[string]int) (any, bool) {
	switch r.Mode {
	case ModeKeep:
		return v, true
	case ModeText:
		return textAll(v, counts), true
	case ModeBlank:
		if s, ok := v.(string); ok && s != "" {
			counts[r.Count]++
		}
		return "", true
	case ModeSetting:
		name, _ := parent["name"].(string)
		if strings.HasPrefix(k, KeepEnvPrefix) || strings.HasPrefix(name, KeepEnvPrefix) {
			return v, true
		}
		if s, ok := v.(string); ok && (k == CheckinIntervalEnv || name == CheckinIntervalEnv) {
			switch {
			case s == "" || s == Mask || s == NotDuration || isDuration(s):
				return v, true
			default:
				counts[r.Count]++
				return NotDuration, true
			}
		}
		if s, ok := v.(string); ok && (s == "" || s == Mask) {
			return v, true
		}
		counts[r.Count]++
		return Mask, true
	case ModePresence:
		return map[string]any{}, true
	case ModeIfName:
		name, _ := parent["name"].(string)
		for _, n := range r.Names {
			if name == n {
				return v, true
			}
		}
		return nil, false
	}
	return nil, false
}

// TextCount is what free text that held a credential is counted as.
const TextCount = "free-text values with credentials"

// textAll redacts every string under v.
func textAll(v any, counts map[string]int) any {
	switch x := v.(type) {
	case string:
		r := String(x)
		if r != x {
			counts[TextCount]++
		}
		return r
	case map[string]any:
		for k, e := range x {
			x[k] = textAll(e, counts)
		}
	case []any:
		for i, e := range x {
			x[i] = textAll(e, counts)
		}
	}
	return v
}

func isDuration(s string) bool {
	_, err := time.ParseDuration(s)
	return err == nil
}
