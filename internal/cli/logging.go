package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// unstick's own diagnostics go to stderr through a slog.Logger built per run (no global
// logger): warnings always, info with -v, debug with -vv. Lines are short and plain,
// "warning: message key=value", because they are read by people next to the report; with
// -vv each line also says when, since the start of the run.

// Verbosity levels of -v.
const (
	verbosityInfo  = 1
	verbosityDebug = 2
)

func levelFor(verbosity int) slog.Level {
	switch {
	case verbosity >= verbosityDebug:
		return slog.LevelDebug
	case verbosity == verbosityInfo:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

func newLogger(w io.Writer, verbosity int) *slog.Logger {
	return slog.New(&lineHandler{w: w, level: levelFor(verbosity), timed: verbosity >= verbosityDebug, start: time.Now(), mu: &sync.Mutex{}})
}

type lineHandler struct {
	w      io.Writer
	level  slog.Level
	timed  bool
	start  time.Time
	mu     *sync.Mutex
	attrs  []slog.Attr
	prefix string // group prefix for keys
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if h.timed {
		fmt.Fprintf(&b, "[%7.3fs] ", r.Time.Sub(h.start).Seconds())
	}
	b.WriteString(levelName(r.Level))
	b.WriteString(": ")
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		writeAttr(&b, "", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.prefix, a)
		return true
	})
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), qualify(h.prefix, as)...)
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

func qualify(prefix string, as []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}

func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			writeAttr(b, prefix+a.Key+".", g)
		}
		return
	}
	v := a.Value.String()
	if a.Value.Kind() == slog.KindDuration {
		v = a.Value.Duration().Round(time.Millisecond).String()
	}
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		v = strconv.Quote(v)
	}
	b.WriteString(" " + prefix + a.Key + "=" + v)
}
