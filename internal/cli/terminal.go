package cli

import (
	"io"
	"os"
)

// dumbTerminal reports TERM=dumb: a terminal (an editor's shell buffer, some CI log viewers)
// that shows escape sequences and carriage returns as garbage instead of colour and a
// self-overwriting status line.
func dumbTerminal() bool { return os.Getenv("TERM") == "dumb" }

// colorTerminal reports whether w is a terminal to colour: not dumb, and NO_COLOR unset.
func colorTerminal(w io.Writer) bool {
	return os.Getenv("NO_COLOR") == "" && !dumbTerminal() && isTerminal(w)
}

// statusTerminal reports whether w is a terminal that can redraw a status line in place.
func statusTerminal(w io.Writer) bool { return !dumbTerminal() && isTerminal(w) }
