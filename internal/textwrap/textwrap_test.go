package textwrap

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A word that fits a line is never split, whatever falls before it: a digest, an image
// reference or a path moves whole to the next line.
func TestLinesKeepWordsThatFit(t *testing.T) {
	digest := "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	path := "logs/cattle-fleet-system/fleet-agent-w8dt2q2xf2-gb5tv/fleet-agent.log"
	text := "image rancher/k3s-upgrade:v1.30.3-k3s1 resolves to " + digest + " and its log is " + path + " (17 lines)"
	for _, width := range []int{72, 80, 100} {
		lines := Lines(text, width)
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: line of %d characters: %q", width, n, l)
			}
		}
		joined := "\n" + strings.Join(lines, "\n") + "\n"
		for _, tok := range []string{digest, path, "rancher/k3s-upgrade:v1.30.3-k3s1"} {
			if !strings.Contains(joined, tok) {
				t.Errorf("width %d: %q split across lines:\n%s", width, tok, joined)
			}
		}
		if got := strings.Join(strings.Fields(strings.Join(lines, " ")), " "); got != text {
			t.Errorf("width %d: words lost or changed:\n%s", width, got)
		}
	}
}

// A word longer than a line is split after a separator of its parts, not mid-name.
func TestLinesSplitLongWordsAtSeparators(t *testing.T) {
	path := "[clusters/prod-us-1/logs/cattle-fleet-system/fleet-agent-w8dt2q2xf2-gb5tv/fleet-agent.previous.log"
	lines := Lines(path, 60)
	if len(lines) < 2 || strings.Join(lines, "") != path {
		t.Fatalf("want the path in pieces that join back to it: %q", lines)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.ContainsAny(l[len(l)-1:], separators) {
			t.Errorf("piece %q does not end at a separator", l)
		}
	}
	// No separator in the first half: cut at the width, between characters.
	hex := strings.Repeat("0123456789abcdef", 5)
	if got := Lines(hex, 32); len(got) != 3 || got[0] != hex[:32] {
		t.Errorf("a word without separators is cut at the width: %q", got)
	}
	if got := Lines(strings.Repeat("é", 30), 20); utf8.RuneCountInString(got[0]) != 20 || !utf8.ValidString(got[0]) {
		t.Errorf("cut inside a character: %q", got)
	}
}
