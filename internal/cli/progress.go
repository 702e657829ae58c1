package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress writes a one-line, self-overwriting status to stderr for long work — what is
// being done, how many of how many, and the rate — and lets log lines through above it.
// The status is shown only when stderr is a terminal that can redraw a line (not TERM=dumb)
// and -q was not given; log lines always pass.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	on     bool
	last   time.Time
	shown  string // the status line on screen, "" when none
	phases map[string]time.Time
	now    func() time.Time
}

func newProgress(w io.Writer, quiet bool) *progress {
	tty := statusTerminal(w)
	return &progress{w: w, tty: tty, on: !quiet && tty, phases: map[string]time.Time{}, now: time.Now}
}

// quiet turns the status line off (-q); log lines still pass.
func (p *progress) quiet(q bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = !q && p.tty
}

// update shows a free-form status.
func (p *progress) update(format string, args ...any) {
	p.show(fmt.Sprintf(format, args...), false)
}

// count shows "what: done/total unit (rate/s, ~eta left)"; total 0 means unknown. The rate
// is measured from the first count of the same what.
func (p *progress) count(what string, done, total int, unit string) {
	p.show(p.countLine(what, done, total, unit), total > 0 && done >= total)
}

func (p *progress) countLine(what string, done, total int, unit string) string {
	p.mu.Lock()
	start, ok := p.phases[what]
	if !ok {
		start = p.now()
		p.phases[what] = start
	}
	now := p.now()
	p.mu.Unlock()
	var b strings.Builder
	b.WriteString(what + ": ")
	if total > 0 {
		fmt.Fprintf(&b, "%d/%d %s", done, total, unit)
	} else {
		fmt.Fprintf(&b, "%d %s", done, unit)
	}
	if el := now.Sub(start); el >= 200*time.Millisecond && done > 0 {
		rate := float64(done) / el.Seconds()
		fmt.Fprintf(&b, " (%s/s", formatRate(rate))
		if total > done && rate > 0 {
			left := time.Duration(float64(total-done) / rate * float64(time.Second))
			fmt.Fprintf(&b, ", ~%s left", left.Round(time.Second))
		}
		b.WriteString(")")
	}
	return b.String()
}

func formatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// show draws a status line, at most ten times a second unless force.
func (p *progress) show(line string, force bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.on {
		return
	}
	now := p.now()
	if !force && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	p.shown = line
	fmt.Fprint(p.w, "\r\x1b[K"+line)
}

// Write passes a log line through: the status line is cleared, the line written, and the
// status drawn again below it.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
	n, err := p.w.Write(b)
	if p.shown != "" {
		fmt.Fprint(p.w, p.shown)
	}
	return n, err
}

// done clears the status line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown != "" {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = ""
	}
	p.phases = map[string]time.Time{}
}
