// Package bench holds fleet-scale benchmarks that need a real API server. It has no tests:
// `go test ./...` only compiles it; the benchmarks run with -bench (see hack/bench/live.sh).
package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/fleetgen"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// The moment fleetgen's bundles were "collected": the live scan is judged at it, as the
// offline scan of the same bundle is.
var collectedAt = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

// Live-source defaults the floor copies (internal/source/live.go).
const (
	pageSize    = 500
	concurrency = 8
	qps, burst  = 50, 100
	scanTimeout = 20 * time.Minute
)

// BenchmarkLiveScan times a live scan of a management cluster of N generated Fleet clusters
// (internal/fleetgen, default N = 5,000) replayed into a real kube-apiserver — the live
// loader (source.Live) plus the checks and grouping (check.Evaluate) — against the floor: a
// program making only the same paginated LIST calls (same resource table, page size,
// parallelism and client rate limit) and keeping nothing. The two alternate within each
// iteration; the medians and their ratio are reported.
//
//	go test ./internal/bench -run '^$' -bench LiveScan -benchtime 5x -timeout 60m
//
// UNSTICK_BENCH_CLUSTERS sets N; UNSTICK_BENCH_KUBECONFIG points at a server already loaded
// (skipping the ~5 minute replay); UNSTICK_BENCH_ONLY=scan or =floor runs one side (for
// -cpuprofile); UNSTICK_BENCH_CLI names an unstick binary whose `scan -o json` of the same
// server is timed too (the public CLI path: flags, kubeconfig, report rendering).
func BenchmarkLiveScan(b *testing.B) {
	n := 5000
	if v := os.Getenv("UNSTICK_BENCH_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("UNSTICK_BENCH_CLUSTERS=%q: %v", v, err)
		}
	}
	only := os.Getenv("UNSTICK_BENCH_ONLY")
	var cfg *rest.Config
	kubeconfig := os.Getenv("UNSTICK_BENCH_KUBECONFIG")
	if kc := kubeconfig; kc != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			b.Fatal(err)
		}
		cfg = c
	} else {
		dir := b.TempDir()
		if err := fleetgen.Write(dir, n, 0.02, 1); err != nil {
			b.Fatal(err)
		}
		env := testenv.Start(b, testenv.WithContextName("local"))
		start := time.Now()
		res, err := testenv.Load(b.Context(), env.Config, dir, testenv.LoadOptions{Workers: 32})
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("replayed %d objects (%d clusters) in %s", res.Objects, n, time.Since(start).Round(time.Second))
		kubeconfig = env.Kubeconfig
		cfg = rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 0, 0 // as a kubeconfig gives it; the live source sets its own
	}
	cat, err := catalog.Load()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cli := os.Getenv("UNSTICK_BENCH_CLI")
	var floors, scans, clis []time.Duration
	i := 0
	for b.Loop() {
		floorFirst := i%2 == 0
		i++
		for _, side := range []bool{floorFirst, !floorFirst} {
			if side && only != "scan" {
				t0 := time.Now()
				objs, err := listFloor(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				floors = append(floors, time.Since(t0))
				b.Logf("floor: %d objects listed in %s (load %s)", objs, floors[len(floors)-1].Round(time.Millisecond), loadAvg())
			}
			if !side && only != "floor" {
				t0 := time.Now()
				findings := liveScan(b, ctx, cfg, cat)
				scans = append(scans, time.Since(t0))
				b.Logf("scan: %d findings in %s (load %s)", findings, scans[len(scans)-1].Round(time.Millisecond), loadAvg())
			}
		}
		if cli != "" && only == "" {
			t0 := time.Now()
			cmd := exec.Command(cli, "scan", "--kubeconfig", kubeconfig, "--now", collectedAt.Format(time.RFC3339), "-o", "json", "-q", "--offline-registry",
				"--timeout", scanTimeout.String())
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var ee *exec.ExitError
			if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
				b.Fatalf("%s: %v\n%s", cli, err, out.Bytes())
			}
			clis = append(clis, time.Since(t0))
			b.Logf("cli: %d bytes of report in %s (load %s)", out.Len(), clis[len(clis)-1].Round(time.Millisecond), loadAvg())
		}
	}
	b.ReportMetric(0, "ns/op")
	if len(floors) > 0 {
		b.ReportMetric(median(floors).Seconds(), "s-floor")
	}
	if len(scans) > 0 {
		b.ReportMetric(median(scans).Seconds(), "s-scan")
	}
	if len(clis) > 0 {
		b.ReportMetric(median(clis).Seconds(), "s-cli")
	}
	if len(floors) > 0 && len(scans) > 0 {
		b.ReportMetric(median(scans).Seconds()/median(floors).Seconds(), "ratio")
	}
}

