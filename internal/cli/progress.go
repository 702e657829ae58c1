package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress writes a one-line, self-overwriting status to stderr for long work; it is silent
// when stderr is not a terminal or with -q.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	last  time.Time
	shown bool
}

func newProgress(w io.Writer, quiet bool) *progress {
	return &progress{w: w, on: !quiet && isTerminal(w)}
}

func (p *progress) update(format string, args ...any) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.shown = true
	fmt.Fprintf(p.w, "\r\x1b[K"+format, args...)
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
