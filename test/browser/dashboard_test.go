package browser

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/serve"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// The dashboard of `unstick serve` watching the example fleet replayed into real API servers
// (one per cluster), as a browser shows it on a desktop and on a phone: no console errors,
// every incident listed, one row per cluster, nothing wider than a phone's screen. The
// screenshots are docs/dashboard.png and docs/dashboard-phone.png (rewritten with -update).
func TestServeDashboardInChromium(t *testing.T) {
	clusters := []string{"local", "prod-eu-1", "prod-us-1", "edge-arm-1", "staging-1", "dev-1", "prod-ap-1", "prod-eu-2", "edge-rke2-7"}
	var targets []source.Target
	for _, name := range clusters {
		env := testenv.Start(t, testenv.WithContextName(name))
		if _, err := testenv.Load(t.Context(), env.Config, example, testenv.LoadOptions{Cluster: name}); err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		targets = append(targets, source.Target{Name: name, Server: env.Config.Host, Config: env.Config})
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	collected := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	srv, err := serve.New(serve.Options{Targets: targets, Registry: prometheus.NewRegistry(), Catalog: cat, Thresholds: check.NewThresholds(cat),
		Clock: func() time.Time { return collected }, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	deadline := time.Now().Add(60 * time.Second)
	for !srv.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("serve not ready after 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep := srv.Report()

	for _, v := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"dashboard.png", 1280, 1100, false}, {"dashboard-phone.png", 390, 1500, true}} {
		t.Run(v.name, func(t *testing.T) {
			b := openURL(t, hs.URL+"/", v.width, v.height, v.mobile)
			if n := eval[int](b, `document.querySelectorAll("#incidents .incident").length`); n != len(rep.Incidents) {
				t.Errorf("%d incidents on the page, %d in the report", n, len(rep.Incidents))
			}
			if n := eval[int](b, `document.querySelectorAll("#clusters tbody tr").length`); n != len(clusters) {
				t.Errorf("%d cluster rows, want %d", n, len(clusters))
			}
			// Incidents come before the clusters.
			if !eval[bool](b, `document.getElementById("incidents").getBoundingClientRect().top < document.getElementById("clusters").getBoundingClientRect().top`) {
				t.Error("the clusters come before the incidents")
			}
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > int(v.width) {
				t.Errorf("the page is %dpx wide in a %dpx window: it scrolls sideways", w, v.width)
			}
			b.noErrors()
			b.screenshot(v.name)
		})
	}
}

func openURL(t *testing.T, url string, width, height int64, mobile bool) *tab {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	b := &tab{t: t, ctx: ctx}
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	var emulate chromedp.Action[chromedp.Void] = chromedp.EmulateViewport(width, height)
	if mobile {
		emulate = chromedp.EmulateViewport(width, height, chromedp.EmulateMobile, chromedp.EmulateScale(2))
	}
	b.do(emulate, chromedp.Navigate(url), chromedp.WaitReady(chromedp.ID("clusters")))
	return b
}
