// Package e2e runs unstick against real kube-apiservers (internal/testenv): the example fleet
// replayed into one server per cluster, scanned live, collected, and scanned again offline.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/unstick-dev/unstick/internal/cli"
	"github.com/unstick-dev/unstick/internal/source"
	"github.com/unstick-dev/unstick/internal/testenv"
)

const (
	example = "../../examples/fleet-upgrade-stuck"
	now     = "2026-11-28T09:30:00Z"
)

var exampleClusters = []string{"local", "prod-eu-1", "prod-us-1", "edge-arm-1", "staging-1", "dev-1", "prod-ap-1", "prod-eu-2", "edge-rke2-7"}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), code
}

type scanResult struct {
	Findings []struct {
		ID      string `json:"id"`
		Cluster string `json:"cluster"`
		Affects string `json:"affects"`
		Object  struct {
			Kind, Namespace, Name string
		} `json:"object"`
	} `json:"findings"`
	Incidents []struct {
		RootCause struct {
			ID      string `json:"id"`
			Cluster string `json:"cluster"`
		} `json:"rootCause"`
		NextStep *struct {
			Rung     string   `json:"rung"`
			Commands []string `json:"commands"`
		} `json:"nextStep"`
	} `json:"incidents"`
	Errors []struct {
		Cluster string `json:"cluster"`
		Message string `json:"message"`
	} `json:"errors"`
}

func parse(t *testing.T, out, errOut string) scanResult {
	t.Helper()
	var r scanResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("no JSON report (%v); stderr: %s", err, errOut)
	}
	return r
}

// keys renders findings as sorted "id cluster→affects kind/ns/name" lines for comparison.
func (r scanResult) keys() []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.ID+" "+f.Cluster+"→"+f.Affects+" "+f.Object.Kind+"/"+f.Object.Namespace+"/"+f.Object.Name)
	}
	sort.Strings(out)
	return out
}

func (r scanResult) roots() []string {
	var out []string
	for _, i := range r.Incidents {
		out = append(out, i.RootCause.ID+" "+i.RootCause.Cluster)
	}
	sort.Strings(out)
	return out
}

// nextSteps renders each incident as "root-cause-id cluster: rung" of its next safe step.
func (r scanResult) nextSteps() []string {
	var out []string
	for _, i := range r.Incidents {
		rung := "-"
		if i.NextStep != nil {
			rung = i.NextStep.Rung
		}
		out = append(out, i.RootCause.ID+" "+i.RootCause.Cluster+": "+rung)
	}
	sort.Strings(out)
	return out
}

func diff(a, b []string) string {
	in := func(s []string, x string) bool {
		for _, y := range s {
			if y == x {
				return true
			}
		}
		return false
	}
	var d []string
	for _, x := range a {
		if !in(b, x) {
			d = append(d, "- "+x)
		}
	}
	for _, x := range b {
		if !in(a, x) {
			d = append(d, "+ "+x)
		}
	}
	return strings.Join(d, "\n")
}

// The example fleet replayed into real API servers scans live exactly as it scans offline,
// and `collect` of the live fleet scans offline exactly as the live scan did.
func liveScanMatchesOfflineAndCollect(t *testing.T, kubeconfig string) {

	offOut, offErr, offCode := run(t, "scan", "--from", example, "--now", now, "-o", "json")
	offline := parse(t, offOut, offErr)

	liveOut, liveErr, liveCode := run(t, "scan", "--kubeconfig", kubeconfig, "--all-contexts", "--now", now, "-o", "json", "-q")
	live := parse(t, liveOut, liveErr)
	if liveCode != offCode {
		t.Errorf("live exit %d, offline exit %d", liveCode, offCode)
	}
	if len(live.Errors) != 0 {
		t.Errorf("live scan errors: %+v", live.Errors)
	}
	if d := diff(offline.keys(), live.keys()); d != "" {
		t.Errorf("live findings differ from offline (- offline only, + live only):\n%s", d)
	}
	if d := diff(offline.roots(), live.roots()); d != "" {
		t.Errorf("live incidents differ from offline:\n%s", d)
	}

	bundle := filepath.Join(t.TempDir(), "collected.tar.gz")
	if _, errOut, code := run(t, "collect", "--kubeconfig", kubeconfig, "--all-contexts", "-o", bundle, "-q"); code != 0 {
		t.Fatalf("collect exit %d: %s", code, errOut)
	}
	colOut, colErr, colCode := run(t, "scan", "--from", bundle, "--now", now, "-o", "json")
	collected := parse(t, colOut, colErr)
	if colCode != liveCode {
		t.Errorf("collected bundle exit %d, live exit %d", colCode, liveCode)
	}
	if d := diff(live.keys(), collected.keys()); d != "" {
		t.Errorf("collected bundle findings differ from the live scan (- live only, + bundle only):\n%s", d)
	}
	if d := diff(live.roots(), collected.roots()); d != "" {
		t.Errorf("collected bundle incidents differ from the live scan:\n%s", d)
	}
	b, err := os.ReadFile(bundle)
	if err != nil || len(b) == 0 {
		t.Fatalf("no bundle written: %v", err)
	}
}

// Lists are paginated: reading with a page of 2 objects sees exactly what a page of 500 sees.
func listsArePaginated(t *testing.T, env *testenv.Env) {
	count := func(page int64) map[string]int {
		l := &source.Live{Targets: []source.Target{{Name: "local", Server: env.Config.Host, Config: env.Config}}, PageSize: page}
		snap, err := l.Load(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		c := snap.Cluster("local")
		return map[string]int{"bundledeployments": len(c.BundleDeployments), "clusters": len(c.FleetClusters), "helm releases": len(c.HelmReleases),
			"pods": len(c.Pods), "events": len(c.Events), "crds": len(c.CRDs), "nodes": len(c.Nodes), "contents": len(c.Contents)}
	}
	small, large := count(2), count(500)
	for k, v := range large {
		if small[k] != v {
			t.Errorf("%s: %d with pages of 2, %d with pages of 500", k, small[k], v)
		}
	}
	if large["bundledeployments"] < 3 || large["clusters"] < 3 {
		t.Errorf("too few objects to exercise paging: %v", large)
	}
}
