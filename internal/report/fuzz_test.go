package report_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// The renderers' fuzz targets start from what the loader's fuzzers found interesting, so
// the text that reaches a report is text a bundle really yields.
const loaderCorpus = "../source/testdata/fuzz"

// corpusValues reads the values of Go fuzz corpus files under dir/target.
func corpusValues(t testing.TB, target string) [][]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(loaderCorpus, target, "*"))
	var out [][]any
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		var vals []any
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "[]byte(") && strings.HasSuffix(l, ")"):
				s, err := strconv.Unquote(l[len("[]byte(") : len(l)-1])
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				vals = append(vals, []byte(s))
			case strings.HasPrefix(l, "byte(") && strings.HasSuffix(l, ")"):
				c, err := strconv.Unquote(l[len("byte(") : len(l)-1])
				if err != nil || len(c) != 1 {
					t.Fatalf("%s: bad byte in %q", p, l)
				}
				vals = append(vals, c[0])
			}
		}
		f.Close()
		out = append(out, vals)
	}
	if len(out) == 0 {
		t.Fatalf("no corpus under %s/%s", loaderCorpus, target)
	}
	return out
}

// File names the loader meets, one with escape sequences in it.
var fuzzNames = []string{
	"objects.yaml",
	"cattle-fleet-system/events.json",
	"logs/cattle-fleet-system/fleet-agent-7d9c5b6f4-q8w2n/fleet-agent\x1b]0;t\x07.log",
	"bundle.tar.gz",
}

// Attacks added to the loader's seeds: escapes in an event message and a log line.
var attackSeeds = []string{
	"apiVersion: v1\nkind: Event\nmetadata:\n  name: x.1\n  namespace: cattle-fleet-system\ninvolvedObject:\n  kind: Pod\n  name: fleet-agent`<script>alert(1)</script>`\n  namespace: cattle-fleet-system\nreason: FailedScheduling\ntype: Warning\ncount: 3\nlastTimestamp: \"2026-11-28T09:00:00Z\"\nmessage: \"0/2 nodes \\e]52;c;cm0gLXJmIH4K\\a\\e]0;title\\a\\e[2J are available\"\n",
	"time=\"2026-11-28T08:00:01Z\" level=error msg=\"\x1b]52;c;cm0=\x07\x1b[2J error while running post render\"\nE1128 08:00:02.000000       1 reflector.go:147] failed to list *v1alpha1.BundleDeployment: Unauthorized\x1b]0;x\x07\n",
}

var fuzzNow = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

// FuzzRenderLoaded loads one fuzzed file the way a bundle is read, judges it with every
// check, and renders the report in every format: each must be well-formed, valid UTF-8,
// and free of control characters a terminal or parser would act on.
func FuzzRenderLoaded(f *testing.F) {
	for _, vals := range corpusValues(f, "FuzzLoadFile") {
		if len(vals) == 2 {
			f.Add(vals[0].([]byte), vals[1].(uint8))
		}
	}
	for _, vals := range corpusValues(f, "FuzzLoadTarGz") {
		if len(vals) >= 1 {
			f.Add(vals[0].([]byte), uint8(3))
		}
	}
	for i, s := range attackSeeds {
		f.Add([]byte(s), uint8(i))
	}
	cat, err := catalog.Load()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, shape uint8) {
		dir := t.TempDir()
		name := fuzzNames[int(shape)%len(fuzzNames)]
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		in := p
		if !strings.HasSuffix(name, ".tar.gz") {
			in = dir
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		snap, err := (&source.Offline{Path: in}).Load(ctx)
		if err != nil {
			return // refused input is the loader's fuzzers' business
		}
		cc := &check.Context{Snap: snap, Now: fuzzNow, Thresholds: check.NewThresholds(cat), Catalog: cat}
		incs, fs, errs := check.Evaluate(cc, check.Filter{})
		checkRendered(t, report.New(snap, fuzzNow, incs, fs, errs), cat)
	})
}

// FuzzRenderStrings puts one fuzzed string in every text field of a report.
func FuzzRenderStrings(f *testing.F) {
	cat, err := catalog.Load()
	if err != nil {
		f.Fatal(err)
	}
	for _, vals := range corpusValues(f, "FuzzLoadFile") {
		if b, ok := vals[0].([]byte); ok {
			f.Add(string(b))
		}
	}
	for _, s := range append(attackSeeds, "]]>", "``<script>``", "\u009b2J\u009d0;x\u0007", "\xff\xfe") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fd := finding.Finding{
			ID: "pod/crashloop", Severity: finding.Error, Cluster: s, Affects: s,
			Object:      finding.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: s, Name: s},
			Summary:     s,
			Evidence:    []finding.Evidence{{Source: s, Text: s}},
			Remediation: []finding.Step{{Rung: "restart", Action: s, Risk: "low", Commands: []string{"kubectl --context " + s}, Notes: []string{s}}},
		}
		snap := &snapshot.Snapshot{Clusters: []*snapshot.Cluster{{Name: s, Role: snapshot.Downstream, Context: s, ContextSource: snapshot.ContextFromName}}}
		snap.Skipped = []snapshot.Skipped{{File: s, Reason: s}}
		checkRendered(t, report.New(snap, fuzzNow, []finding.Incident{{RootCause: fd, Symptoms: []finding.Finding{fd}}}, []finding.Finding{fd},
			[]finding.ScanError{{Cluster: s, File: s, Check: s, Message: s}}), cat)
	})
}

// checkRendered renders r in every format (with the catalogue parsed once, not per render)
// and checks each output.
func checkRendered(t *testing.T, r *report.Report, cat *catalog.Catalog) {
	t.Helper()
	for _, format := range report.Formats {
		var b bytes.Buffer
		if err := report.Render(&b, r, format, report.Options{Width: 60, Catalog: cat}); err != nil {
			t.Fatalf("rendering %s: %v", format, err)
		}
		out := b.Bytes()
		if !utf8.Valid(out) {
			t.Fatalf("%s: invalid UTF-8", format)
		}
		if i := controlAt(out); i >= 0 {
			t.Fatalf("%s: control character near %q", format, out[max(0, i-40):min(len(out), i+40)])
		}
		switch format {
		case "json", "sarif":
			if !json.Valid(out) {
				t.Fatalf("%s: invalid JSON", format)
			}
		case "junit":
			if err := wellFormedXML(out); err != nil {
				t.Fatalf("junit: not well-formed XML: %v", err)
			}
		}
	}
}

// controlAt is the offset of the first control character a terminal or an XML parser would
// act on (C0 but newline and tab, DEL, C1), or -1; a loop, as a regexp dominated the fuzzer.
func controlAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return i
		}
		i += n
	}
	return -1
}
