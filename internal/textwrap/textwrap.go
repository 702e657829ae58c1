// Package textwrap folds prose to a width for the terminal renderers. A word is never split
// unless it is longer than a whole line: hashes, object names, image references and paths
// that fit stay whole on the next line. A word longer than a line is split after one of the
// characters that separate its parts (a path's "/", a name's "." or "-"), so that each piece
// still reads as part of a name, and only where it has none between characters.
package textwrap

import (
	"strings"
	"unicode/utf8"
)

// Lines folds one paragraph (its line breaks count as spaces) into lines of at most width
// characters, words separated by one space.
func Lines(para string, width int) []string {
	if width < 1 {
		width = 1
	}
	var out []string
	line, n := "", 0
	for _, word := range strings.Fields(para) {
		for utf8.RuneCountInString(word) > width {
			if line != "" {
				out = append(out, line)
				line, n = "", 0
			}
			cut := breakAt(word, width)
			out = append(out, word[:cut])
			word = word[cut:]
		}
		k := utf8.RuneCountInString(word)
		switch {
		case k == 0:
		case line == "":
			line, n = word, k
		case n+1+k <= width:
			line += " " + word
			n += 1 + k
		default:
			out = append(out, line)
			line, n = word, k
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// separators end a part of a long word: a line may break after them.
const separators = "/.-_:,;=&?)]}"

// breakAt is the byte offset at which to split word, longer than width characters: after
// the last separator within the first width characters when that leaves at least half a
// line, else after width characters.
func breakAt(word string, width int) int {
	end := runeOffset(word, width)
	if i := strings.LastIndexAny(word[:end], separators); i >= 0 && utf8.RuneCountInString(word[:i+1]) >= width/2 {
		return i + 1
	}
	return end
}

// runeOffset is the byte offset of the n-th character of s.
func runeOffset(s string, n int) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
