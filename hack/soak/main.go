// Command soak runs `unstick serve` against a real kube-apiserver holding the example fleet's
// management cluster while objects change at a steady rate, and checks that serve neither
// grows (resident memory, goroutines) nor drifts (the findings at the end are the findings at
// the start). hack/soak.sh is the way to call it:
//
//	hack/soak.sh                       30 minutes, 50 updates per second, 5 minutes warm-up
//	hack/soak.sh -duration 5m -warmup 1m
//
// The updates are annotation patches on the Fleet Clusters, BundleDeployments and
// ClusterRegistrations: every one reaches serve's informers and wakes an evaluation, none
// changes what the checks judge. It exits 1 when resident memory grew more than -max-growth
// after warm-up, the goroutine count grew, or the findings changed.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/unstick-dev/unstick/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

type sample struct {
	at         time.Duration
	rssKiB     int64
	goroutines int
	updates    int64
}

func run() error {
	duration := flag.Duration("duration", 30*time.Minute, "how long to change objects")
	warmup := flag.Duration("warmup", 5*time.Minute, "growth is measured from the end of this period")
	rate := flag.Int("rate", 50, "object updates per second")
	every := flag.Duration("sample", 10*time.Second, "how often to read serve's memory and goroutines")
	bundle := flag.String("bundle", "examples/fleet-upgrade-stuck", "offline bundle whose management cluster is replayed")
	cluster := flag.String("cluster", "local", "the bundle's management cluster (clusters/NAME/)")
	maxGrowth := flag.Float64("max-growth", 0.10, "largest resident-memory growth after warm-up, as a fraction")
	flag.Parse()
	if *warmup >= *duration {
		return fmt.Errorf("-warmup %s must be shorter than -duration %s", *warmup, *duration)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	dir, err := os.MkdirTemp("", "unstick-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	fmt.Printf("starting kube-apiserver + etcd in %s\n", dir)
	env, err := testenv.StartProcess(ctx, filepath.Join(dir, "env"), testenv.WithContextName(*cluster))
	if err != nil {
		return err
	}
	defer env.Stop()
	res, err := env.Load(ctx, *bundle, testenv.LoadOptions{Cluster: *cluster, Workers: 16})
	if err != nil {
		return fmt.Errorf("replaying %s: %w", *bundle, err)
	}
	fmt.Printf("replayed %d objects of %s (cluster %s)\n", res.Objects, *bundle, *cluster)

	bin := filepath.Join(dir, "unstick")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/unstick").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	serveLog, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "serve", "--kubeconfig", env.Kubeconfig, "--listen", addr)
	cmd.Stdout, cmd.Stderr = serveLog, serveLog
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	base := "http://" + addr
	if err := waitReady(ctx, base, 2*time.Minute); err != nil {
		return err
	}
	before, err := findings(base)
	if err != nil {
		return err
	}
	fmt.Printf("serve ready on %s: %d findings\n", addr, len(before))

	targets, err := updateTargets(ctx, env)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return fmt.Errorf("the bundle's cluster %s has no Fleet objects to update", *cluster)
	}
	cfg := *env.Config
	cfg.QPS, cfg.Burst = float32(*rate*2), *rate*2
	dyn, err := dynamic.NewForConfig(&cfg)
	if err != nil {
		return err
	}

	// The updater: rate patches per second, round-robin over the targets.
	var updates, failures atomic.Int64
	uctx, ustop := context.WithCancel(ctx)
	defer ustop()
	var wg sync.WaitGroup
	jobs := make(chan target)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range jobs {
				n := updates.Add(1)
				patch := fmt.Sprintf(`{"metadata":{"annotations":{"unstick.dev/soak":"%d"}}}`, n)
				_, err := dyn.Resource(t.gvr).Namespace(t.ns).Patch(uctx, t.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
				if err != nil && uctx.Err() == nil {
					failures.Add(1)
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		// Paced by the clock, not by ticks: a tick missed on a busy machine is made up at
		// the next one, so the rate holds on average.
		begin := time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for sent := 0; ; {
			select {
			case <-uctx.Done():
				return
			case <-tick.C:
			}
			for want := int(time.Since(begin).Seconds() * float64(*rate)); sent < want; sent++ {
				select {
				case jobs <- targets[sent%len(targets)]:
				case <-uctx.Done():
					return
				}
			}
		}
	}()

	start := time.Now()
	var samples []sample
	fmt.Printf("%8s %10s %10s %10s\n", "elapsed", "RSS MiB", "goroutines", "updates")
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for time.Since(start) < *duration {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		rss, err := procKiB(cmd.Process.Pid, "VmRSS")
		if err != nil {
			return err
		}
		g, err := goroutines(base)
		if err != nil {
			return err
		}
		s := sample{at: time.Since(start).Round(time.Second), rssKiB: rss, goroutines: g, updates: updates.Load()}
		samples = append(samples, s)
		fmt.Printf("%8s %10.1f %10d %10d\n", s.at, float64(s.rssKiB)/1024, s.goroutines, s.updates)
	}
	ustop()
	wg.Wait()

	// Let the last changes settle, then compare.
	time.Sleep(5 * time.Second)
	after, err := findings(base)
	if err != nil {
		return err
	}
	return summarise(samples, *warmup, *maxGrowth, updates.Load(), failures.Load(), time.Since(start), before, after)
}

func summarise(samples []sample, warmup time.Duration, maxGrowth float64, updates, failures int64, took time.Duration, before, after []string) error {
	var warm []sample
	for _, s := range samples {
		if s.at >= warmup {
			warm = append(warm, s)
		}
	}
	if len(warm) < 2 {
		return fmt.Errorf("too few samples after the warm-up to judge growth")
	}
	first, last := warm[0], warm[len(warm)-1]
	peak := first
	for _, s := range warm {
		if s.rssKiB > peak.rssKiB {
			peak = s
		}
	}
	// The goroutine counts are compared as the median of the first and of the last quarter
	// of the samples: a watch being re-established or an evaluation running at the instant
	// of a sample adds a few for a moment; a leak adds them for good.
	q := max(1, len(warm)/4)
	gStart, gEnd := medianGoroutines(warm[:q]), medianGoroutines(warm[len(warm)-q:])
	growth := float64(last.rssKiB-first.rssKiB) / float64(first.rssKiB)
	fmt.Printf("\n%d updates in %s (%.1f/s), %d failed\n", updates, took.Round(time.Second), float64(updates)/took.Seconds(), failures)
	fmt.Printf("RSS after warm-up %.1f MiB, at the end %.1f MiB (growth %+.1f %%), peak after warm-up %.1f MiB\n",
		float64(first.rssKiB)/1024, float64(last.rssKiB)/1024, growth*100, float64(peak.rssKiB)/1024)
	fmt.Printf("goroutines (median of first/last quarter after warm-up): %d → %d\n", gStart, gEnd)
	var problems []string
	if growth > maxGrowth {
		problems = append(problems, fmt.Sprintf("resident memory grew %.1f %% after warm-up (limit %.0f %%)", growth*100, maxGrowth*100))
	}
	if gEnd > gStart {
		problems = append(problems, fmt.Sprintf("goroutines grew from %d to %d", gStart, gEnd))
	}
	if !slices.Equal(before, after) {
		problems = append(problems, fmt.Sprintf("findings changed: %d before, %d after", len(before), len(after)))
	} else {
		fmt.Printf("findings at the end are the %d findings of the start\n", len(after))
	}
	if failures > updates/100 {
		problems = append(problems, fmt.Sprintf("%d of %d updates failed", failures, updates))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	fmt.Println("soak passed")
	return nil
}

func medianGoroutines(s []sample) int {
	g := make([]int, len(s))
	for i, x := range s {
		g[i] = x.goroutines
	}
	slices.Sort(g)
	return g[len(g)/2]
}

type target struct {
	gvr      schema.GroupVersionResource
	ns, name string
}

// updateTargets are the Fleet objects of the replayed management cluster.
func updateTargets(ctx context.Context, env *testenv.Env) ([]target, error) {
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, err
	}
	var out []target
	for _, res := range []string{"clusters", "bundledeployments", "clusterregistrations"} {
		gvr := schema.GroupVersionResource{Group: "fleet.cattle.io", Version: "v1alpha1", Resource: res}
		l, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", res, err)
		}
		for _, it := range l.Items {
			out = append(out, target{gvr: gvr, ns: it.GetNamespace(), name: it.GetName()})
		}
	}
	return out, nil
}

func waitReady(ctx context.Context, base string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("serve not ready after %s", limit)
}

// findings are the IDs, clusters and objects of serve's current findings, sorted.
func findings(base string) ([]string, error) {
	resp, err := http.Get(base + "/api/v1/findings")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rep struct {
		Findings []struct {
			ID      string `json:"id"`
			Cluster string `json:"cluster"`
			Object  struct {
				Kind, Namespace, Name string
			} `json:"object"`
		} `json:"findings"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return nil, fmt.Errorf("/api/v1/findings: %w", err)
	}
	var out []string
	for _, f := range rep.Findings {
		out = append(out, fmt.Sprintf("%s %s %s/%s/%s", f.ID, f.Cluster, f.Object.Kind, f.Object.Namespace, f.Object.Name))
	}
	slices.Sort(out)
	return out, nil
}

func goroutines(base string) (int, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return 0, fmt.Errorf("/metrics has no go_goroutines")
}

func procKiB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, ln := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(ln, field+":"); ok {
			return strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
