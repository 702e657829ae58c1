package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// exampleBundle holds the downstream clusters the Rancher bed replays.
const exampleBundle = "../../examples/fleet-upgrade-stuck"

// bedShapes are the example's downstream clusters the bed's servers hold, in order: two
// stuck, two healthy, so that a run judges both kinds.
var bedShapes = []string{"prod-eu-1", "prod-us-1", "staging-1", "dev-1", "edge-arm-1", "prod-ap-1"}

// BenchmarkRancherFleet runs the real CLI through the Rancher stand-in (testenv.RancherBed)
// at each fleet size: `scan --rancher` against the floor (hack/bench/rancherfloor replaying
// the scan's own requests under the same limit), alternating RUNS times, then `collect
// --rancher` once and `serve --rancher` once (sizes up to UNSTICK_BENCH_SERVE_MAX). Each
// figure is logged with the load average; the stand-in's counts (requests, most in flight,
// bytes, open watches) are read for each run.
//
//	UNSTICK_BENCH_CLI=/tmp/unstick UNSTICK_BENCH_FLOOR=/tmp/rancherfloor \
//	  go test ./internal/bench -run '^$' -bench RancherFleet -benchtime 1x -timeout 120m -v
//
// UNSTICK_BENCH_VERBS (default scan,collect,serve), UNSTICK_BENCH_SIZES (default 200,1000,2000), UNSTICK_BENCH_SERVERS (API servers, default 4),
// UNSTICK_BENCH_MAX_INFLIGHT (default the CLI's), RUNS (default 3), UNSTICK_BENCH_SERVE_MAX
// (default 1000), UNSTICK_BENCH_STEADY (seconds serve's steady state is counted, default 60).
func BenchmarkRancherFleet(b *testing.B) {
	r := newRancherRun(b)
	for b.Loop() {
		for _, n := range r.sizes {
			r.size(n)
		}
	}
	b.ReportMetric(0, "ns/op")
}

type rancherRun struct {
	b       *testing.B
	bed     *testenv.RancherBed
	dir     string
	cli     string
	floor   string
	caFile  string
	sizes   []int
	limit   int
	runs    int
	serveTo int
	steady  time.Duration
	// verbs are what is measured at each size: scan (with the floor), collect, serve.
	verbs map[string]bool
}

func newRancherRun(b *testing.B) *rancherRun {
	r := &rancherRun{b: b, dir: b.TempDir(), cli: os.Getenv("UNSTICK_BENCH_CLI"), floor: os.Getenv("UNSTICK_BENCH_FLOOR")}
	if r.cli == "" || r.floor == "" {
		b.Skip("UNSTICK_BENCH_CLI and UNSTICK_BENCH_FLOOR name the unstick and rancherfloor binaries (hack/bench/rancher.sh builds them)")
	}
	for _, s := range strings.Split(envOr("UNSTICK_BENCH_SIZES", "200,1000,2000"), ",") {
		r.sizes = append(r.sizes, envNumber(b, "UNSTICK_BENCH_SIZES", s))
	}
	servers := envNumber(b, "UNSTICK_BENCH_SERVERS", envOr("UNSTICK_BENCH_SERVERS", "4"))
	r.limit = envNumber(b, "UNSTICK_BENCH_MAX_INFLIGHT", envOr("UNSTICK_BENCH_MAX_INFLIGHT", strconv.Itoa(source.DefaultMaxInFlight)))
	r.runs = envNumber(b, "RUNS", envOr("RUNS", "3"))
	r.serveTo = envNumber(b, "UNSTICK_BENCH_SERVE_MAX", envOr("UNSTICK_BENCH_SERVE_MAX", "1000"))
	r.steady = time.Duration(envNumber(b, "UNSTICK_BENCH_STEADY", envOr("UNSTICK_BENCH_STEADY", "60"))) * time.Second
	r.verbs = map[string]bool{}
	for _, v := range strings.Split(envOr("UNSTICK_BENCH_VERBS", "scan,collect,serve"), ",") {
		r.verbs[strings.TrimSpace(v)] = true
	}
	t0 := time.Now()
	bed, err := testenv.StartRancherBed(b.Context(), r.dir, exampleBundle, bedShapes[:min(servers, len(bedShapes))], slices.Max(r.sizes))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = bed.Stop() })
	r.bed = bed
	b.Logf("bed: %d clusters over %d API servers (%s), started in %s", len(bed.IDs), len(bed.Servers), strings.Join(bed.Shapes, ", "), time.Since(t0).Round(time.Second))
	r.caFile = filepath.Join(r.dir, "rancher-ca.pem")
	if err := os.WriteFile(r.caFile, bed.StandIn.CAData(), 0o600); err != nil {
		b.Fatal(err)
	}
	return r
}

// size measures scan, the floor, collect and serve at n clusters.
func (r *rancherRun) size(n int) {
	kc := r.kubeconfig(n)
	if r.verbs["scan"] {
		r.scanBesideFloor(n, kc)
	}
	if r.verbs["collect"] {
		r.runCLI(n, "collect", kc, "collect", "--rancher", "-q", "--to", filepath.Join(r.dir, fmt.Sprintf("collect-%d-%d.tar.gz", n, time.Now().UnixNano())))
	}
	if r.verbs["serve"] && n <= r.serveTo {
		r.serve(n, kc)
	}
}

