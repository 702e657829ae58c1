package e2e

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/testenv"
)

// The Fleet controller's agentCheckinInterval is read from a real API server and kept by
// collect, so a fleet that checks in hourly is judged by its hour live and from the bundle
// alike; and nothing else of that config — the API server's CA, the bootstrap repository and
// its secret's name, the labels — reaches a scan's output or the collected bundle.
func TestCheckinIntervalReadLiveAndCollected(t *testing.T) {
	t.Parallel() // two at a time (go test -parallel defaults to GOMAXPROCS): each has its own API server
	c := newCanaries(t)
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS(scenario("fleet/agent-heartbeat-stale-checkin-1h-positive"))); err != nil {
		t.Fatal(err)
	}
	// The scenario's config as Fleet's chart renders it, with a canary in each value that
	// must stay behind.
	cmPath := filepath.Join(dir, "cattle-fleet-system", "configmaps.yaml")
	b, err := os.ReadFile(cmPath)
	if err != nil {
		t.Fatal(err)
	}
	cm := string(b)
	ca := "-----BEGIN CERTIFICATE-----\nMIIB" + c.v("apiServerCA of the fleet-controller config") + "\n-----END CERTIFICATE-----\n"
	for old, planted := range map[string]string{
		`"secret": "fleet-bootstrap-git-auth"`:                           `"secret": "` + c.v("bootstrap secret name of the fleet-controller config") + `"`,
		`"repo": "https://git.example.com/platform/fleet-bootstrap.git"`: `"repo": "https://git.example.com/` + c.v("bootstrap repo of the fleet-controller config") + `.git"`,
		`"rancher.example.com/region": "us-east-3"`:                      `"rancher.example.com/region": "` + c.v("labels of the fleet-controller config") + `"`,
		`"apiServerURL": "https://rancher.example.com"`:                  `"apiServerURL": "https://` + c.v("apiServerURL of the fleet-controller config") + `.example.com"`,
	} {
		if !strings.Contains(cm, old) {
			t.Fatalf("the scenario's fleet-controller config lacks %s", old)
		}
		cm = strings.Replace(cm, old, planted, 1)
	}
	start := strings.Index(cm, `"apiServerCA": "`) + len(`"apiServerCA": "`)
	end := start + strings.Index(cm[start:], `"`)
	cm = cm[:start] + base64.StdEncoding.EncodeToString([]byte(ca)) + cm[end:]
	if err := os.WriteFile(cmPath, []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}

	env := testenv.Start(t, testenv.WithContextName("local"))
	if _, err := testenv.Load(t.Context(), env.Config, dir, testenv.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	const interval = "agentCheckinInterval 1h from ConfigMap cattle-fleet-system/fleet-controller"
	// judged says prod-us-3 (seen 3h ago) is stale by the hour, and prod-us-1 (seen 40m ago,
	// stale by Fleet's default 15m) is not.
	judged := func(what, out string) {
		t.Helper()
		r := parse(t, out, "")
		var stale []string
		for _, f := range r.Findings {
			if f.ID == "fleet/agent-heartbeat-stale" {
				stale = append(stale, f.Affects)
			}
		}
		if len(stale) != 1 || stale[0] != "prod-us-3" {
			t.Errorf("%s: stale heartbeats of %v, want only prod-us-3's", what, stale)
		}
		if !strings.Contains(out, "Fleet agent of cluster prod-us-3 last checked in 3h ago; it checks in every 1h ("+interval+")") {
			t.Errorf("%s: the finding does not say it judged by the configured hour:\n%s", what, out)
		}
		if len(r.Errors) != 0 {
			t.Errorf("%s: errors %+v", what, r.Errors)
		}
	}

	live, liveErr, _ := run(t, "scan", "--kubeconfig", env.Kubeconfig, "--now", now, "-o", "json", "-q")
	judged("live scan", live)
	c.check(t, "live scan -o json", []byte(live+liveErr))
	table, tableErr, _ := run(t, "scan", "--kubeconfig", env.Kubeconfig, "--now", now, "-q")
	if !strings.Contains(table, interval) {
		t.Errorf("the table does not say which interval was used:\n%s", table)
	}
	c.check(t, "live scan -o table", []byte(table+tableErr))

	bundle := filepath.Join(t.TempDir(), "collected.tar.gz")
	_, collectErr, code := run(t, "collect", "--kubeconfig", env.Kubeconfig, "--to", bundle, "-q")
	if code != 0 {
		t.Fatalf("collect exit %d: %s", code, collectErr)
	}
	c.check(t, "collect (stderr)", []byte(collectErr))
	kept := false
	for name, b := range untar(t, bundle) {
		c.check(t, "collected file "+name, b)
		kept = kept || strings.Contains(string(b), `{\"agentCheckinInterval\":\"1h\"}`)
	}
	if !kept {
		t.Error("the collected bundle does not keep the fleet-controller's agentCheckinInterval")
	}
	fromBundle, bundleErr, _ := run(t, "scan", "--from", bundle, "--now", now, "-o", "json")
	judged("scan of the collected bundle", fromBundle)
	c.check(t, "scan of the collected bundle", []byte(fromBundle+bundleErr))
	if d := diff(parse(t, live, liveErr).keys(), parse(t, fromBundle, bundleErr).keys()); d != "" {
		t.Errorf("the collected bundle scans differently from the live cluster (- live only, + bundle only):\n%s", d)
	}
}
