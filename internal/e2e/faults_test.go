package e2e

// Fault injection for live mode (issue 8, item 3): scan, serve and fix --apply against real
// API servers behind testenv.FaultProxy, which fails chosen requests the way a busy, restarting
// or unreachable API server does. The proxy is the one stand-in; every request it lets through
// is answered by the real server.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/serve"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

// behindFaults puts a fault proxy in front of every cluster of a kubeconfig written by
// exampleKubeconfig or replay (each cluster's server is its log proxy) and writes a kubeconfig that
// reaches each cluster through its fault proxy. The proxies start off.
func behindFaults(t *testing.T, kubeconfig string) (string, map[string]*testenv.FaultProxy) {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	proxies := map[string]*testenv.FaultProxy{}
	names := make([]string, 0, len(kc.Clusters))
	for name := range kc.Clusters {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		p := testenv.StartFaultProxy(t, &rest.Config{Host: kc.Clusters[name].Server}, int64(i+1))
		proxies[name] = p
		kc.Clusters[name].Server = p.URL
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-faults")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path, proxies
}

func setFaults(proxies map[string]*testenv.FaultProxy, on bool, rules ...testenv.Rule) {
	for _, p := range proxies {
		p.SetRules(rules...)
		p.ResetCounts()
		if on {
			p.On()
		} else {
			p.Off()
		}
	}
}

func summaries(proxies map[string]*testenv.FaultProxy) (string, int) {
	var parts []string
	n := 0
	for name, p := range proxies {
		parts = append(parts, name+": "+p.Summary())
		n += p.Injected()
	}
	sort.Strings(parts)
	return strings.Join(parts, "; "), n
}

func errorKeys(r scanResult) []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, e.Cluster+": "+e.Message)
	}
	sort.Strings(out)
	return out
}

// faultScan runs `unstick scan -o json` with a timeout and checks what holds whatever the
// faults: it returns within the timeout (plus the time to judge and print), with exit code 3
// and a JSON report, or — only when no cluster could be read — exit 1 and the reason.
func faultScan(t *testing.T, kubeconfig string, timeout time.Duration) (scanResult, int) {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	out, errOut, code := runCtx(ctx, t, "", "scan", "--kubeconfig", kubeconfig, "--all-contexts", "--now", now, "-o", "json", "-q",
		"--offline-registry", "--timeout", timeout.String())
	took := time.Since(start)
	t.Logf("scan took %s, exit %d", took.Round(time.Millisecond), code)
	if took > timeout+15*time.Second {
		t.Errorf("scan with --timeout %s took %s", timeout, took)
	}
	switch code {
	case 3:
		return parse(t, out, errOut), code
	case 0, 4:
		// Nothing found at or above --fail-on. Under faults that can be because the reads
		// that would have shown it failed: then the verdict must be incomplete (exit 4, the
		// failed reads under errors), never an all-clear.
		r := parse(t, out, errOut)
		if code == 0 && len(r.Errors) > 0 {
			t.Errorf("exit 0 (an all-clear) with %d read errors: want exit 4", len(r.Errors))
		}
		if code == 4 && (len(r.Errors) == 0 || !strings.Contains(errOut, "not an all-clear")) {
			t.Errorf("exit 4 with %d errors and stderr %q: want the failed reads named", len(r.Errors), errOut)
		}
		return r, code
	case 1:
		if strings.TrimSpace(errOut) == "" {
			t.Errorf("exit 1 without a reason on stderr")
		}
		return scanResult{}, code
	default:
		t.Fatalf("scan exit %d (want 3, 4 or 0 with a report, or 1 when no cluster could be read)\nstdout: %.2000s\nstderr: %.2000s", code, out, errOut)
	}
	return scanResult{}, code
}

