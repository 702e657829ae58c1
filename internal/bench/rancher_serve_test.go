package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// The failure serve is timed on: the example's prod-eu-1 Fleet agent release stuck in
// pending-upgrade, planted into the server holding dev-1 (healthy until then).
const (
	plantFrom    = exampleBundle + "/clusters/prod-eu-1/cattle-fleet-system/secrets.yaml"
	plantRelease = "fleet-agent-c-m-4x7kq2zt"
	plantShape   = "dev-1"
)

// serve runs `serve --rancher` at n clusters: time to the first evaluation, memory and
// watch connections per cluster, steady-state requests per second, and the time from a
// failure appearing in clusters to its metric.
func (r *rancherRun) serve(n int, kc string) {
	addr := freeAddr(r)
	r.quiet()
	cmd := exec.Command(r.cli, "serve", "--rancher", "--kubeconfig", kc, "--listen", addr, "--authn", "off", "--max-inflight", strconv.Itoa(r.limit))
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errOut
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		r.b.Fatal(err)
	}
	defer func() {
		r.b.Logf("N=%d serve: peak RSS %d MiB", n, procStatus(cmd.Process.Pid, "VmHWM:")>>20)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	if !waitFor(30*time.Minute, func() bool { return httpOK("http://" + addr + "/readyz") }) {
		r.b.Fatalf("N=%d serve: not ready in 30 minutes\n%s", n, tail(errOut.String()))
	}
	st := r.bed.StandIn.Stats()
	time.Sleep(5 * time.Second)
	rss := procStatus(cmd.Process.Pid, "VmRSS:")
	r.b.Logf("N=%d serve: ready in %.1f s, %d requests, max %d in flight, %d MiB to start; RSS %d MiB (%d KiB per cluster), %d watches open (%.1f per cluster); load %s",
		n, time.Since(t0).Seconds(), st.Requests-st.Watches, st.MaxInFlight, st.Bytes>>20, rss>>20, rss/int64(n)>>10, st.OpenWatches, float64(st.OpenWatches)/float64(n), loadAvg())
	r.bed.StandIn.ResetStats()
	time.Sleep(r.steady)
	st = r.bed.StandIn.Stats()
	r.b.Logf("N=%d serve steady state over %s: %.2f requests/s to Rancher (%d requests, %d of them watches), max %d in flight; load %s",
		n, r.steady, float64(st.Requests)/r.steady.Seconds(), st.Requests, st.Watches, st.MaxInFlight, loadAvg())
	r.detect(n, addr)
}

// detect plants the failure and times its metric: for the first cluster it affects and
// for all of them (every cluster ID routed to the server holding plantShape).
func (r *rancherRun) detect(n int, addr string) {
	k := slices.Index(r.bed.Shapes, plantShape)
	if k < 0 || k >= n {
		r.b.Logf("N=%d serve: no %s server, failure detection not timed", n, plantShape)
		return
	}
	var want []string
	for i := k; i < n; i += len(r.bed.Shapes) {
		want = append(want, r.bed.Names[i])
	}
	undo := r.plant(k)
	defer undo()
	t0 := time.Now()
	first := time.Duration(0)
	ok := waitFor(10*time.Minute, func() bool {
		seen := pendingClusters(addr)
		if first == 0 && seen[want[0]] {
			first = time.Since(t0)
		}
		for _, name := range want {
			if !seen[name] {
				return false
			}
		}
		return true
	})
	if !ok {
		r.b.Fatalf("N=%d serve: the planted pending release did not reach /metrics for all %d clusters in 10 minutes", n, len(want))
	}
	r.b.Logf("N=%d serve: failure to metric %.1f s for the first cluster, %.1f s for all %d clusters it appeared in; load %s", n, first.Seconds(), time.Since(t0).Seconds(), len(want), loadAvg())
}

// plant creates the pending release Secret on server k; the function returned deletes it.
func (r *rancherRun) plant(k int) func() {
	raw, err := os.ReadFile(plantFrom)
	if err != nil {
		r.b.Fatal(err)
	}
	var list corev1.SecretList
	if err := yaml.Unmarshal(raw, &list); err != nil {
		r.b.Fatal(err)
	}
	i := slices.IndexFunc(list.Items, func(s corev1.Secret) bool { return s.Labels["status"] == "pending-upgrade" })
	if i < 0 {
		r.b.Fatalf("%s: no pending-upgrade release", plantFrom)
	}
	s := list.Items[i]
	s.ObjectMeta = metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: s.Labels}
	kube, err := kubernetes.NewForConfig(r.bed.Servers[k].Config)
	if err != nil {
		r.b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := kube.CoreV1().Secrets(s.Namespace).Create(ctx, &s, metav1.CreateOptions{}); err != nil {
		r.b.Fatal(err)
	}
	return func() { _ = kube.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}) }
}

// pendingClusters are the clusters /metrics shows the planted release pending on.
func pendingClusters(addr string) map[string]bool {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "unstick_helm_release_pending_seconds{") || !strings.Contains(line, `release="`+plantRelease+`"`) {
			continue
		}
		if _, rest, ok := strings.Cut(line, `cluster="`); ok {
			name, _, _ := strings.Cut(rest, `"`)
			out[name] = true
		}
	}
	return out
}

func freeAddr(r *rancherRun) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.b.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func httpOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func waitFor(limit time.Duration, cond func() bool) bool {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false
}
