package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unstick-dev/unstick/internal/catalog"
)

// Thresholds are the tunable numbers of the detection rules. Their names and defaults are
// documented in the catalogue (the single source of truth); users override them with
// --threshold NAME=VALUE or the config file.
type Thresholds struct {
	values map[string]string
	docs   map[string]catalog.Threshold
	read   *readLog // nil unless Tracked made this copy
}

// readLog records which thresholds were read, for the test that holds each check to the
// thresholds its catalogue entries document.
type readLog struct {
	mu    sync.Mutex
	names map[string]bool
}

// Tracked returns a copy of t that records every threshold read through it, and a function
// listing those names, sorted.
func (t *Thresholds) Tracked() (*Thresholds, func() []string) {
	c := *t
	c.read = &readLog{names: map[string]bool{}}
	return &c, func() []string {
		c.read.mu.Lock()
		defer c.read.mu.Unlock()
		out := make([]string, 0, len(c.read.names))
		for n := range c.read.names {
			out = append(out, n)
		}
		sort.Strings(out)
		return out
	}
}

func (t *Thresholds) noteRead(name string) {
	if t.read == nil {
		return
	}
	t.read.mu.Lock()
	t.read.names[name] = true
	t.read.mu.Unlock()
}

// NewThresholds collects every threshold the catalogue documents, at its default.
func NewThresholds(cat *catalog.Catalog) *Thresholds {
	t := &Thresholds{values: map[string]string{}, docs: map[string]catalog.Threshold{}}
	for _, id := range cat.IDs() {
		e, _ := cat.Get(id)
		for _, th := range e.Thresholds {
			t.values[th.Name] = th.Default
			t.docs[th.Name] = th
		}
	}
	return t
}

// Set overrides one threshold, checking the value has the same kind as its default.
func (t *Thresholds) Set(name, value string) error {
	def, ok := t.values[name]
	if !ok {
		return fmt.Errorf("unknown threshold %q (known: %s)", name, strings.Join(t.Names(), ", "))
	}
	if _, err := time.ParseDuration(def); err == nil {
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return fmt.Errorf("threshold %s: %q is not a positive duration like %s", name, value, def)
		}
	} else if _, err := strconv.ParseFloat(value, 64); err != nil {
		return fmt.Errorf("threshold %s: %q is not a number like %s", name, value, def)
	}
	t.values[name] = value
	return nil
}

// Names lists every threshold name, sorted.
func (t *Thresholds) Names() []string {
	out := make([]string, 0, len(t.values))
	for k := range t.values {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Doc is the catalogue's description of a threshold.
func (t *Thresholds) Doc(name string) catalog.Threshold { return t.docs[name] }

// Value is the current setting of a threshold as written.
func (t *Thresholds) Value(name string) string { return t.values[name] }

// Duration reads a duration threshold; an unknown name is a programming error.
func (t *Thresholds) Duration(name string) time.Duration {
	t.noteRead(name)
	v, ok := t.values[name]
	if !ok {
		panic("threshold " + name + " is not documented in the catalogue")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		panic("threshold " + name + " is not a duration: " + v)
	}
	return d
}

// Float reads a numeric threshold; an unknown name is a programming error.
func (t *Thresholds) Float(name string) float64 {
	t.noteRead(name)
	v, ok := t.values[name]
	if !ok {
		panic("threshold " + name + " is not documented in the catalogue")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		panic("threshold " + name + " is not a number: " + v)
	}
	return f
}

// Int reads an integer threshold.
func (t *Thresholds) Int(name string) int { return int(t.Float(name)) }