// A live scan under injected faults: every read that may pass on a second try is tried again
// (the first three reads of each cluster fail with each kind of fault and the report is the
// fault-free one), reads that keep failing are named under errors and never silently change
// the findings, and the scan ends within its --timeout even when an answer never comes.
func scanUnderFaults(t *testing.T, direct string) {
	kubeconfig, proxies := behindFaults(t, direct)

	base, code := faultScan(t, kubeconfig, 30*time.Second)
	if code != 3 || len(base.Findings) == 0 {
		t.Fatalf("fault-free scan: exit %d, %d findings; want findings at error level (exit 3)", code, len(base.Findings))
	}
	baseErrs := errorKeys(base)
	t.Logf("fault-free: %d findings, errors %v", len(base.Findings), baseErrs)

	// Each kind, on the first reads of each cluster (discovery first): recovered every time.
	for _, f := range []testenv.Fault{testenv.Throttle, testenv.Unavailable, testenv.InternalError, testenv.Reset, testenv.Truncate, testenv.Stall} {
		t.Run("retried-"+string(f), func(t *testing.T) {
			setFaults(proxies, true, testenv.Rule{Fault: f, Rate: 1, Methods: []string{"GET"}, Max: 3, Stall: time.Second})
			defer setFaults(proxies, false)
			got, code := faultScan(t, kubeconfig, 30*time.Second)
			sum, n := summaries(proxies)
			t.Log(sum)
			if n != 3*len(proxies) {
				t.Errorf("%d faults injected, want %d", n, 3*len(proxies))
			}
			checkSameAsFaultFree(t, base, got, baseErrs, code)
		})
	}

	// A low rate of every kind at once, on every read: the same report as without faults.
	t.Run("low-rate-mixed", func(t *testing.T) {
		var rules []testenv.Rule
		for _, f := range []testenv.Fault{testenv.Throttle, testenv.Unavailable, testenv.InternalError, testenv.Reset, testenv.Truncate, testenv.Stall} {
			rules = append(rules, testenv.Rule{Fault: f, Rate: 0.03, Methods: []string{"GET"}, Stall: time.Second})
		}
		setFaults(proxies, true, rules...)
		defer setFaults(proxies, false)
		got, code := faultScan(t, kubeconfig, 30*time.Second)
		sum, n := summaries(proxies)
		t.Log(sum)
		if n == 0 {
			t.Errorf("no fault was injected")
		}
		checkSameAsFaultFree(t, base, got, baseErrs, code)
	})

	// A high rate of each kind: the scan may lose reads, but it ends in time, and a cluster
	// whose findings changed has errors saying what could not be read.
	for _, f := range []testenv.Fault{testenv.Throttle, testenv.Unavailable, testenv.InternalError, testenv.Reset, testenv.Truncate, testenv.Stall} {
		t.Run("high-rate-"+string(f), func(t *testing.T) {
			setFaults(proxies, true, testenv.Rule{Fault: f, Rate: 0.5, Methods: []string{"GET"}, Stall: 3 * time.Second})
			defer setFaults(proxies, false)
			got, code := faultScan(t, kubeconfig, 8*time.Second)
			sum, n := summaries(proxies)
			t.Log(sum)
			if n == 0 {
				t.Errorf("no fault was injected")
			}
			if code == 1 {
				return // no cluster read: faultScan checked the reason was given
			}
			checkLossReported(t, base, got, baseErrs)
		})
	}

	// One resource that always fails: named under errors, everything else still judged.
	t.Run("persistent-503-on-one-resource", func(t *testing.T) {
		setFaults(proxies, true, testenv.Rule{Fault: testenv.Unavailable, Rate: 1, Methods: []string{"GET"}, Path: "/bundledeployments"})
		defer setFaults(proxies, false)
		got, code := faultScan(t, kubeconfig, 30*time.Second)
		if code != 3 {
			t.Fatalf("exit %d", code)
		}
		named := false
		for _, e := range got.Errors {
			named = named || strings.Contains(e.Message, "bundledeployments")
		}
		if !named {
			t.Errorf("no error names bundledeployments: %v", errorKeys(got))
		}
		for _, k := range base.keys() {
			if strings.HasPrefix(k, "helm/") && !contains(got.keys(), k) {
				t.Errorf("a finding that needs no BundleDeployment was lost: %s", k)
			}
		}
		checkLossReported(t, base, got, baseErrs)
	})

	// An answer that never comes: the read gives up at --timeout and says so.
	t.Run("stall-until-timeout", func(t *testing.T) {
		// On the management cluster only: the other is read in full.
		setFaults(map[string]*testenv.FaultProxy{"local": proxies["local"]}, true,
			testenv.Rule{Fault: testenv.Stall, Rate: 1, Methods: []string{"GET"}, Path: "/bundles", Max: 1})
		defer setFaults(proxies, false)
		got, code := faultScan(t, kubeconfig, 6*time.Second)
		if code != 3 {
			t.Fatalf("exit %d", code)
		}
		reported := false
		for _, e := range got.Errors {
			reported = reported || e.Cluster == "local"
		}
		if !reported {
			t.Errorf("a read that never finished is not reported: errors %v", errorKeys(got))
		}
		t.Logf("errors: %v", errorKeys(got))
		checkLossReported(t, base, got, baseErrs)
	})
}

