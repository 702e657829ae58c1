// Package config reads unstick's configuration file (~/.config/unstick/config.yaml, or the
// file --config names): threshold overrides, suppressed findings with a reason and an
// expiry, severity overrides and registry settings. Parsing is strict: an unknown key, a
// value of the wrong kind or a missing field is an error that names the file, the line and
// the key, so a typo never silently does nothing.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/finding"
)

// Config is a parsed configuration file. The zero value is "no configuration".
type Config struct {
	// Path is the file it was read from; empty when there was none.
	Path       string
	Thresholds []Threshold
	Severity   []SeverityOverride
	Suppress   []Suppression
	Registry   Registry
}

// Threshold overrides one detection threshold (a name `unstick explain ID` documents).
type Threshold struct {
	Name, Value string
	Line        int
}

// SeverityOverride gives a finding ID another severity.
type SeverityOverride struct {
	ID       string
	Severity finding.Severity
	Line     int
}

// Suppression hides findings of an ID (or a family such as "helm/") until it expires,
// optionally only on some clusters or for one object.
type Suppression struct {
	ID      string
	Reason  string
	Expires time.Time // the first instant the suppression no longer holds
	// ExpiresText is the expiry as written in the file.
	ExpiresText string
	Clusters    []string // on or about these clusters; empty means every cluster
	Object      string   // Kind/namespace/name or Kind/name; empty means every object
	Line        int
}

// Registry settings for image checks.
type Registry struct {
	// Offline disables every registry request (like --offline-registry).
	Offline bool
	// Insecure registries (host or host:port) are reached over plain HTTP or with
	// unverified TLS.
	Insecure []string
}

// Error is a problem in the configuration file: where, which key, what.
type Error struct {
	File string
	Line int
	Key  string // dotted path such as suppress[1].expires; empty for the whole file
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// DefaultPath is $XDG_CONFIG_HOME/unstick/config.yaml, else ~/.config/unstick/config.yaml
// (on every OS, as kubectl keeps ~/.kube).
func DefaultPath() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "unstick", "config.yaml")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "unstick", "config.yaml")
}

// Load reads the file at path. A missing default file is no configuration; a missing file
// that was named explicitly is an error.
func Load(path string, explicit bool) (*Config, error) {
	if path == "" {
		return &Config{}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return &Config{}, nil
		}
		return nil, fmt.Errorf("reading the config file: %w", err)
	}
	return Parse(b, path)
}

var topKeys = []string{"thresholds", "severity", "suppress", "registry"}

