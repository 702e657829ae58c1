package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: writes to tty arrive at the returned reader, as a real
// terminal would show them.
func openPTY(t *testing.T) (tty *os.File, screen func() string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&buf, master)
	}()
	return tty, func() string {
		tty.Close()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			master.Close()
			<-done
		}
		return buf.String()
	}
}

// On a terminal the table is coloured and the status line redraws itself with "\r"; with
// TERM=dumb neither happens, as with NO_COLOR for colour.
func TestDumbTerminalGetsPlainText(t *testing.T) {
	for _, tc := range []struct {
		term, noColor string
		fancy         bool
	}{
		{"xterm-256color", "", true},
		{"dumb", "", false},
	} {
		t.Run(tc.term, func(t *testing.T) {
			t.Setenv("TERM", tc.term)
			t.Setenv("NO_COLOR", tc.noColor)
			out, screenOut := openPTY(t)
			errOut, screenErr := openPTY(t)
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
				[]string{"scan", "--from", example})
			if code != ExitFindings {
				t.Errorf("exit %d", code)
			}
			stdout, stderr := screenOut(), screenErr()
			if got := strings.Contains(stdout, "\x1b["); got != tc.fancy {
				t.Errorf("TERM=%s: colour in the table = %v, want %v", tc.term, got, tc.fancy)
			}
			if !tc.fancy && strings.Contains(stderr, "\x1b[") {
				t.Errorf("TERM=%s: escape sequences on stderr: %q", tc.term, stderr)
			}
			if !tc.fancy && strings.Contains(stderr, "\r") {
				t.Errorf("TERM=%s: a carriage-return status line on stderr: %q", tc.term, stderr)
			}
		})
	}
	// The status line itself: drawn on a capable terminal, not on a dumb one.
	for _, term := range []string{"xterm", "dumb"} {
		t.Setenv("TERM", term)
		tty, screen := openPTY(t)
		p := newProgress(tty, false)
		p.update("reading clusters: 1/6")
		p.done()
		got := strings.Contains(screen(), "reading clusters")
		if got != (term != "dumb") {
			t.Errorf("TERM=%s: status line shown = %v", term, got)
		}
	}
}