// checkLossReported: every cluster whose findings differ from the fault-free scan has an
// error of its own in the report (a scan never silently judges from half the objects).
func checkLossReported(t *testing.T, base, got scanResult, baseErrs []string) {
	t.Helper()
	byCluster := func(r scanResult) map[string][]string {
		m := map[string][]string{}
		for _, f := range r.Findings {
			m[f.Cluster] = append(m[f.Cluster], f.ID+" "+f.Affects+" "+f.Object.Kind+"/"+f.Object.Namespace+"/"+f.Object.Name)
		}
		for _, v := range m {
			sort.Strings(v)
		}
		return m
	}
	newErr := map[string]bool{}
	for _, e := range errorKeys(got) {
		if !contains(baseErrs, e) {
			newErr[strings.SplitN(e, ": ", 2)[0]] = true
		}
	}
	b, g := byCluster(base), byCluster(got)
	lost := 0
	for c := range mergeKeys(b, g) {
		if reflect.DeepEqual(b[c], g[c]) {
			continue
		}
		lost++
		if !newErr[c] && !newErr[""] {
			t.Errorf("cluster %s: findings changed under faults with no error reported:\n%s", c, diff(b[c], g[c]))
		}
	}
	t.Logf("%d clusters judged from partial reads, errors: %d", lost, len(got.Errors))
}

func mergeKeys(a, b map[string][]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// informerTraffic is what serve's informers send (lists and watches of resources), not the
// discovery and namespace probe it makes once at start.
func informerTraffic(r *http.Request) bool {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	resource := (parts[0] == "api" && len(parts) >= 3) || (parts[0] == "apis" && len(parts) >= 4)
	probe := strings.HasSuffix(r.URL.Path, "/namespaces") && r.URL.Query().Get("limit") == "1" && r.URL.Query().Get("resourceVersion") == ""
	return resource && !probe
}

// pendingRelease writes a Helm release revision left pending an hour before `now`.
func pendingRelease(t *testing.T, cfg *rest.Config, ns, name string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	at, _ := time.Parse(time.RFC3339, now)
	at = at.Add(-time.Hour)
	store := storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(ns)))
	rel := &release.Release{Name: name, Namespace: ns, Version: 1,
		Info:  &release.Info{Status: release.StatusPendingInstall, FirstDeployed: helmtime.Time{Time: at}, LastDeployed: helmtime.Time{Time: at}, Description: "Install pending"},
		Chart: &chart.Chart{Metadata: &chart.Metadata{Name: name, Version: "1.0.0", APIVersion: "v2"}}}
	if err := store.Create(rel); err != nil {
		t.Fatal(err)
	}
}

type serveRun struct {
	srv  *serve.Server
	stop func()
}

func startServe(t *testing.T, name string, cfg *rest.Config) *serveRun {
	t.Helper()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	at, _ := time.Parse(time.RFC3339, now)
	srv, err := serve.New(serve.Options{Targets: []source.Target{{Name: name, Server: cfg.Host, Config: cfg}}, Registry: prometheus.NewRegistry(),
		Catalog: cat, Thresholds: check.NewThresholds(cat), Clock: func() time.Time { return at },
		Debounce: 200 * time.Millisecond, Interval: 2 * time.Second, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	var once sync.Once
	r := &serveRun{srv: srv, stop: func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}}
	t.Cleanup(r.stop)
	return r
}

func reportKeys(r *report.Report) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.ID+" "+f.Cluster+" "+f.Object.Kind+"/"+f.Object.Namespace+"/"+f.Object.Name)
	}
	for _, e := range r.Errors {
		out = append(out, "error "+e.Cluster+": "+e.Message)
	}
	sort.Strings(out)
	return out
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

