// Command genreal writes the scenario bundles drawn from upstream reports (rancher/fleet,
// rancher/rancher, system-upgrade-controller, k3s, rke2, helm, harvester) into
// testdata/scenarios/<family>/real-*: positive cases and their healthy look-alikes, with the
// object shapes and error strings those projects' code produces. Each scenario cites its report
// in expect.yaml. Run from the repository root: go run ./hack/genreal
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// now is the evaluation time of every scenario.
var now = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

type expectation struct {
	Description string   `json:"description"`
	Now         string   `json:"now"`
	RootCauses  []string `json:"rootCauses,omitempty"`
	Findings    []string `json:"findings,omitempty"`
	Forbid      []string `json:"forbid,omitempty"`
	MaxSeverity string   `json:"maxSeverity,omitempty"`
}

type clusterInfo struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Server string `json:"server,omitempty"`
}

type scenario struct {
	dir      string // <family>/real-<report>-<what>-<positive|healthy>
	source   string // the upstream report
	expect   expectation
	clusters []clusterInfo
	files    map[string][]obj
	logs     map[string]string
}

func newScenario(dir, source, description string) *scenario {
	return &scenario{dir: dir, source: source, files: map[string][]obj{}, logs: map[string]string{},
		expect: expectation{Description: strings.TrimSpace(description) + " (from " + source + ")", Now: ts(now)}}
}

func (s *scenario) add(path string, objs ...obj) { s.files[path] = append(s.files[path], objs...) }

func (s *scenario) cluster(name, role string) {
	s.clusters = append(s.clusters, clusterInfo{Name: name, Role: role})
}

// in prefixes a path with the cluster's directory when the bundle holds several clusters.
func (s *scenario) in(cluster, path string) string {
	if len(s.clusters) > 1 {
		return "clusters/" + cluster + "/" + path
	}
	return path
}

func (s *scenario) write(root string) error {
	dir := filepath.Join(root, s.dir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	put := func(rel string, b []byte) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, b, 0o644)
	}
	exp, err := yaml.Marshal(s.expect)
	if err != nil {
		return err
	}
	if err := put("expect.yaml", exp); err != nil {
		return err
	}
	info := obj{"apiVersion": "unstick.dev/v1alpha1", "kind": "BundleInfo", "collectedAt": ts(now), "collector": "unstick v0.1.0", "clusters": s.clusters}
	b, err := yaml.Marshal(info)
	if err != nil {
		return err
	}
	if err := put("unstick-bundle.yaml", b); err != nil {
		return err
	}
	var paths []string
	for p := range s.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		b, err := yaml.Marshal(list(s.files[p]...))
		if err != nil {
			return fmt.Errorf("%s/%s: %w", s.dir, p, err)
		}
		if err := put(p, b); err != nil {
			return err
		}
	}
	for p, text := range s.logs {
		if err := put(p, []byte(text)); err != nil {
			return err
		}
	}
	return nil
}

// zapError is a controller-runtime "Reconciler error" line of the fleet-agent (zap JSON).
func zapError(t time.Time, bd, ns, msg string) string {
	e, _ := json.Marshal(msg)
	return fmt.Sprintf(`{"level":"error","ts":%q,"logger":"bundledeployment","msg":"Reconciler error","controller":"bundledeployment","controllerGroup":"fleet.cattle.io","controllerKind":"BundleDeployment","BundleDeployment":{"name":%q,"namespace":%q},"namespace":%q,"name":%q,"reconcileID":%q,"error":%s}`,
		t.UTC().Format("2006-01-02T15:04:05Z"), bd, ns, ns, bd, uid(bd+ts(t)), e) + "\n"
}

func zapInfo(t time.Time, logger, msg string) string {
	return fmt.Sprintf(`{"level":"info","ts":%q,"logger":%q,"msg":%q}`, t.UTC().Format("2006-01-02T15:04:05Z"), logger, msg) + "\n"
}

func main() {
	root := flag.String("out", filepath.Join("testdata", "scenarios"), "scenario root")
	flag.Parse()
	var all []*scenario
	for _, gen := range []func() []*scenario{apiScenarios, gateScenarios, fleetScenarios, agentScenarios, sucScenarios, podScenarios, helmScenarios, admissionScenarios, moreScenarios, lastScenarios, quotedScenarios} {
		all = append(all, gen()...)
	}
	for _, s := range all {
		if err := s.write(*root); err != nil {
			fmt.Fprintln(os.Stderr, "genreal:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("wrote %d scenarios under %s\n", len(all), *root)
}
