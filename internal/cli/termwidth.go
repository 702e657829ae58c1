package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// terminalWidth is the width of the terminal w writes to, or 0 (the renderer's default of
// 100 columns) when w is not a terminal, such as a pipe or a file.
func terminalWidth(w io.Writer) int {
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