func hasRelease(r *report.Report, name string) bool {
	if r == nil {
		return false
	}
	for _, f := range r.Findings {
		if f.ID == "helm/release-pending" && strings.Contains(f.Object.Name, name) {
			return true
		}
	}
	return false
}

// serve under faults: while every list and watch of its informers fails (503, 500, resets,
// cut bodies) it does not call itself ready; once the faults stop it becomes ready and judges
// exactly what a fault-free serve of the same server judges. Watches dropped mid-stream and
// failing to come back do not lose a change made meanwhile, and a change made after recovery
// is seen too.
func TestFaultServeRecovers(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	const name = "prod-eu-1"
	env := testenv.Start(t, testenv.WithContextName(name))
	if _, err := testenv.Load(t.Context(), env.Config, example, testenv.LoadOptions{Cluster: name}); err != nil {
		t.Fatal(err)
	}
	proxy := testenv.StartFaultProxy(t, env.Config, 7)
	failAll := []testenv.Rule{
		{Fault: testenv.Unavailable, Rate: 0.4, Match: informerTraffic},
		{Fault: testenv.Reset, Rate: 0.4, Match: informerTraffic},
		{Fault: testenv.InternalError, Rate: 0.5, Match: informerTraffic},
		{Fault: testenv.Truncate, Rate: 1, Match: informerTraffic},
	}
	proxy.SetRules(failAll...)
	proxy.On()

	faulty := startServe(t, name, proxy.Config())
	clean := startServe(t, name, env.Config)

	// Faults on: caches cannot fill, so serve is not ready (nor judging half a cluster).
	time.Sleep(5 * time.Second)
	if faulty.srv.Ready() {
		t.Errorf("serve says ready while every list and watch fails")
	}
	c := proxy.Counts()
	t.Logf("while failing: %s", proxy.Summary())
	for _, f := range []testenv.Fault{testenv.Unavailable, testenv.Reset, testenv.InternalError, testenv.Truncate} {
		if c[f] == 0 {
			t.Errorf("no %s injected", f)
		}
	}

	// Faults off: ready, and judging what the fault-free serve judges.
	proxy.Off()
	start := time.Now()
	if !waitFor(90*time.Second, faulty.srv.Ready) {
		t.Fatalf("serve not ready 90s after the faults stopped (%s)", proxy.Summary())
	}
	t.Logf("ready %s after the faults stopped", time.Since(start).Round(time.Millisecond))
	if !waitFor(60*time.Second, clean.srv.Ready) {
		t.Fatal("the fault-free serve is not ready")
	}
	same := func() bool {
		a, b := reportKeys(faulty.srv.Report()), reportKeys(clean.srv.Report())
		return len(a) > 0 && reflect.DeepEqual(a, b)
	}
	if !waitFor(10*time.Second, same) {
		t.Fatalf("after recovery serve judges differently from a fault-free serve:\n%s",
			diff(reportKeys(clean.srv.Report()), reportKeys(faulty.srv.Report())))
	}

	// Every open watch is cut and cannot come back for a while; a release goes pending then.
	proxy.SetRules(failAll...)
	proxy.On()
	cut := proxy.CutStreams()
	if cut == 0 {
		t.Errorf("no open watch to cut")
	}
	pendingRelease(t, env.Config, agentNS, "fault-during")
	time.Sleep(4 * time.Second)
	t.Logf("cut %d watches; while failing: %s", cut, proxy.Summary())
	proxy.Off()
	if !waitFor(90*time.Second, func() bool { return hasRelease(faulty.srv.Report(), "fault-during") }) {
		t.Fatalf("a release gone pending while the watches failed was never reported after they came back")
	}

	// A change after recovery is seen too, and both serves agree again.
	pendingRelease(t, env.Config, agentNS, "fault-after")
	if !waitFor(30*time.Second, func() bool { return hasRelease(faulty.srv.Report(), "fault-after") }) {
		t.Fatalf("a release gone pending after recovery was not reported")
	}
	if !waitFor(15*time.Second, same) {
		t.Errorf("serve judges differently from a fault-free serve:\n%s",
			diff(reportKeys(clean.srv.Report()), reportKeys(faulty.srv.Report())))
	}
}