// scanBesideFloor runs scan and the floor RUNS times each, alternating which goes first.
func (r *rancherRun) scanBesideFloor(n int, kc string) {
	paths := r.recordScan(n, kc)
	var scans, floors []float64
	for i := range r.runs {
		for _, floorFirst := range []bool{i%2 == 0, i%2 != 0} {
			if floorFirst {
				floors = append(floors, r.runFloor(n, paths))
			} else {
				scans = append(scans, r.runCLI(n, "scan", kc, "scan", "--rancher", "-o", "json", "-q", "--offline-registry"))
			}
		}
	}
	r.b.Logf("N=%d scan %.2f s, floor %.2f s (medians of %d), ratio %.2f (target <= 1.3); load %s", n, medianF(scans), medianF(floors), r.runs, medianF(scans)/medianF(floors), loadAvg())
}

// kubeconfig writes a kubeconfig whose token may see the first n clusters of the bed.
func (r *rancherRun) kubeconfig(n int) string {
	r.bed.StandIn.Allow(sizeToken(n), r.bed.IDs[:n]...)
	p := filepath.Join(r.dir, fmt.Sprintf("kubeconfig-%d", n))
	if err := r.bed.KubeconfigWithToken(p, sizeToken(n)); err != nil {
		r.b.Fatal(err)
	}
	return p
}

// recordScan runs one scan and writes the requests it made, for the floor to replay.
func (r *rancherRun) recordScan(n int, kc string) string {
	r.bed.StandIn.RecordRequests()
	r.runCLI(n, "scan (recorded)", kc, "scan", "--rancher", "-o", "json", "-q", "--offline-registry")
	p := filepath.Join(r.dir, fmt.Sprintf("requests-%d.txt", n))
	if keep := os.Getenv("UNSTICK_BENCH_KEEP"); keep != "" {
		p = filepath.Join(keep, filepath.Base(p))
	}
	if err := os.WriteFile(p, []byte(strings.Join(r.bed.StandIn.Recorded(), "\n")+"\n"), 0o600); err != nil {
		r.b.Fatal(err)
	}
	return p
}

// runCLI runs unstick with args and logs its wall time, peak RSS and what the stand-in saw.
func (r *rancherRun) runCLI(n int, what, kc string, args ...string) float64 {
	args = append(args, "--kubeconfig", kc, "--max-inflight", strconv.Itoa(r.limit), "--timeout", "5m")
	if extra := os.Getenv("UNSTICK_BENCH_CLI_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...) // e.g. --concurrency 64, to compare settings
	}
	if dir := os.Getenv("UNSTICK_BENCH_PROFILE"); dir != "" {
		// A CPU profile of each run of the CLI, to say where its time goes beside the floor's.
		name := fmt.Sprintf("%s-%d-%d.pprof", strings.Fields(what)[0], n, time.Now().UnixNano())
		args = append(args, "--profile", "cpu", "--profile-output", filepath.Join(dir, name))
	}
	r.quiet()
	cmd := exec.Command(r.cli, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	t0 := time.Now()
	peak, err := runPeak(cmd)
	wall := time.Since(t0).Seconds()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) {
		r.b.Fatalf("N=%d %s: %v\n%s", n, what, err, tail(errOut.String()))
	}
	st := r.bed.StandIn.Stats()
	r.b.Logf("N=%d %s: wall %.2f s, CPU %.1f s, peak RSS %d MiB, %d requests, max %d in flight, %.1f on average, %d MiB; load %s",
		n, what, wall, cpuSeconds(cmd), peak>>20, st.Requests, st.MaxInFlight, avgInFlight(st), st.Bytes>>20, loadAvg())
	return wall
}

// runFloor runs the floor program on the recorded requests.
func (r *rancherRun) runFloor(n int, paths string) float64 {
	r.quiet()
	cmd := exec.Command(r.floor, "-server", r.bed.StandIn.URL(), "-ca", r.caFile, "-requests", paths, "-max-inflight", strconv.Itoa(r.limit))
	cmd.Env = append(os.Environ(), "RANCHER_TOKEN="+sizeToken(n))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	t0 := time.Now()
	peak, err := runPeak(cmd)
	if err != nil {
		r.b.Fatalf("N=%d floor: %v\n%s", n, err, tail(errOut.String()))
	}
	wall := time.Since(t0).Seconds()
	st := r.bed.StandIn.Stats()
	r.b.Logf("N=%d floor: wall %.2f s, CPU %.1f s, peak RSS %d MiB, %d requests, max %d in flight, %.1f on average, %d MiB; load %s",
		n, wall, cpuSeconds(cmd), peak>>20, st.Requests, st.MaxInFlight, avgInFlight(st), st.Bytes>>20, loadAvg())
	return wall
}

// quiet waits (up to 10 s) for the answers of the run before to end, then forgets the
// counts: a request the client gave up on is still being answered for a moment.
func (r *rancherRun) quiet() {
	for end := time.Now().Add(10 * time.Second); r.bed.StandIn.InFlight() > 0 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	r.bed.StandIn.ResetStats()
}

// cpuSeconds is the user and system CPU time a finished command used.
func cpuSeconds(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
}

// avgInFlight is how many requests were in flight on average while the run asked any.
func avgInFlight(st testenv.StandInStats) float64 {
	if st.Span <= 0 {
		return 0
	}
	return st.Busy.Seconds() / st.Span.Seconds()
}

// sizeToken is the token that may see the first n clusters of the bed.
func sizeToken(n int) string { return fmt.Sprintf("token-size%d:fleet-scale-bed", n) }

// runPeak runs cmd and returns the peak of its resident set (VmHWM), read from /proc while
// it runs. Not the exit's rusage: a child started with vfork (as Go starts one) inherits, at
// exec, the high-water mark of its parent's memory, here the stand-in's.
func runPeak(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return peak, err
		case <-tick.C:
			peak = max(peak, procStatus(cmd.Process.Pid, "VmHWM:"))
		}
	}
}

// procStatus is a memory figure of /proc/<pid>/status (VmRSS:, VmHWM:) in bytes.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func medianF(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envNumber(b *testing.B, name, v string) int {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