func liveScan(b *testing.B, ctx context.Context, cfg *rest.Config, cat *catalog.Catalog) int {
	// A 5,000-cluster management cluster takes longer than the default one-minute budget
	// per cluster on a loaded machine: the benchmark measures, it does not time out.
	l := &source.Live{Targets: []source.Target{{Name: "local", Server: cfg.Host, Config: cfg}}, Timeout: scanTimeout}
	snap, err := l.Load(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cctx := &check.Context{Snap: snap, Now: collectedAt, Thresholds: check.NewThresholds(cat), Catalog: cat}
	_, fs, errs := check.Evaluate(cctx, check.Filter{})
	if len(snap.Errors) > 0 || len(errs) > 0 {
		b.Fatalf("scan errors: %v %v", snap.Errors, errs)
	}
	return len(fs)
}

// loadAvg is the 1-, 5- and 15-minute load average, to read each figure against.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// listFloor makes the LIST calls the live source makes for one cluster — discovery, the
// namespaces, then every served kind of source.Resources() page by page, watched-namespace
// kinds per namespace or across namespaces by the same rule — with the same client settings
// and parallelism, decoding only what client-go does and keeping nothing. It returns how many
// objects the lists returned.
func listFloor(ctx context.Context, base *rest.Config) (int, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = qps, burst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	_, lists, err := kube.Discovery().ServerGroupsAndResources()
	if err != nil && len(lists) == 0 {
		return 0, err
	}
	served := map[schema.GroupVersionResource]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, ar := range l.APIResources {
			served[gv.WithResource(ar.Name)] = true
		}
	}
	nsl, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var watched []string
	for _, ns := range nsl.Items {
		if source.WatchedNamespace(ns.Name) {
			watched = append(watched, ns.Name)
		}
	}
	var mu sync.Mutex
	total := len(nsl.Items)
	var firstErr error
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	list := func(res source.Resource, ns string, limit int64) {
		opts := metav1.ListOptions{Limit: limit, LabelSelector: res.Selector}
		for {
			var cont string
			var n int
			if res.MetaOnly {
				l, err := meta.Resource(res.GVR).Namespace(ns).List(ctx, opts)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, fmt.Errorf("%s in %q: %w", res.GVR.Resource, ns, err))
					mu.Unlock()
					return
				}
				cont, n = l.Continue, len(l.Items)
			} else {
				l, err := dyn.Resource(res.GVR).Namespace(ns).List(ctx, opts)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, fmt.Errorf("%s in %q: %w", res.GVR.Resource, ns, err))
					mu.Unlock()
					return
				}
				cont, n = l.GetContinue(), len(l.Items)
			}
			mu.Lock()
			total += n
			mu.Unlock()
			if cont == "" || limit == 1 {
				return
			}
			opts.Continue = cont
		}
	}
	spawn := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			f()
		}()
	}
	for _, res := range source.Resources() {
		if !served[res.GVR] {
			continue
		}
		switch {
		case res.ClusterScoped || res.AllNamespaces:
			spawn(func() { list(res, "", pageSize) })
		case source.ListsAcrossNamespaces(len(watched)):
			spawn(func() {
				list(res, "", 1) // the live source's check that it may list across namespaces
				list(res, "", pageSize)
			})
		default:
			for _, ns := range watched {
				spawn(func() { list(res, ns, pageSize) })
			}
		}
	}
	wg.Wait()
	return total, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