// realWrite matches the writes fix makes for real: not the dry-runs, not the access review.
func realWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return false
	}
	return !testenv.IsDryRun(r) && !strings.Contains(r.URL.Path, "selfsubjectaccessreviews")
}

// nthRealWrite matches only the real writes in these positions (1 is the first).
func nthRealWrite(ns ...int) func(*http.Request) bool {
	var mu sync.Mutex
	seen := 0
	return func(r *http.Request) bool {
		if !realWrite(r) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		for _, n := range ns {
			if seen == n {
				return true
			}
		}
		return false
	}
}

// fix --apply of a pending agent release (a rollback: create revision 6, re-apply the
// Deployment, rewrite revisions 4, 5 and 6) with faults on its real writes (not the dry-runs).
// Throttled and briefly unavailable writes are retried and the run completes; so does a run
// whose answers are lost after the server made the writes (fix reads them back). A write
// refused (500) or reset before the server saw it stops the run. After every run each object
// is either untouched or fully changed and the journal names exactly the objects that
// changed; running fix again finishes the rollback without doing any step twice: the history
// ends as an uninterrupted rollback leaves it.
func TestFaultFixApply(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	want := []string{
		"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v4",
		"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v5",
		"Secret/cattle-fleet-system/sh.helm.release.v1." + agentRelease + ".v6",
		"Deployment/cattle-fleet-system/fleet-agent",
	}
	cases := []struct {
		name  string
		rules func() []testenv.Rule
		// stops: the first run ends with an error (exit 1) and a rerun is needed.
		stops bool
	}{
		{"throttled-and-unavailable-writes", func() []testenv.Rule {
			return []testenv.Rule{
				{Fault: testenv.Throttle, Rate: 1, Match: realWrite, Max: 2},
				{Fault: testenv.Unavailable, Rate: 1, Match: realWrite, Max: 2, RetryAfter: time.Second},
			}
		}, false},
		{"500-on-write-1", func() []testenv.Rule {
			return []testenv.Rule{{Fault: testenv.InternalError, Rate: 1, Match: nthRealWrite(1)}}
		}, true},
		{"500-on-write-4", func() []testenv.Rule {
			return []testenv.Rule{{Fault: testenv.InternalError, Rate: 1, Match: nthRealWrite(4)}}
		}, true},
		{"reset-before-write-3", func() []testenv.Rule {
			return []testenv.Rule{{Fault: testenv.Reset, Rate: 1, Match: nthRealWrite(3)}}
		}, true},
		// The server made the write and the answer was lost — the create of revision 6, the
		// apply of the Deployment, the last update of revision 6: each time fix reads the
		// object back, finds its write there, and goes on.
		{"reset-after-writes-1-2-5", func() []testenv.Rule {
			return []testenv.Rule{{Fault: testenv.ResetAfter, Rate: 1, Match: nthRealWrite(1, 2, 5)}}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := replay(t, scenario("fleet/agent-pending-upgrade-incident"), "prod-eu-1")
			cfg := f.envs["prod-eu-1"].Config
			before := everything(t, cfg)
			faulty := *f
			var proxies map[string]*testenv.FaultProxy
			faulty.kubeconfig, proxies = behindFaults(t, f.kubeconfig)
			proxy := proxies["prod-eu-1"]
			proxy.SetRules(tc.rules()...)
			proxy.On()

			dir := filepath.Join(t.TempDir(), "backup")
			args := append([]string{"fix"}, faulty.args("--apply", "--yes", "--max-risk", "medium", "--backup-dir", dir, "--verify-timeout", "20s")...)
			out, errOut, code := runCtx(context.Background(), t, "", args...)
			t.Logf("first run, exit %d (%s):\n%s%s", code, proxy.Summary(), out, errOut)
			proxy.Off()
			if proxy.Injected() == 0 {
				t.Fatalf("no fault was injected")
			}
			if !tc.stops && code != 0 {
				t.Fatalf("fix --apply exit %d under retryable write faults, want 0", code)
			}
			if tc.stops && code != 1 {
				t.Fatalf("fix --apply exit %d after a failed write, want 1", code)
			}

			// Untouched or fully changed, and the journal says which.
			mid := everything(t, cfg)
			got := changed(before, mid)
			if jw := journalWrites(t, dir)["prod-eu-1"]; !sameSet(got, jw) {
				t.Errorf("after the first run the journal names %v, but %v changed", jw, got)
			}
			checkReleaseRecords(t, f)

			if tc.stops {
				out, errOut, code = runCtx(context.Background(), t, "", args...)
				t.Logf("rerun, exit %d:\n%s%s", code, out, errOut)
				checkRerunExit(t, code, out)
			}
			checkChangedAndJournaled(t, before, everything(t, cfg), dir, want)
			checkRolledBackOnce(t, f, dir)
			checkReleaseRecords(t, f)
		})
	}
}

