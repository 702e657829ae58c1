package cli

import (
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"
)

// terminalWidth is the width the table renderers fold prose to: the terminal's that w
// writes to; else, when w is a pipe or a file, $COLUMNS as the user or their shell set it
// (COLUMNS=120 unstick scan | less); else 0, the renderer's default of 100 columns.
func terminalWidth(w io.Writer) int {
	if cols := ttyWidth(w); cols > 0 {
		return cols
	}
	return columnsEnv(os.Getenv("COLUMNS"))
}

func ttyWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !isTerminal(w) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		return 0
	}
	return cols
}

// columnsEnv reads $COLUMNS: a positive number of columns, or 0 for anything else.
func columnsEnv(v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 || n > 10000 {
		return 0
	}
	return n
}
