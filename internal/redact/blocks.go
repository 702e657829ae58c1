package redact

import (
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
)

// Blocks of lines: base64 wrapped at a fixed width (`base64` writes 76 columns, PEM 64), and
// PEM bodies. Each line alone decodes to a fragment that says nothing (a 57-byte piece of a
// kubeconfig), so a block is judged whole: a wrapped base64 block is a payload, never a
// message a check reads, and is masked whole, as is a body of PEM lines that runs into an
// END line whose BEGIN is not in the text (a log's tail that starts inside a key).

// minWrap is the narrowest line a wrapped block is recognised at (PEM uses 64, base64 76).
const minWrap = 40

// b64Tail is a base64 run that ends a line: the first piece of a block wrapped after its key.
var b64Tail = lazyre.New(`[A-Za-z0-9+/_-]{16,}={0,2}\s*$`)

// b64Width is the length of a line that is a base64 piece only (spaces around it aside), 0 for
// any other line. A piece has upper- and lower-case letters: a line of hex digits (a hash) or
// of dashes is not one.
func b64Width(l string) int {
	t := strings.TrimSpace(l)
	if len(t) < 16 {
		return 0
	}
	body := strings.TrimRight(t, "=")
	if len(t)-len(body) > 2 {
		return 0
	}
	upper, lower := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9', c == '+', c == '/', c == '-', c == '_':
		default:
			return 0
		}
	}
	if !upper || !lower {
		return 0
	}
	return len(t)
}

// maskWrapped masks, in place, every wrapped base64 block and every PEM body that runs into
// an END line.
func maskWrapped(lines []string) {
	for i := 0; i < len(lines); {
		w := b64Width(lines[i])
		if w == 0 {
			i++
			continue
		}
		j := blockEnd(lines, i, w)
		wrapped := j-i >= 2 && w >= minWrap
		if wrapped || (j < len(lines) && pemEnd().MatchString(lines[j])) {
			for k := i; k < j; k++ {
				lines[k] = leading(lines[k]) + Mask
			}
			if wrapped && i > 0 {
				lines[i-1] = b64Tail().ReplaceAllString(lines[i-1], Mask)
			}
		}
		i = j
	}
}

// blockEnd is the index past a block of lines of width w starting at i; its last line may be
// shorter.
func blockEnd(lines []string, i, w int) int {
	j := i + 1
	for j < len(lines) && b64Width(lines[j]) == w {
		j++
	}
	if j < len(lines) && lastPiece(lines[j], w) {
		j++
	}
	return j
}

// lastPiece says l can end a block of width w: base64 only, shorter than w, whole 4-character
// groups, and not a lower-case word ("retrying" after a block stays; "LQo=" goes).
func lastPiece(l string, w int) bool {
	t := strings.TrimSpace(l)
	body := strings.TrimRight(t, "=")
	if len(body) == 0 || len(t) >= w || len(t)%4 != 0 || len(t)-len(body) > 2 {
		return false
	}
	notWord := len(body) < len(t)
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '+', c == '/', c == '-', c == '_':
			notWord = true
		default:
			return false
		}
	}
	return notWord
}

func leading(l string) string {
	return l[:len(l)-len(strings.TrimLeft(l, " \t"))]
}

// TailStart is where redacting must start so that the last n lines are redacted as they are
// in the whole text: before a PEM block or a wrapped base64 block that the cut falls in, and
// the key line above a block. Redact lines[TailStart(lines, n):], then keep the last n.
func TailStart(lines []string, n int) int {
	cut := len(lines) - n
	if cut <= 0 {
		return 0
	}
	s := cut
	for s > 0 && b64Width(lines[s-1]) > 0 {
		s--
	}
	if s > 0 {
		s-- // the line with the key, or the block's first piece after it
	}
	for i := cut - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], "-----") {
			continue
		}
		if loc := pemStart().FindStringIndex(lines[i]); loc != nil {
			if !pemEnd().MatchString(lines[i][loc[1]:]) {
				s = min(s, i)
			}
			break
		}
		if pemEnd().MatchString(lines[i]) {
			break
		}
	}
	return s
}

// Tail redacts the text as a whole and returns its last n lines (the slice is changed).
func Tail(lines []string, n int) []string {
	s := TailStart(lines, n)
	out := Lines(lines[s:])
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

var token = lazyre.New(`\S+`)

// maskFolded masks a wrapped base64 block folded onto one line, its pieces separated by spaces
// (a message whose lines were joined): two or more pieces of one width, the last maybe shorter.
func maskFolded(s string) string {
	if len(s) < 2*minWrap {
		return s
	}
	words := token().FindAllStringIndex(s, -1)
	var b strings.Builder
	last := 0
	for i := 0; i < len(words); {
		w := b64Width(s[words[i][0]:words[i][1]])
		if w < minWrap {
			i++
			continue
		}
		j := i + 1
		for j < len(words) && b64Width(s[words[j][0]:words[j][1]]) == w {
			j++
		}
		if j < len(words) && j-i >= 2 && lastPiece(s[words[j][0]:words[j][1]], w) {
			j++
		}
		if j-i >= 2 {
			b.WriteString(s[last:words[i][0]])
			b.WriteString(Mask)
			last = words[j-1][1]
		}
		i = j
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
