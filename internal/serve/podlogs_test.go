package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

const crdMissingScenario = "../../testdata/scenarios/crd/missing-downstream-agent-positive"

// countingLogProxy serves the scenario's container logs in front of a real API server
// (testenv.LogProxy: the test server has no kubelet) and counts the log reads by query.
func countingLogProxy(t *testing.T, env *testenv.Env, bundle string) (string, *atomic.Int64) {
	t.Helper()
	logs := filepath.Join(t.TempDir(), "logs")
	if _, err := testenv.CopyLogs(bundle, "", logs); err != nil {
		t.Fatal(err)
	}
	h, err := testenv.LogProxy(env.Config, logs)
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/log") {
			reads.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &reads
}

// A fleet-agent crash-looping on a missing CRD, replayed into a real API server with its log
// behind a log proxy: serve reads the agent's previous log as a live scan does, so its root
// cause is the missing CRD (critical) and not the crash loop, and the verdict at --fail-on
// error is "findings", judged at --now. An unchanged crash loop is not read again at each
// evaluation; a restart (a new previous log) is.
func TestServeReadsCrashLoopLogsOnce(t *testing.T) {
	env := testenv.Start(t, testenv.WithContextName("prod-eu-1"))
	if _, err := testenv.Load(t.Context(), env.Config, crdMissingScenario, testenv.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	url, reads := countingLogProxy(t, env, crdMissingScenario)
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Targets: []source.Target{{Name: "prod-eu-1", Server: url, Config: &rest.Config{Host: url}}},
		Registry: prometheus.NewRegistry(), Catalog: cat, Thresholds: check.NewThresholds(cat),
		Now: exampleNow, FailOn: finding.Error, Debounce: 50 * time.Millisecond, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitEvaluations(srv, 1)

	rep := srv.Report()
	if rep == nil {
		t.Fatal("no evaluation within 10s")
	}
	if rep.Verdict != report.VerdictFindings || rep.Clock.Source != judge.ClockNowFlag || !rep.EvaluatedAt.Equal(exampleNow) {
		t.Errorf("verdict %q, clock %s at %s: want findings, now-flag at %s", rep.Verdict, rep.Clock.Source, rep.EvaluatedAt, exampleNow)
	}
	if roots := rootIDs(rep); roots != "crd/missing" {
		t.Errorf("root causes %s, want crd/missing (the agent's log names the missing CRD)", roots)
	}
	if status, _ := rep.StatusOf("prod-eu-1"); status != "critical" {
		t.Errorf("prod-eu-1 is %s, want critical", status)
	}
	first := reads.Load()
	if first != 1 {
		t.Errorf("%d log reads at the first evaluation, want 1 (the crash-looping agent's previous log)", first)
	}
	waitEvaluations(srv, 3)
	if n := reads.Load(); n != first {
		t.Errorf("%d log reads after three more evaluations of an unchanged crash loop, want %d", n, first)
	}

	restart(t, env.Config, "cattle-fleet-system", "fleet-agent-7d9c5b6f4-q8w2n")
	deadline := time.Now().Add(10 * time.Second)
	for reads.Load() == first && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := reads.Load(); n != first+1 {
		t.Errorf("%d log reads after the agent restarted once more, want %d", n, first+1)
	}
}

// restart adds one to the restart count of a pod's first container, as the kubelet does when
// a crash-looping container dies again.
func restart(t *testing.T, cfg *rest.Config, ns, name string) {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cfg)
	p, err := kube.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.ContainerStatuses[0].RestartCount++
	if _, err := kube.CoreV1().Pods(ns).UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func rootIDs(rep *report.Report) string {
	var ids []string
	for _, inc := range rep.Incidents {
		ids = append(ids, inc.RootCause.ID)
	}
	return strings.Join(ids, ",")
}
