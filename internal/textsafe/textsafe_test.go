package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The attacks of a hostile event message, log line or file name: none of them may reach a
// terminal as anything but plain text.
func TestTextRemovesEscapeSequences(t *testing.T) {
	for in, want := range map[string]string{
		"copy \x1b]52;c;cm0gLXJmIH4K\x07 done":      "copy  done",         // OSC 52: clipboard write
		"title \x1b]0;pwned\x07 set":                "title  set",         // OSC 0: window title
		"title \x1b]0;pwned\x1b\\ set":              "title  set",         // OSC ended by ST
		"\x1b[2Jcleared":                            "cleared",            // CSI 2J: clear screen
		"\x1b[1;31mred\x1b[0m":                      "red",                // SGR colour
		"link \x1b]8;;http://evil\x07x\x1b]8;;\x07": "link x",             // OSC 8 hyperlink
		"unterminated \x1b]52;c;AAAA":               "unterminated ",      // runs to the end
		"8-bit \u009b2J CSI":                        "8-bit  CSI",         // C1 CSI in UTF-8
		"8-bit \u009d0;t\u0007 OSC":                 "8-bit  OSC",         // C1 OSC in UTF-8
		"bell\a nul\x00 bs\b del\x7f cr\r":          "bell nul bs del cr", // other controls
		"bidi \u202egnp.exe":                        "bidi gnp.exe",
		"keep\ttabs\nand lines":                     "keep\ttabs\nand lines",
		"bad utf8 \xff\xfe":                         "bad utf8 \ufffd\ufffd",
		"ünïcödé 日本 ✓":                              "ünïcödé 日本 ✓",
		"ESC at end \x1b":                           "ESC at end ",
		"charset \x1b(Bx":                           "charset x",
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if !Safe(Text(in)) {
			t.Errorf("Text(%q) is not Safe", in)
		}
	}
	if got := Line("a\nb\tc\r\x1b[2Jd"); got != "a⏎b c⏎d" {
		t.Errorf("Line = %q", got)
	}
}

// Text quoted on one line cannot start a line of its own: every kind of line break shows as
// one ⏎ joined to the words around it, so a Helm description cannot print a block that
// passes for the report's advice, even where the table folds it at spaces.
func TestLineShowsEveryLineBreak(t *testing.T) {
	for in, want := range map[string]string{
		"Upgrade failed\n    next safe step (repair):\n        $ helm rollback x 1": "Upgrade failed⏎next safe step (repair):⏎$ helm rollback x 1",
		"a \t\n\t b ":     "a⏎b ",
		"a\r\nb":          "a⏎b",
		"a\rb":            "a⏎b",
		"a\n\nb":          "a⏎⏎b",
		"a\u2028b\u2029c": "a⏎b⏎c",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
}

// A cut never splits a character or leaves half an escape sequence for the terminal.
func TestClipKeepsCharactersAndEscapesWhole(t *testing.T) {
	s := "ab日本" // 日 is bytes 2..4
	for n := 0; n <= len(s)+1; n++ {
		got := Clip(s, n)
		if !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q: invalid UTF-8", s, n, got)
		}
	}
	e := "msg \x1b]52;c;QUFBQQ==\x07 tail"
	for n := 0; n < len(e); n++ {
		got := Clip(e, n)
		if i := strings.IndexByte(got, 0x1b); i >= 0 && !strings.Contains(got[i:], "\x07") {
			t.Errorf("Clip(%q, %d) = %q cuts the escape", e, n, got)
		}
	}
	if got := ClipRunes("日本語のテキスト", 4); got != "日本語…" {
		t.Errorf("ClipRunes = %q", got)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"\x1b]52;c;x\x07", "\x1b[2J", "a\u009bb", "\xff", "ok"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Text(s), Line(s), Text(Clip(s, len(s)/2))} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
			}
			for _, r := range out {
				if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
					t.Fatalf("control %U left in %q (from %q)", r, out, s)
				}
			}
		}
		if strings.ContainsAny(Line(s), "\n\t") {
			t.Fatalf("Line(%q) keeps a newline or tab", s)
		}
	})
}

// ClipWords ends a quoted log line at a word's end: the name the limit falls in is kept
// whole when it ends soon after, else left out with the words after it.
func TestClipWords(t *testing.T) {
	line := `E1128 09:25:03.150093 1 reflector.go:166] "Unhandled Error" err="pkg/mod/k8s.io/client-go@v0.34.2/tools/cache/reflector.go:290: Failed to watch *v1alpha1.BundleDeployment: failed to list *v1alpha1.BundleDeployment: the server could not find the requested resource (get bundledeployments.fleet.cattle.io)" logger="UnhandledError"`
	name := strings.Index(line, "bundledeployments.fleet.c") + len("bundledeployments.fleet.c")
	errAt := strings.Index(line, "err=")
	for _, tc := range []struct {
		n    int
		want string
	}{
		// the limit falls inside the resource name: the name is kept
		{name, line[:strings.Index(line, `)"`)+2] + "…"},
		// the limit falls early in a long token with no space soon after: the token goes
		{errAt + 40, line[:errAt] + "…"},
		{len(line), line},
		{len(line) - 3, line}, // the last word ends within a quarter of the limit
	} {
		got := ClipWords(line, tc.n)
		if got != tc.want {
			t.Errorf("ClipWords(_, %d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := ClipWords(strings.Repeat("x", 50), 20); got != strings.Repeat("x", 20)+"…" {
		t.Errorf("a single word is cut as Clip cuts it: %q", got)
	}
}
