package serve

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// lines collects what serve says about the watched clusters, from any goroutine.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.Write(p) }
func (l *lines) add(s string)                { _, _ = l.Write([]byte(s + "\n")) }
func (l *lines) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// waitLine waits until a line containing want was said.
func (l *lines) waitLine(t *testing.T, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(l.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no line %q within %s; said:\n%s", want, within, l.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeFollowsRancherList runs serve --rancher's list-following against the Rancher
// stand-in (it answers Steve's cluster list from management.cattle.io Clusters on a real
// "local" API server and proxies /k8s/clusters/<id> to real API servers holding clusters of
// the example fleet): a cluster added to Rancher after serve started gets watched and its
// series appear, a list that fails keeps every cluster and is reported, a cluster deleted
// from Rancher stops being watched and its series vanish.
func TestServeFollowsRancherList(t *testing.T) {
	const (
		token         = "token-ops01:RANCHER-CANARY-serve-3c9e71"
		euID, euName  = "c-m-4x7kq2zt", "prod-eu-1"
		apID, apName  = "c-m-6k2pz7va", "prod-ap-1"
		refresh       = 200 * time.Millisecond
		listFailedMsg = "listing Rancher's clusters has failed since"
	)
	ctx := t.Context()
	local := testenv.Start(t, testenv.WithoutCRDs(), testenv.WithContextName("local"))
	if err := testenv.InstallCRDs(ctx, local.Config, testenv.RancherManagementClusterCRD()); err != nil {
		t.Fatal(err)
	}
	standIn := testenv.NewRancherStandIn()
	t.Cleanup(standIn.Close)
	mount := func(id string, cfg *rest.Config) {
		h, err := testenv.LogProxy(cfg, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		standIn.AddCluster(id, h)
	}
	mount("local", local.Config)
	downstream := map[string]*testenv.Env{}
	for _, name := range []string{euName, apName} {
		env := testenv.Start(t, testenv.WithContextName(name))
		if _, err := testenv.Load(ctx, env.Config, example, testenv.LoadOptions{Cluster: name}); err != nil {
			t.Fatalf("loading %s: %v", name, err)
		}
		downstream[name] = env
	}
	standIn.Allow(token, euID, apID)

	dyn, err := dynamic.NewForConfig(local.Config)
	if err != nil {
		t.Fatal(err)
	}
	mgmt := dyn.Resource(schema.GroupVersionResource{Group: "management.cattle.io", Version: "v3", Resource: "clusters"})
	createCluster := func(id, display string) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "management.cattle.io/v3", "kind": "Cluster",
			"metadata": map[string]any{"name": id},
			"spec":     map[string]any{"displayName": display},
		}}
		if _, err := mgmt.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating management cluster %s: %v", id, err)
		}
	}
	// At start Rancher has prod-eu-1 only.
	mount(euID, downstream[euName].Config)
	createCluster(euID, euName)

	rancher := &rest.Config{Host: standIn.URL(), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: standIn.CAData()}}
	var lists atomic.Int64
	discover := func(ctx context.Context) ([]source.Target, error) {
		lists.Add(1)
		cs, err := source.DiscoverRancherClusters(ctx, rancher)
		if err != nil {
			return nil, err
		}
		return source.RancherTargets(rancher, standIn.URL(), cs, nil), nil
	}
	targets, err := discover(ctx)
	if err != nil || len(targets) != 1 {
		t.Fatalf("first list: %v, %d targets", err, len(targets))
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	said, logged := &lines{}, &lines{}
	reg := prometheus.NewRegistry()
	srv, err := New(Options{Targets: targets, Registry: reg, Catalog: cat, Thresholds: check.NewThresholds(cat), Clock: newClock(exampleNow).now,
		Debounce: 50 * time.Millisecond, Interval: time.Second, Version: "test",
		Rediscover: discover, Refresh: refresh, Notify: said.add,
		Log: slog.New(slog.NewTextHandler(logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, reg: reg, http: httptest.NewServer(srv.Handler())}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	t.Cleanup(func() {
		f.http.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	f.waitReady(t)
	euPending := map[string]string{"id": "helm/release-pending", "cluster": euName}
	apCRD := map[string]string{"id": "crd/version-not-served", "cluster": apName}
	if _, ok := f.series(t, "unstick_findings", euPending); !ok {
		t.Fatalf("no helm/release-pending series for %s at start", euName)
	}
	if _, ok := f.series(t, "unstick_scan_errors", map[string]string{"cluster": apName}); ok {
		t.Fatalf("%s is watched before Rancher lists it", apName)
	}

	t.Run("a cluster added to Rancher is watched and its series appear", func(t *testing.T) {
		// Its API server does not answer at first: Rancher answers 502 for it.
		if err := standIn.AddDownCluster(apID); err != nil {
			t.Fatal(err)
		}
		createCluster(apID, apName)
		said.waitLine(t, "rancher: cluster "+apID+" ("+apName+") added; watching it", 10*time.Second)
		said.waitLine(t, "rancher: cluster "+apID+" ("+apName+") cannot be watched yet (tried again at each refresh): ", 60*time.Second)
		apErrs := map[string]string{"cluster": apName}
		f.waitSeries(t, "unstick_scan_errors", apErrs, 10*time.Second)
		// While it stays down it stays reported, through the retries at each refresh.
		before := lists.Load()
		for lists.Load() < before+5 {
			if n, ok := f.series(t, "unstick_scan_errors", apErrs); !ok || n < 1 {
				t.Fatalf("while %s is down, unstick_scan_errors{cluster=%q} = %v, %v; want at least 1", apName, apName, n, ok)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(fmt.Sprint(srv.Report().Errors), "Rancher answered 502") {
			t.Errorf("the report does not say what Rancher answered for %s: %v", apName, srv.Report().Errors)
		}

		start := time.Now()
		mount(apID, downstream[apName].Config)
		f.waitSeries(t, "unstick_findings", apCRD, 60*time.Second)
		t.Logf("%s's findings appeared %s after its API server answered (refresh every %s)", apName, time.Since(start).Round(time.Millisecond), refresh)
		said.waitLine(t, "rancher: cluster "+apID+" ("+apName+") can be watched now", 10*time.Second)
		if n, ok := f.series(t, "unstick_scan_errors", apErrs); !ok || n != 0 {
			t.Errorf("unstick_scan_errors{cluster=%q} = %v, %v; want 0", apName, n, ok)
		}
	})

	t.Run("a list that fails keeps every cluster and says so", func(t *testing.T) {
		standIn.FailClusterList(503)
		before := lists.Load()
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, ok := f.series(t, "unstick_scan_errors", map[string]string{"cluster": ""})
			if ok && n == 1 && lists.Load() >= before+3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no unstick_scan_errors{cluster=\"\"} 1 after %d failed lists", lists.Load()-before)
			}
			time.Sleep(20 * time.Millisecond)
		}
		waitEvaluations(srv, 2)
		for _, want := range []map[string]string{euPending, apCRD} {
			if _, ok := f.series(t, "unstick_findings", want); !ok {
				t.Errorf("while the list fails, the series %v is gone", want)
			}
		}
		var msg string
		for _, e := range srv.Report().Errors {
			if strings.Contains(e.Message, listFailedMsg) {
				msg = e.Message
			}
		}
		t.Logf("reported: %s", msg)
		if !strings.Contains(msg, "503 Service Unavailable") || !strings.Contains(msg, "still watching the 2 clusters of the last list") {
			t.Errorf("the report's error does not say what failed and what is kept: %q", msg)
		}
		_, body := f.get(t, "/api/v1/findings")
		if !strings.Contains(body, listFailedMsg) {
			t.Errorf("/api/v1/findings does not carry the failed list")
		}
		if !strings.Contains(logged.String(), "rancher: "+listFailedMsg) {
			t.Errorf("the log does not say the list failed:\n%s", logged.String())
		}
		if strings.Count(logged.String(), listFailedMsg) != 1 {
			t.Errorf("the same failure is logged more than once:\n%s", logged.String())
		}
		if strings.Contains(said.String()+logged.String()+body, "RANCHER-CANARY") {
			t.Errorf("the token's secret was printed")
		}

		standIn.FailClusterList(0)
		said.waitLine(t, "rancher: the cluster list answers again (2 clusters)", 10*time.Second)
		deadline = time.Now().Add(10 * time.Second)
		for {
			if _, ok := f.series(t, "unstick_scan_errors", map[string]string{"cluster": ""}); !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the failed list is still reported after the list answers again")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("a cluster deleted from Rancher stops being watched and its series vanish", func(t *testing.T) {
		var eu *member
		for _, m := range srv.currentMembers() {
			if m.t.Name == euName {
				eu = m
			}
		}
		if eu == nil {
			t.Fatalf("%s is not watched", euName)
		}
		if err := mgmt.Delete(ctx, euID, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		said.waitLine(t, "rancher: cluster "+euID+" ("+euName+") removed; stopped watching it and dropped its series", 10*time.Second)
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, findings := f.series(t, "unstick_findings", map[string]string{"cluster": euName})
			_, errs := f.series(t, "unstick_scan_errors", map[string]string{"cluster": euName})
			if !findings && !errs {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("series of %s still exported 10s after its removal (findings %v, scan errors %v)", euName, findings, errs)
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-eu.w.stop:
		default:
			t.Errorf("the informers of %s still run", euName)
		}
		if _, ok := f.series(t, "unstick_findings", apCRD); !ok {
			t.Errorf("%s's series went with %s's", apName, euName)
		}
		for _, c := range srv.Report().Clusters {
			if c.Name == euName {
				t.Errorf("%s is still in the report", euName)
			}
		}
	})
}
