package serve

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/unstick-dev/unstick/internal/fleetgen"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// BenchmarkServeRSS5000 measures the memory of a real `unstick serve` process watching a
// management cluster of 5,000 generated Fleet clusters (internal/fleetgen: per cluster a Fleet
// Cluster, a ClusterRegistration and 10 BundleDeployments) replayed into a real API server:
// resident set size once the caches synced and the first evaluation is done, and its peak
// (VmHWM) after a few more evaluations. Run it with
//
//	go test ./internal/serve -run XXX -bench ServeRSS5000 -benchtime 1x -timeout 60m
func BenchmarkServeRSS5000(b *testing.B) {
	const n = 5000
	dir := b.TempDir()
	if err := fleetgen.Write(dir, n, 0.02, 1); err != nil {
		b.Fatal(err)
	}
	env := testenv.Start(b, testenv.WithContextName("local"))
	start := time.Now()
	res, err := testenv.Load(b.Context(), env.Config, dir, testenv.LoadOptions{Cluster: "local", Workers: 32})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("replayed %d objects in %s", res.Objects, time.Since(start).Round(time.Second))

	bin := filepath.Join(b.TempDir(), "unstick")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/unstick").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(b)
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		cmd := exec.CommandContext(ctx, bin, "serve", "--kubeconfig", env.Kubeconfig, "--listen", addr, "--interval", "5s")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Since(t0) > 10*time.Minute {
				b.Fatal("serve not ready after 10 minutes")
			}
			time.Sleep(100 * time.Millisecond)
		}
		ready := time.Since(t0)
		rss := procKB(b, cmd.Process.Pid, "VmRSS")
		time.Sleep(12 * time.Second) // two timer evaluations more
		rss2 := procKB(b, cmd.Process.Pid, "VmRSS")
		hwm := procKB(b, cmd.Process.Pid, "VmHWM")
		scan := scanSeconds(b, addr)
		cancel()
		_ = cmd.Wait()
		b.ReportMetric(ready.Seconds(), "s-to-ready")
		b.ReportMetric(float64(rss)/1024, "MiB-RSS-ready")
		b.ReportMetric(float64(rss2)/1024, "MiB-RSS-steady")
		b.ReportMetric(float64(hwm)/1024, "MiB-RSS-peak")
		b.ReportMetric(scan, "s-per-evaluation")
		b.Logf("%d clusters: ready in %s, RSS %d MiB at ready, %d MiB steady, peak %d MiB; %.2fs per evaluation",
			n, ready.Round(time.Millisecond), rss/1024, rss2/1024, hwm/1024, scan)
		if hwm/1024 > 300 {
			b.Errorf("peak RSS %d MiB, want under 300 MiB", hwm/1024)
		}
	}
}

func freeAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// procKB reads a memory line (VmRSS, VmHWM) of /proc/PID/status, in KiB.
func procKB(tb testing.TB, pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb
		}
	}
	tb.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// scanSeconds is the mean evaluation time serve reports on /metrics.
func scanSeconds(tb testing.TB, addr string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var sum, count float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "unstick_scan_duration_seconds_sum "); ok {
			sum, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "unstick_scan_duration_seconds_count "); ok {
			count, _ = strconv.ParseFloat(v, 64)
		}
	}
	if count == 0 {
		return 0
	}
	return sum / count
}
