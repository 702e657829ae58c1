package serve

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

const example = "../../examples/fleet-upgrade-stuck"

// exampleNow is when the example bundle was collected: the fleet is judged as of then.
var exampleNow = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

// clock is a settable time source: the real apiserver cannot make 30 minutes pass, so the
// tests move serve's clock (passed in as Options.Clock) instead of waiting.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) now() time.Time   { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)  { c.ns.Store(t.UnixNano()) }

type fixture struct {
	srv    *Server
	reg    *prometheus.Registry
	http   *httptest.Server
	clock  *clock
	envs   map[string]*testenv.Env
	cancel context.CancelFunc
	done   chan error
}

// startServe replays the named clusters of the example into one real API server each and
// runs serve on all of them, judged by a settable clock starting at the collection time.
func startServe(tb testing.TB, debounce, interval time.Duration, thresholds map[string]string, clusters ...string) *fixture {
	tb.Helper()
	f := &fixture{clock: newClock(exampleNow), envs: map[string]*testenv.Env{}, reg: prometheus.NewRegistry()}
	var targets []source.Target
	for _, name := range clusters {
		env := testenv.Start(tb, testenv.WithContextName(name))
		if _, err := testenv.Load(tb.Context(), env.Config, example, testenv.LoadOptions{Cluster: name}); err != nil {
			tb.Fatalf("loading %s: %v", name, err)
		}
		f.envs[name] = env
		targets = append(targets, source.Target{Name: name, Server: env.Config.Host, Config: env.Config})
	}
	cat, err := catalog.Load()
	if err != nil {
		tb.Fatal(err)
	}
	th := check.NewThresholds(cat)
	for k, v := range thresholds {
		if err := th.Set(k, v); err != nil {
			tb.Fatal(err)
		}
	}
	f.srv, err = New(Options{Targets: targets, Registry: f.reg, Catalog: cat, Thresholds: th, Clock: f.clock.now,
		Debounce: debounce, Interval: interval, Version: "test", FailOn: finding.Error})
	if err != nil {
		tb.Fatal(err)
	}
	f.http = httptest.NewServer(f.srv.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel, f.done = cancel, make(chan error, 1)
	go func() { f.done <- f.srv.Run(ctx) }()
	tb.Cleanup(func() {
		f.http.Close()
		cancel()
		if err := <-f.done; err != nil {
			tb.Errorf("serve: %v", err)
		}
	})
	return f
}

func (f *fixture) get(tb testing.TB, path string) (int, string) {
	tb.Helper()
	resp, err := http.Get(f.http.URL + path)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *fixture) waitReady(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _ := f.get(tb, "/readyz")
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("/readyz still %d after 60s", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// series is the value of the metric with exactly these labels, if present.
func (f *fixture) series(tb testing.TB, name string, labels map[string]string) (float64, bool) {
	tb.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return 0, true
		}
	}
	return 0, false
}

// waitSeries polls until the series appears and returns how long that took.
func (f *fixture) waitSeries(tb testing.TB, name string, labels map[string]string, within time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if _, ok := f.series(tb, name, labels); ok {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("%s%v did not appear within %s", name, labels, within)
	return 0
}

func TestServeExample(t *testing.T) {
	f := startServe(t, 100*time.Millisecond, 200*time.Millisecond, map[string]string{"helm.pendingAfter": "30s"}, "local", "prod-eu-1", "prod-ap-1")
	if code, body := f.get(t, "/healthz"); code != 200 {
		t.Errorf("/healthz = %d %s", code, body)
	}
	f.waitReady(t)

	t.Run("serve judges what a live scan judges", func(t *testing.T) {
		var targets []source.Target
		for _, n := range []string{"local", "prod-eu-1", "prod-ap-1"} {
			targets = append(targets, source.Target{Name: n, Server: f.envs[n].Config.Host, Config: f.envs[n].Config})
		}
		// Both read pod logs, but the test servers have no kubelet and no log proxy is put
		// in front of them here, so both judge without logs (TestServeReadsCrashLoopLogsOnce
		// reads them through one).
		snap, err := (&source.Live{Targets: targets, MaxLogPods: -1}).Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, scanned, _ := check.Evaluate(&check.Context{Snap: snap, Now: exampleNow, Thresholds: f.srv.o.Thresholds, Catalog: f.srv.o.Catalog}, check.Filter{})
		key := func(id, cluster, affects, kind, ns, name string) string {
			return id + " " + cluster + "→" + affects + " " + kind + "/" + ns + "/" + name
		}
		var want, got []string
		for _, x := range scanned {
			want = append(want, key(x.ID, x.Cluster, x.Affects, x.Object.Kind, x.Object.Namespace, x.Object.Name))
		}
		for _, x := range f.srv.Report().Findings {
			got = append(got, key(x.ID, x.Cluster, x.Affects, x.Object.Kind, x.Object.Namespace, x.Object.Name))
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("serve's findings differ from a live scan's:\nscan:\n%s\nserve:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		t.Logf("%d findings, as a live scan", len(got))
	})

	t.Run("metrics name the example's clusters", func(t *testing.T) {
		code, body := f.get(t, "/metrics")
		if code != 200 {
			t.Fatalf("/metrics = %d", code)
		}
		for _, want := range []string{
			`unstick_build_info{goversion="`,
			`unstick_findings{cluster="prod-eu-1",id="helm/release-pending",severity=`,
			`unstick_fleet_agent_heartbeat_age_seconds{cluster="prod-eu-1"}`,
			// Its agent checks in every 15m: stale after two intervals, the 30m threshold.
			`unstick_fleet_agent_heartbeat_stale_after_seconds{cluster="prod-eu-1"} 1800`,
			`unstick_fleet_agent_drift_seconds{cluster="prod-eu-1"}`,
			`unstick_helm_release_pending_seconds{cluster="prod-eu-1",namespace="cattle-fleet-system",release="fleet-agent-c-m-4x7kq2zt"}`,
			`unstick_scan_duration_seconds_count`,
			`unstick_scan_errors{cluster="local"} 0`,
			`unstick_caches_synced 1`,
			// prod-ap-1's next upgrade (its Plan: v1.32) removes the flowcontrol v1beta3 its
			// platform-apf release and bundle use: a FlowSchema and a PriorityLevelConfiguration.
			`unstick_api_removed_in_target_uses{cluster="prod-ap-1",kubernetes_version="v1.32",source="helm"} 2`,
			`unstick_api_removed_in_target_uses{cluster="prod-ap-1",kubernetes_version="v1.32",source="fleet"} 2`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if t.Failed() {
			t.Logf("/metrics:\n%s", grepLines(body, "unstick_"))
		}
	})

	t.Run("findings API has the SPEC shape", func(t *testing.T) {
		code, body := f.get(t, "/api/v1/findings")
		if code != 200 {
			t.Fatalf("/api/v1/findings = %d", code)
		}
		var r struct {
			Verdict       string `json:"verdict"`
			FailOn        string `json:"failOn"`
			Clock         struct{ Source string }
			SchemaVersion string `json:"schemaVersion"`
			Clusters      []struct{ Name string }
			Incidents     []struct {
				RootCause struct{ ID, Cluster string } `json:"rootCause"`
			}
			Findings []struct{ ID, Cluster, Severity string }
			Errors   []struct{ Cluster, Message string }
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		if r.SchemaVersion != "1" || len(r.Clusters) != 3 || len(r.Incidents) == 0 {
			t.Errorf("schemaVersion %q, %d clusters, %d incidents", r.SchemaVersion, len(r.Clusters), len(r.Incidents))
		}
		if len(r.Errors) != 0 {
			t.Errorf("errors: %+v", r.Errors)
		}
		// Error findings make the verdict at --fail-on error what scan's is; serve has no
		// --now here, so the clock is the live one.
		if r.Verdict != "findings" || r.FailOn != "error" || r.Clock.Source != "live" {
			t.Errorf("verdict %q at --fail-on %q, clock %q: want findings at error, live", r.Verdict, r.FailOn, r.Clock.Source)
		}
		var roots []string
		for _, i := range r.Incidents {
			roots = append(roots, i.RootCause.ID+" "+i.RootCause.Cluster)
		}
		sort.Strings(roots)
		t.Logf("incidents: %s", strings.Join(roots, "; "))
	})

	t.Run("dashboard lists the incidents", func(t *testing.T) {
		code, body := f.get(t, "/")
		if code != 200 {
			t.Fatalf("/ = %d", code)
		}
		for _, want := range []string{"Incidents (", "helm/release-pending", "prod-eu-1", "unstick explain ", `http-equiv="refresh"`} {
			if !strings.Contains(body, want) {
				t.Errorf("dashboard lacks %q", want)
			}
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "<script") {
			t.Errorf("dashboard refers to something outside itself")
		}
	})

	t.Run("a release marked pending-upgrade appears without a restart", func(t *testing.T) {
		kube := kubernetes.NewForConfigOrDie(f.envs["prod-eu-1"].Config)
		labels := map[string]string{"release": "demo-app", "namespace": "cattle-fleet-system", "cluster": "prod-eu-1"}
		createRelease(t, kube, "cattle-fleet-system", "demo-app", 1, "deployed", f.clock.now().Add(-time.Hour))
		// Give serve the chance to see it deployed: no pending series.
		<-f.srv.Evaluated()
		waitEvaluations(f.srv, 2)
		if _, ok := f.series(t, "unstick_helm_release_pending_seconds", labels); ok {
			t.Fatal("a deployed release has a pending series")
		}
		dashBefore := dashboardFor(t, f)
		markPending(t, kube, "cattle-fleet-system", "demo-app", 1, f.clock.now().Add(-time.Minute))
		took := f.waitSeries(t, "unstick_helm_release_pending_seconds", labels, 10*time.Second)
		t.Logf("detected in %s", took)
		v, _ := f.series(t, "unstick_helm_release_pending_seconds", labels)
		if v < 59 || v > 61 {
			t.Errorf("pending for %vs, want 60", v)
		}
		waitFinding(t, f, "helm/release-pending", "demo-app")
		if dash := dashboardFor(t, f); dash == dashBefore || !strings.Contains(dash, "cattle-fleet-system/demo-app") {
			t.Errorf("the dashboard does not show demo-app pending")
		}
	})

	t.Run("a heartbeat ageing past its threshold with no object change", func(t *testing.T) {
		// A cluster whose agent checked in recently: measured, but no finding yet.
		var fresh string
		var age float64
		for _, c := range []string{"prod-eu-1", "prod-us-1", "staging-1", "dev-1", "edge-arm-1"} {
			if v, ok := f.series(t, "unstick_fleet_agent_heartbeat_age_seconds", map[string]string{"cluster": c}); ok && !hasFinding(f, "fleet/agent-heartbeat-stale", c) {
				fresh, age = c, v
				break
			}
		}
		if fresh == "" {
			t.Fatal("no cluster with a fresh heartbeat in the example")
		}
		threshold := f.srv.o.Thresholds.Duration("fleet.heartbeatStaleAfter")
		t.Logf("%s last checked in %.0fs ago; stale after %s", fresh, age, threshold)
		// No object changes: only the clock moves, past the threshold.
		f.clock.set(f.clock.now().Add(threshold))
		waitEvaluations(f.srv, 2)
		if !hasFinding(f, "fleet/agent-heartbeat-stale", fresh) {
			t.Errorf("no fleet/agent-heartbeat-stale for %s after the clock moved %s", fresh, threshold)
		}
		v, _ := f.series(t, "unstick_fleet_agent_heartbeat_age_seconds", map[string]string{"cluster": fresh})
		if v < age+threshold.Seconds()-1 {
			t.Errorf("heartbeat age %v, want %v", v, age+threshold.Seconds())
		}
	})
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func waitEvaluations(s *Server, n int) {
	for range n {
		select {
		case <-s.Evaluated():
		case <-time.After(10 * time.Second):
			return
		}
	}
}

func hasFinding(f *fixture, id, cluster string) bool {
	rep := f.srv.Report()
	for _, x := range rep.Findings {
		if x.ID == id && about(x) == cluster {
			return true
		}
	}
	return false
}

func waitFinding(t *testing.T, f *fixture, id, text string) {
	t.Helper()
	for range 50 {
		for _, x := range f.srv.Report().Findings {
			if x.ID == id && strings.Contains(x.Summary, text) {
				return
			}
		}
		waitEvaluations(f.srv, 1)
	}
	t.Errorf("no %s finding mentioning %s", id, text)
}

func dashboardFor(t *testing.T, f *fixture) string {
	_, body := f.get(t, "/")
	return body
}

// helmRecord is Helm's storage encoding of a release record: base64(gzip(JSON)).
func helmRecord(t testing.TB, name, ns string, rev int, status string, at time.Time) []byte {
	rec := map[string]any{"name": name, "namespace": ns, "version": rev,
		"info":  map[string]any{"status": status, "first_deployed": at.Format(time.RFC3339), "last_deployed": at.Format(time.RFC3339), "description": "Upgrade " + status},
		"chart": map[string]any{"metadata": map[string]any{"name": name, "version": "1.0.0"}}}
	js, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(js)
	_ = zw.Close()
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

func releaseSecret(t testing.TB, ns, name string, rev int, status string, at time.Time) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, rev), Namespace: ns,
			Labels: map[string]string{"name": name, "owner": "helm", "status": status, "version": fmt.Sprint(rev), "modifiedAt": fmt.Sprint(at.Unix())}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": helmRecord(t, name, ns, rev, status, at)},
	}
}

func createRelease(t testing.TB, kube kubernetes.Interface, ns, name string, rev int, status string, at time.Time) {
	t.Helper()
	if _, err := kube.CoreV1().Secrets(ns).Create(context.Background(), releaseSecret(t, ns, name, rev, status, at), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// markPending does what an interrupted `helm upgrade` leaves behind: the release's storage
// Secret with status pending-upgrade in its labels and its record.
func markPending(t testing.TB, kube kubernetes.Interface, ns, name string, rev int, at time.Time) {
	t.Helper()
	want := releaseSecret(t, ns, name, rev, "pending-upgrade", at)
	cur, err := kube.CoreV1().Secrets(ns).Get(context.Background(), want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Labels, cur.Data = want.Labels, want.Data
	if _, err := kube.CoreV1().Secrets(ns).Update(context.Background(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkHelmPendingDetection measures how long after a release is marked pending-upgrade
// (already past helm.pendingAfter) its series appears on serve's registry, through the real
// API server's watch, the debounce and a full evaluation.
func BenchmarkHelmPendingDetection(b *testing.B) {
	// The defaults of `unstick serve`: only the change, not the timer, can detect it.
	f := startServe(b, 500*time.Millisecond, 30*time.Second, map[string]string{"helm.pendingAfter": "30s"}, "local", "prod-eu-1")
	f.waitReady(b)
	kube := kubernetes.NewForConfigOrDie(f.envs["prod-eu-1"].Config)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		name := fmt.Sprintf("bench-%d", i)
		b.StopTimer()
		createRelease(b, kube, "cattle-fleet-system", name, 1, "deployed", f.clock.now().Add(-time.Hour))
		waitEvaluations(f.srv, 1) // the debounced evaluation of the creation
		time.Sleep(100 * time.Millisecond)
		b.StartTimer()
		start := time.Now()
		markPending(b, kube, "cattle-fleet-system", name, 1, f.clock.now().Add(-time.Minute))
		f.waitSeries(b, "unstick_helm_release_pending_seconds", map[string]string{"cluster": "prod-eu-1", "release": name}, 30*time.Second)
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	med := lat[len(lat)/2]
	b.ReportMetric(med.Seconds(), "s-median-detection")
	b.ReportMetric(lat[len(lat)-1].Seconds(), "s-max-detection")
	if med > 2*time.Second {
		b.Errorf("median detection latency %s, want under 2s", med)
	}
}