// checkReleaseRecords: every release record decodes and its status label agrees with its
// payload (the driver writes both in one object: never half of it).
func checkReleaseRecords(t *testing.T, f *fleetOf) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(f.envs["prod-eu-1"].Config)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := cs.CoreV1().Secrets(agentNS).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + agentRelease})
	if err != nil {
		t.Fatal(err)
	}
	store := helmStore(t, f, "prod-eu-1", agentNS)
	for _, s := range secrets.Items {
		var rev int
		if _, err := fmt.Sscanf(s.Labels["version"], "%d", &rev); err != nil {
			t.Errorf("%s: version label %q", s.Name, s.Labels["version"])
			continue
		}
		r, err := store.Get(agentRelease, rev)
		if err != nil {
			t.Errorf("%s does not decode: %v", s.Name, err)
			continue
		}
		if r.Info.Status.String() != s.Labels["status"] {
			t.Errorf("%s: status label %s, record %s", s.Name, s.Labels["status"], r.Info.Status)
		}
	}
}

// The same for a SUC image fix (patch the Plan, delete its two Jobs, remove a node's label):
// the answer to the patch, to a delete or to the label removal is lost after the server made
// the change; fix reads the object back, sees its change there, journals it and goes on — one
// run, every step applied once, the journal naming exactly what changed. A connection reset
// before the Plan patch reached the server leaves the step open (nothing written, exit 1); the
// next run finishes the whole chain.
func TestFaultFixApplyLostAnswers(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API servers
	flags, want := sucImageFix(t)
	for _, tc := range []struct {
		fault testenv.Fault
		k     []int
	}{{testenv.ResetAfter, []int{1, 2, 4}}, {testenv.Reset, []int{1}}} {
		t.Run(fmt.Sprintf("%s-writes-%s", tc.fault, strings.ReplaceAll(strings.Trim(fmt.Sprint(tc.k), "[]"), " ", "-")), func(t *testing.T) {
			f := replay(t, scenario("suc/image-missing-kubectl-tag"))
			cfg := f.envs["prod-eu-1"].Config
			before := everything(t, cfg)
			faulty := *f
			var proxies map[string]*testenv.FaultProxy
			faulty.kubeconfig, proxies = behindFaults(t, f.kubeconfig)
			proxy := proxies["prod-eu-1"]
			proxy.SetRules(testenv.Rule{Fault: tc.fault, Rate: 1, Match: nthRealWrite(tc.k...)})
			proxy.On()
			dir := filepath.Join(t.TempDir(), "backup")
			args := append([]string{"fix"}, faulty.args(append(flags, "--apply", "--yes", "--backup-dir", dir)...)...)
			out, errOut, code := runCtx(context.Background(), t, "", args...)
			t.Logf("exit %d (%s):\n%s%s", code, proxy.Summary(), out, errOut)
			if got := proxy.Log(); len(got) != len(tc.k) {
				t.Fatalf("injected %v, want %d faults", got, len(tc.k))
			} else {
				t.Logf("injected %v", got)
			}
			if tc.fault == testenv.Reset {
				// Nothing reached the server: nothing changed, the step stays open.
				if code != 1 {
					t.Fatalf("fix --apply exit %d after a reset write, want 1", code)
				}
				if got := changed(before, everything(t, cfg)); len(got) != 0 {
					t.Errorf("changed after a write that never reached the server: %v", got)
				}
				if jw := journalWrites(t, dir)["prod-eu-1"]; len(jw) != 0 {
					t.Errorf("journal names writes %v, none was made", jw)
				}
				proxy.Off()
				out, errOut, code = runCtx(context.Background(), t, "", args...)
				t.Logf("rerun, exit %d:\n%s%s", code, out, errOut)
			}
			// 3: every step applied once, the chain's last one unverified (no SUC controller
			// runs here to finish the Plan on the nodes).
			if code != 3 {
				t.Fatalf("fix --apply exit %d, want 3", code)
			}
			checkChangedAndJournaled(t, before, everything(t, cfg), dir, want)
			terminal, applied := terminalCount(t, dir)
			for id, n := range applied {
				if n != 1 || terminal[id] != 1 {
					t.Errorf("step %s: applied %d times, finished %d times; want once each", id, n, terminal[id])
				}
			}
			if len(applied) != 4 {
				t.Errorf("%d steps applied, want 4 (patch, two deletes, label)", len(applied))
			}
		})
	}
}

