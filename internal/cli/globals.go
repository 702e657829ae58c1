package cli

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/config"
	"github.com/unstick-dev/unstick/internal/finding"
)

// globalOptions are what every verb shares: the config file, the verbosity of unstick's own
// diagnostics, the name it was called by, and — once the command line is parsed — the
// logger and the status line on stderr. One value per run; nothing global.
type globalOptions struct {
	s           Streams
	displayName string // "unstick", or "kubectl unstick" when run as the kubectl plugin
	configPath  string
	verbosity   int

	status *progress
	log    *slog.Logger
	clock  func() time.Time // wall clock, for suppression expiry
}

func newGlobals(s Streams, displayName string) *globalOptions {
	g := &globalOptions{s: s, displayName: displayName, clock: time.Now}
	g.init()
	return g
}

// init (re)builds the status line and logger from the flags; run again once they are parsed.
func (g *globalOptions) init() {
	g.status = newProgress(g.s.ErrOut, false)
	g.log = newLogger(g.status, g.verbosity)
}

func (g *globalOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.configPath, "config", "", "configuration file (default "+displayPath(config.DefaultPath())+")")
	fs.CountVarP(&g.verbosity, "verbosity", "v", "diagnostics of unstick itself on stderr: -v info, -vv debug (or --verbosity=N)")
}

// displayPath shows the default config path as the user would type it: ~ for the home dir.
func displayPath(p string) string {
	if p == "" {
		return "~/.config/unstick/config.yaml"
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" && strings.HasPrefix(p, home+string(os.PathSeparator)) {
		return "~" + p[len(home):]
	}
	return p
}

// config reads the configuration file: --config when given (it must exist), else the
// default path when there is a file there.
func (g *globalOptions) config() (*config.Config, error) {
	path, explicit := g.configPath, g.configPath != ""
	if !explicit {
		path = config.DefaultPath()
	}
	c, err := config.Load(path, explicit)
	if err != nil {
		return nil, &UsageError{Err: fmt.Errorf("config: %w", err)}
	}
	if c.Path != "" {
		g.log.Debug("read the config file", "path", c.Path, "thresholds", len(c.Thresholds), "severities", len(c.Severity), "suppressions", len(c.Suppress))
	}
	return c, nil
}

// applyConfig lays the configuration over the catalogue and thresholds: severity overrides
// into a copy of the catalogue, threshold values before any --threshold flag. It checks that
// every ID it names exists, and warns about suppressions that have expired.
func (g *globalOptions) applyConfig(c *config.Config, cat *catalog.Catalog) (*catalog.Catalog, *check.Thresholds, error) {
	bad := func(line int, key string, err error) error {
		return &UsageError{Err: &config.Error{File: c.Path, Line: line, Key: key, Msg: err.Error()}}
	}
	if len(c.Severity) > 0 {
		over := map[string]finding.Severity{}
		for _, s := range c.Severity {
			if _, err := cat.WithSeverities(map[string]finding.Severity{s.ID: s.Severity}); err != nil {
				return nil, nil, bad(s.Line, "severity."+s.ID, err)
			}
			over[s.ID] = s.Severity
		}
		var err error
		if cat, err = cat.WithSeverities(over); err != nil {
			return nil, nil, bad(0, "severity", err)
		}
	}
	th := check.NewThresholds(cat)
	for _, t := range c.Thresholds {
		if err := th.Set(t.Name, t.Value); err != nil {
			return nil, nil, bad(t.Line, "thresholds."+t.Name, err)
		}
	}
	for i, s := range c.Suppress {
		if err := knownID(cat, s.ID); err != nil {
			return nil, nil, bad(s.Line, fmt.Sprintf("suppress[%d].id", i), err)
		}
	}
	now := g.clock()
	for _, s := range c.Expired(now) {
		g.log.Warn(fmt.Sprintf("%s:%d: the suppression of %s expired on %s; its findings are reported again (reason given: %q)",
			c.Path, s.Line, s.ID, s.ExpiresText, s.Reason))
	}
	return cat, th, nil
}

// knownID accepts a catalogue ID or a family ("helm/", "helm/*") that has entries.
func knownID(cat *catalog.Catalog, id string) error {
	id = strings.TrimSuffix(id, "*")
	if strings.HasSuffix(id, "/") {
		for _, k := range cat.IDs() {
			if strings.HasPrefix(k, id) {
				return nil
			}
		}
		var families []string
		for _, k := range cat.IDs() {
			if f, _, ok := strings.Cut(k, "/"); ok && !slices.Contains(families, f+"/") {
				families = append(families, f+"/")
			}
		}
		sort.Strings(families)
		return fmt.Errorf("no finding ID starts with %q (the families are %s)", id, strings.Join(families, ", "))
	}
	if _, ok := cat.Get(id); ok {
		return nil
	}
	msg := fmt.Sprintf("unknown finding ID %q", id)
	if s := cat.Suggest(id); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, ", ") + "?"
	}
	return fmt.Errorf("%s", msg)
}
