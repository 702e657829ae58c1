// Package browser opens the HTML report in headless Chromium (Debian's chromium, installed by
// hack/deps.sh when missing) the way a reader would: the page must load without console
// errors, show every incident, and its filters and grouping must work. Screenshots of the
// example fleet and of a 2,000-cluster fleet are rewritten in docs/ with -update.
package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/unstick-dev/unstick/internal/cli"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite the screenshots in docs/")

const (
	root    = "../.."
	example = root + "/examples/fleet-upgrade-stuck"
)

var chromiumPath string

func TestMain(m *testing.M) {
	flag.Parse()
	// The browser is part of what this test needs, like the Go toolchain: installed when
	// missing, and a clear failure (not a skip) when that cannot be done.
	cmd := exec.Command("bash", filepath.Join(root, "hack", "deps.sh"), "chromium")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: headless Chromium is needed for the HTML report check and hack/deps.sh chromium could not install it: %v\n", err)
		os.Exit(1)
	}
	chromiumPath = strings.TrimSpace(string(out))
	os.Exit(m.Run())
}

// tab is one report open in a fresh headless Chromium, with every console error, uncaught
// exception and browser log error it produced.
type tab struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	log []string
}

type incidentView struct {
	ID      string `json:"id"`
	Visible bool   `json:"visible"`
}

func open(t *testing.T, file string) *tab {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1600),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	b := &tab{t: t, ctx: ctx}
	// Listen starts the browser (without a timeout, which would stop it) and the tab.
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate("file://"+abs), chromedp.WaitReady(chromedp.ID("incidents")))
	return b
}

func (b *tab) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert || e.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range e.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			b.log = append(b.log, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.log = append(b.log, fmt.Sprintf("uncaught exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
			b.log = append(b.log, fmt.Sprintf("browser log %s (%s): %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("driving Chromium: %v", err)
	}
}

func eval[T any](b *tab, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// screenshot saves the viewport: into the test's temp dir, or into docs/ with -update.
func (b *tab) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		b.t.Fatalf("%s: the screenshot is not a PNG", name)
	}
	dst := filepath.Join(b.t.TempDir(), name)
	if *update {
		dst = filepath.Join(root, "docs", name)
	}
	if err := os.WriteFile(dst, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s (%d bytes)", dst, len(png))
}

const incidentsJS = `Array.from(document.querySelectorAll(".incident")).map(function (el) {
	var r = el.querySelector("summary").getBoundingClientRect();
	return {id: el.querySelector(".rid").textContent, visible: r.width > 0 && r.height > 0 && getComputedStyle(el).display !== "none"};
})`

const shownJS = `Array.from(document.querySelectorAll(".incident:not(.hidden)")).map(function (el) {
	return {id: el.querySelector(".rid").textContent, visible: true};
})`

// noErrors fails on any console error, exception or browser log error so far.
func (b *tab) noErrors() {
	b.t.Helper()
	// Let late events (a timer, a failed load) arrive before judging.
	b.do(chromedp.Sleep(200 * time.Millisecond))
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.log {
		b.t.Errorf("the page logged: %s", e)
	}
	b.log = nil
}

// check fails on any console error so far, and unless every incident of r is on the page,
// in order, with its summary line visible.
func (b *tab) check(r *report.Report) {
	b.t.Helper()
	b.noErrors()
	seen := eval[[]incidentView](b, incidentsJS)
	if len(seen) != len(r.Incidents) {
		b.t.Fatalf("the page shows %d incidents, the report has %d", len(seen), len(r.Incidents))
	}
	for i, inc := range r.Incidents {
		if v := seen[i]; v.ID != inc.RootCause.ID || !v.Visible {
			b.t.Errorf("incident %d: the page shows %q (visible %v), want %s visible", i+1, v.ID, v.Visible, inc.RootCause.ID)
		}
	}
}

// The example fleet's report, as `unstick scan -o html --output-file` writes it.
func TestExampleReportInChromium(t *testing.T) {
	file := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr},
		[]string{"scan", "--from", example, "-o", "html", "--output-file", file})
	if code != cli.ExitFindings {
		t.Fatalf("scan exited %d, want %d: %s", code, cli.ExitFindings, stderr.String())
	}
	var js bytes.Buffer
	if code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &js, ErrOut: &stderr},
		[]string{"scan", "--from", example, "-o", "json"}); code != cli.ExitFindings {
		t.Fatalf("scan -o json exited %d", code)
	}
	r := decode(t, js.Bytes())

	b := open(t, file)
	b.check(r)
	b.screenshot("report-example.png")

	// Clicking a cluster tile shows only that cluster's incidents.
	b.do(chromedp.Click(chromedp.CSS(`.tile[data-name="edge-arm-1"]`)), chromedp.Sleep(100*time.Millisecond))
	if shown := eval[[]incidentView](b, shownJS); len(shown) != 1 || shown[0].ID != "pod/unschedulable-taints" {
		t.Errorf("after clicking edge-arm-1 the page shows %+v, want its one incident (pod/unschedulable-taints)", shown)
	}
	// Grouped by name prefix, the grid has one group per prefix.
	groups := eval[int](b, `var s = document.getElementById("groupby"); s.value = "prefix";
		s.dispatchEvent(new Event("change")); document.querySelectorAll("#groups details.group").length`)
	if groups < 3 {
		t.Errorf("grouped by name prefix there are %d groups, want one per prefix", groups)
	}
	// A copy button reacts (the clipboard may be refused headless: the fallback answers).
	b.do(chromedp.Click(chromedp.CSS(".incident:not(.hidden) .copy")), chromedp.Sleep(100*time.Millisecond))
	if label := eval[string](b, `document.querySelector(".incident:not(.hidden) .copy").textContent`); label == "copy" {
		t.Errorf("the copy button did not react")
	}
	b.noErrors() // none after the clicks either
}

// A 2,000-cluster fleet stays usable: every incident shown, the grid filterable.
func TestLargeFleetReportInChromium(t *testing.T) {
	r := reporttest.Fleet(2000)
	file := filepath.Join(t.TempDir(), "report-2000.html")
	var buf bytes.Buffer
	start := time.Now()
	if err := report.Render(&buf, r, "html", report.Options{ToolVersion: "dev"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered %d clusters, %d incidents: %d bytes in %v", len(r.Clusters), len(r.Incidents), buf.Len(), time.Since(start))
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	b := open(t, file)
	t.Logf("Chromium loaded it in %v (page load event after %.0f ms)", time.Since(start),
		eval[float64](b, `performance.getEntriesByType("navigation")[0].loadEventEnd`))
	b.check(r)
	b.screenshot("report-2000.png")

	b.do(chromedp.SendKeys(chromedp.ID("filter"), "prod-eu-00"), chromedp.Sleep(300*time.Millisecond))
	tiles := eval[int](b, `document.querySelectorAll(".tile:not(.hidden)").length`)
	incidents := len(eval[[]incidentView](b, shownJS))
	want := 0
	for _, c := range r.Clusters {
		if strings.Contains(c.Name, "prod-eu-00") {
			want++
		}
	}
	if tiles != want {
		t.Errorf("filter prod-eu-00 shows %d tiles, want %d", tiles, want)
	}
	if incidents == 0 || incidents >= len(r.Incidents) {
		t.Errorf("filter prod-eu-00 shows %d of %d incidents", incidents, len(r.Incidents))
	}
	b.noErrors()
}

func decode(t *testing.T, b []byte) *report.Report {
	t.Helper()
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("scan -o json: %v", err)
	}
	return &r
}
