// Package textsafe makes text read from clusters and bundles safe to print: a terminal
// must not act on escape sequences an event message, a log line or a file name carries
// (OSC 52 writes the clipboard, OSC 0 sets the window title, CSI 2J clears the screen), and
// an XML or JSON document must stay well-formed whatever the input held.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

const esc = 0x1b

// Text strips control characters from s, keeping newlines and tabs: whole ANSI escape
// sequences (CSI, OSC, DCS and the other string sequences, two-byte escapes) are removed,
// then every other C0 and C1 control character, DEL, and the Unicode bidirectional
// overrides that make text read differently from what it is. Invalid UTF-8 becomes U+FFFD.
func Text(s string) string { return clean(s, true) }

// Line is Text for a value printed on one line (a name, a file, a message quoted in a
// report): each line break (LF, CR, CRLF, U+2028, U+2029) shows as ⏎, joined to the words
// either side of it (the spaces around it dropped), and tabs become spaces. Text from the
// input thus cannot start a line of its own, not even where a renderer folds it at spaces:
// "failed\n    next safe step" prints as "failed⏎next safe step".
func Line(s string) string {
	out := clean(s, false)
	if !strings.Contains(out, LineBreak) {
		return out
	}
	parts := strings.Split(out, LineBreak)
	for i := range parts {
		if i > 0 {
			parts[i] = strings.TrimLeft(parts[i], " ")
		}
		if i < len(parts)-1 {
			parts[i] = strings.TrimRight(parts[i], " ")
		}
	}
	return strings.Join(parts, LineBreak)
}

// LineBreak is what Line shows for a line break.
const LineBreak = "⏎"

// Safe reports whether s would pass Text unchanged.
func Safe(s string) bool { return !needsCleaning(s, true) }

func needsCleaning(s string, keepNL bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return true
		}
		if unsafeRune(r, keepNL) {
			return true
		}
		i += n
	}
	return false
}

func clean(s string, keepNL bool) string {
	if !needsCleaning(s, keepNL) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if s[i] == esc {
			i += escapeLen(s[i:])
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x9b || r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f:
			// The 8-bit forms of CSI, OSC, DCS, SOS, PM and APC: drop the whole sequence.
			i += n + sequenceBody(s[i+n:], r == 0x9b)
			continue
		case !keepNL && r == '\r' && strings.HasPrefix(s[i+n:], "\n"):
			// CRLF is one line break: the LF shows it.
		case !keepNL && (r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029):
			b.WriteString(LineBreak)
		case !keepNL && r == '\t':
			b.WriteByte(' ')
		case unsafeRune(r, keepNL):
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune, keepNL bool) bool {
	switch {
	case r == '\n' || r == '\t', r == 0x2028 || r == 0x2029: // U+2028/9 separate lines and paragraphs
		return !keepNL
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional embeddings, overrides and isolates
	}
	return false
}

// escapeLen is the length of the escape sequence at the start of s (s[0] is ESC). An
// unterminated sequence runs to the end of s: what follows it was meant for the terminal.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		return 2 + sequenceBody(s[2:], true)
	case ']', 'P', 'X', '^', '_':
		return 2 + sequenceBody(s[2:], false)
	}
	// A two-byte escape (ESC c, ESC 7, ...), possibly with intermediate bytes (ESC ( B).
	i := 1
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// sequenceBody is the length of a CSI body (parameters up to its final byte) or of a
// control string (up to BEL, ESC \ or ST), not counting the introducer.
func sequenceBody(s string, csi bool) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if csi {
			if c >= 0x40 && c <= 0x7e {
				return i + 1
			}
			if c < 0x20 || c > 0x7e {
				return i // not a CSI byte: the sequence ended malformed
			}
			continue
		}
		switch {
		case c == 0x07:
			return i + 1
		case c == esc && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case c == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c: // ST as UTF-8
			return i + 2
		}
	}
	return len(s)
}

// Clip shortens s to at most n bytes plus an ellipsis, never inside a UTF-8 character or
// an escape sequence (the cut goes before an escape the limit would split).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < 0 {
		n = 0
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if e := strings.LastIndexByte(s[:cut], esc); e >= 0 && e+escapeLen(s[e:]) > cut {
		cut = e
	}
	return s[:cut] + "…"
}

// ClipRunes shortens s to at most n characters, the last being an ellipsis when it was cut.
func ClipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	i, count := 0, 0
	for count < n-1 && i < len(s) {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "…"
}

// ClipWords is Clip that never ends inside a word (a run of characters between spaces): a
// word the limit falls in is kept whole when it ends within a quarter of n past the limit,
// else left out, unless that would leave less than half of n, where Clip's cut stands.
// Evidence quoting "(get bundledeployments.fleet.cattle.io)" so keeps the name whole rather
// than "(get bundledeployments.fleet.c…".
func ClipWords(s string, n int) string {
	if len(s) <= n || n <= 0 || s[n] == ' ' || s[n-1] == ' ' {
		return Clip(s, n)
	}
	end := strings.IndexByte(s[n:], ' ')
	switch {
	case end < 0 && len(s)-n <= n/4:
		return s
	case end >= 0 && end <= n/4:
		return Clip(s, n+end)
	}
	if start := strings.LastIndexByte(s[:n], ' '); start >= n/2 {
		return Clip(s, start+1)
	}
	return Clip(s, n)
}