// serve's start-up reads (discovery, the namespaces probe) are retried like the scan's: a
// server briefly answering 503 when serve starts must not leave the cluster unwatched until
// serve is restarted.
func serveStartRetries(t *testing.T, env *testenv.Env) {
	name := env.ContextName
	proxy := testenv.StartFaultProxy(t, env.Config, 11)
	startup := func(r *http.Request) bool { return !informerTraffic(r) }
	proxy.SetRules(
		testenv.Rule{Fault: testenv.Unavailable, Rate: 1, Max: 2, Match: startup},
		testenv.Rule{Fault: testenv.Reset, Rate: 1, Max: 1, Match: startup},
	)
	proxy.On()
	faulty := startServe(t, name, proxy.Config())
	clean := startServe(t, name, env.Config)
	if !waitFor(60*time.Second, faulty.srv.Ready) || !waitFor(60*time.Second, clean.srv.Ready) {
		t.Fatalf("serve not ready after transient start-up failures (%s)", proxy.Summary())
	}
	if c := proxy.Counts(); c[testenv.Unavailable] != 2 || c[testenv.Reset] != 1 {
		t.Fatalf("the start-up faults were not all injected: %s", proxy.Summary())
	}
	same := func() bool {
		a, b := reportKeys(faulty.srv.Report()), reportKeys(clean.srv.Report())
		return len(a) > 0 && reflect.DeepEqual(a, b)
	}
	if !waitFor(10*time.Second, same) {
		t.Fatalf("after start-up faults serve judges differently from a fault-free serve:\n%s",
			diff(reportKeys(clean.srv.Report()), reportKeys(faulty.srv.Report())))
	}
}

// checkChangedAndJournaled asserts that exactly want changed between before and after, and
// that the journal in dir names exactly those writes.
func checkChangedAndJournaled(t *testing.T, before, after map[string]objState, dir string, want []string) {
	t.Helper()
	if got := changed(before, after); !sameSet(got, want) {
		t.Errorf("changed objects:\n  got  %v\n  want %v", got, want)
	}
	if jw := journalWrites(t, dir)["prod-eu-1"]; !sameSet(jw, want) {
		t.Errorf("journal writes %v, want %v", jw, want)
	}
}

// checkSameAsFaultFree asserts a scan under faults exited 3 with the fault-free scan's
// findings and errors: every failed read was retried until it passed.
func checkSameAsFaultFree(t *testing.T, base, got scanResult, baseErrs []string, code int) {
	t.Helper()
	if code != 3 {
		t.Fatalf("exit %d", code)
	}
	if d := diff(base.keys(), got.keys()); d != "" {
		t.Errorf("findings differ from the fault-free scan:\n%s", d)
	}
	if d := diff(baseErrs, errorKeys(got)); d != "" {
		t.Errorf("errors differ from the fault-free scan:\n%s", d)
	}
}