// Parse reads a configuration document; name is used in errors.
func Parse(b []byte, name string) (*Config, error) {
	c := &Config{Path: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, &Error{File: name, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return c, nil // an empty file
	}
	p := &parser{file: name}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return c, nil
	}
	err := p.mapping(root, "", topKeys, func(key string, k, v *yaml.Node) error {
		switch key {
		case "thresholds":
			return p.mapping(v, "thresholds", nil, func(name string, k, v *yaml.Node) error {
				val, err := p.scalar(v, "thresholds."+name)
				if err != nil {
					return err
				}
				c.Thresholds = append(c.Thresholds, Threshold{Name: name, Value: val, Line: k.Line})
				return nil
			})
		case "severity":
			return p.mapping(v, "severity", nil, func(id string, k, v *yaml.Node) error {
				val, err := p.scalar(v, "severity."+id)
				if err != nil {
					return err
				}
				s, err := finding.ParseSeverity(val)
				if err != nil {
					return p.errf(v, "severity."+id, "%v", err)
				}
				c.Severity = append(c.Severity, SeverityOverride{ID: id, Severity: s, Line: k.Line})
				return nil
			})
		case "suppress":
			return p.suppressions(v, c)
		case "registry":
			return p.registry(v, &c.Registry)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

type parser struct{ file string }

func (p *parser) errf(n *yaml.Node, key, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// mapping walks a mapping node; with known set, any other key is an error naming it.
func (p *parser) mapping(n *yaml.Node, path string, known []string, each func(key string, k, v *yaml.Node) error) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // "thresholds:" with nothing under it
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, path, "want a mapping of keys to values, got %s", kindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errf(k, path, "keys must be plain strings")
		}
		key := k.Value
		full := key
		if path != "" {
			full = path + "." + key
		}
		if line, dup := seen[key]; dup {
			return p.errf(k, full, "duplicate key (first set on line %d)", line)
		}
		seen[key] = k.Line
		if known != nil && !contains(known, key) {
			msg := fmt.Sprintf("unknown key %q", key)
			if s := closest(key, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return p.errf(k, full, "%s (known keys here: %s)", msg, strings.Join(known, ", "))
		}
		if err := each(key, k, v); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) scalar(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, key, "want a single value, got %s", kindName(n))
	}
	return n.Value, nil
}

func (p *parser) stringList(n *yaml.Node, key string) ([]string, error) {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return []string{n.Value}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, key, "want a list of strings, got %s", kindName(n))
	}
	var out []string
	for i, it := range n.Content {
		s, err := p.scalar(it, fmt.Sprintf("%s[%d]", key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) boolean(n *yaml.Node, key string) (bool, error) {
	s, err := p.scalar(n, key)
	if err != nil {
		return false, err
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, p.errf(n, key, "want true or false, got %q", s)
	}
	return b, nil
}

var suppressKeys = []string{"id", "reason", "expires", "clusters", "object"}

func (p *parser) suppressions(n *yaml.Node, c *Config) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, "suppress", "want a list of suppressions (- id: ..., reason: ..., expires: ...), got %s", kindName(n))
	}
	for i, item := range n.Content {
		path := fmt.Sprintf("suppress[%d]", i)
		s := Suppression{Line: item.Line}
		err := p.mapping(item, path, suppressKeys, func(key string, k, v *yaml.Node) error {
			var err error
			switch key {
			case "id":
				s.ID, err = p.scalar(v, path+".id")
			case "reason":
				s.Reason, err = p.scalar(v, path+".reason")
			case "expires":
				s.ExpiresText, err = p.scalar(v, path+".expires")
				if err == nil {
					s.Expires, err = parseExpiry(s.ExpiresText)
					if err != nil {
						err = p.errf(v, path+".expires", "%v", err)
					}
				}
			case "clusters":
				s.Clusters, err = p.stringList(v, path+".clusters")
			case "object":
				s.Object, err = p.scalar(v, path+".object")
			}
			return err
		})
		if err != nil {
			return err
		}
		switch {
		case strings.TrimSpace(s.ID) == "":
			return p.errf(item, path+".id", "missing: the finding ID (or family such as helm/) to suppress")
		case strings.TrimSpace(s.Reason) == "":
			return p.errf(item, path+".reason", "missing: say why %s is suppressed, so the next reader knows", s.ID)
		case s.ExpiresText == "":
			return p.errf(item, path+".expires", "missing: a date such as %s after which %s is reported again", time.Now().AddDate(0, 3, 0).Format(time.DateOnly), s.ID)
		}
		c.Suppress = append(c.Suppress, s)
	}
	return nil
}

// parseExpiry reads a date (the suppression holds through that day, UTC) or an RFC 3339 time.
func parseExpiry(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t.AddDate(0, 0, 1), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a date such as 2026-12-31 or a time such as 2026-12-31T18:00:00Z", s)
}

var registryKeys = []string{"offline", "insecure"}

func (p *parser) registry(n *yaml.Node, r *Registry) error {
	return p.mapping(n, "registry", registryKeys, func(key string, k, v *yaml.Node) error {
		var err error
		switch key {
		case "offline":
			r.Offline, err = p.boolean(v, "registry.offline")
		case "insecure":
			r.Insecure, err = p.stringList(v, "registry.insecure")
			for i, h := range r.Insecure {
				if strings.Contains(h, "://") || strings.ContainsAny(h, "/ \t") || h == "" {
					return p.errf(v, fmt.Sprintf("registry.insecure[%d]", i), "%q is not a registry host such as registry.local:5000 (no scheme, no path)", h)
				}
			}
		}
		return err
	})
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// closest is the known key within two edits of key, if any.
func closest(key string, known []string) string {
	type cand struct {
		k string
		d int
	}
	var cs []cand
	for _, k := range known {
		if d := catalog.EditDistance(strings.ToLower(key), k); d <= 2 {
			cs = append(cs, cand{k, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	if len(cs) == 0 {
		return ""
	}
	return cs[0].k
}
