package e2e

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricSample is one line of a Prometheus text exposition.
type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrape reads serve's /metrics.
func scrape(t *testing.T, addr string) []metricSample {
	t.Helper()
	var out []metricSample
	for _, ln := range strings.Split(string(httpGet(t, "http://"+addr+"/metrics")), "\n") {
		m := sampleLine.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		s := metricSample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = strings.ReplaceAll(p[2], `\"`, `"`)
		}
		out = append(out, s)
	}
	return out
}

// series are the samples of one metric.
func series(ss []metricSample, name string) []metricSample {
	var out []metricSample
	for _, s := range ss {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// labelSet is the set of one label's values over the samples of a metric.
func labelSet(ss []metricSample, name, label string) map[string]bool {
	out := map[string]bool{}
	for _, s := range series(ss, name) {
		out[s.labels[label]] = true
	}
	return out
}

// findingKeys are the unstick_findings series as id/severity/cluster with their counts.
func findingKeys(ss []metricSample) map[string]float64 {
	out := map[string]float64{}
	for _, s := range series(ss, "unstick_findings") {
		out[s.labels["id"]+" "+s.labels["severity"]+" "+s.labels["cluster"]] += s.value
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// serveShardedThroughRancher runs three `serve --rancher --shard i/3` replicas and one
// unsharded serve on the Rancher stand-in's fleet (the example's nine clusters, local among
// them): every cluster is judged by exactly one replica, the replicas' findings together are
// the single serve's, and once one replica is stopped the others' series name its shard and
// its clusters as judged by nobody, as the alert rules read them (UnstickShardDown,
// unstick:clusters:stale).
func serveShardedThroughRancher(t *testing.T, ops string) {
	single, _ := runServe(t, "--kubeconfig", ops, "--rancher", "--now", now)
	addrs, stops, said := make([]string, 3), make([]func(), 3), make([]*syncBuffer, 3)
	for i := range addrs {
		// The list is read again every 300ms: each refresh splits it again, the same way.
		addrs[i], said[i], stops[i] = runServeStoppable(t, "--kubeconfig", ops, "--rancher", "--now", now, "--rancher-refresh", "300ms", "--shard", fmt.Sprintf("%d/3", i))
		if want := fmt.Sprintf("(shard %d/3 judges ", i); !strings.Contains(said[i].String(), want) {
			t.Errorf("replica %d's start line does not say %q:\n%s", i, want, said[i].String())
		}
	}
	time.Sleep(time.Second)
	for i, s := range said {
		if out := s.String(); strings.Contains(out, " added; ") || strings.Contains(out, " removed; ") {
			t.Errorf("replica %d's watched clusters changed while Rancher's list did not:\n%s", i, out)
		}
	}
	whole := scrape(t, single)
	shards := make([][]metricSample, 3)
	for i, a := range addrs {
		shards[i] = scrape(t, a)
	}
	owner := judgedOnce(t, shards)
	if got, want := sortedKeys(owner), slices.Sorted(slices.Values(exampleClusters)); !slices.Equal(got, want) {
		t.Errorf("clusters judged by the replicas %v, want the fleet's %v", got, want)
	}
	sameFindings(t, whole, shards)

	k := owner["prod-eu-1"]
	stops[k]()
	var left []metricSample
	for i := range shards {
		if i != k {
			left = append(left, scrape(t, addrs[i])...)
		}
	}
	staleAfterStop(t, left, k, owner)
}

// judgedOnce checks that each cluster has a status on exactly one replica, the one every
// replica's unstick_cluster_shard names, and that each replica exports its own
// unstick_shard_info and holds as many clusters as unstick_shard_clusters says. It returns
// each cluster's replica.
func judgedOnce(t *testing.T, shards [][]metricSample) map[string]int {
	t.Helper()
	owner := map[string]int{}
	for i, ss := range shards {
		mine := labelSet(ss, "unstick_cluster_status", "cluster")
		for c := range mine {
			if j, seen := owner[c]; seen {
				t.Errorf("cluster %s judged by replicas %d and %d", c, j, i)
			}
			owner[c] = i
		}
		info := series(ss, "unstick_shard_info")
		if len(info) != 1 || info[0].labels["shard"] != strconv.Itoa(i) || info[0].labels["shards"] != "3" {
			t.Errorf("replica %d: unstick_shard_info %v, want shard=%d shards=3", i, info, i)
		}
		for _, s := range series(ss, "unstick_shard_clusters") {
			if s.labels["shard"] == strconv.Itoa(i) && int(s.value) != len(mine) {
				t.Errorf("replica %d says it holds %v clusters, and reports %d: %v", i, s.value, len(mine), sortedKeys(mine))
			}
		}
		for c := range labelSet(ss, "unstick_findings", "cluster") {
			if !mine[c] {
				t.Errorf("replica %d exports findings about %s, which it does not judge", i, c)
			}
		}
	}
	for i, ss := range shards {
		for _, s := range series(ss, "unstick_cluster_shard") {
			if c := s.labels["cluster"]; strconv.Itoa(owner[c]) != s.labels["shard"] {
				t.Errorf("replica %d says %s is shard %s's; replica %d judges it", i, c, s.labels["shard"], owner[c])
			}
		}
	}
	return owner
}

// sameFindings checks that the replicas' findings, summed by id, severity and cluster as the
// alert rules sum them, are the unsharded serve's, and so is the worst verdict.
func sameFindings(t *testing.T, whole []metricSample, shards [][]metricSample) {
	t.Helper()
	sum := map[string]float64{}
	failing := 0.0
	for _, ss := range shards {
		for k, v := range findingKeys(ss) {
			sum[k] += v
		}
		for _, s := range series(ss, "unstick_verdict_failing") {
			failing = max(failing, s.value)
		}
	}
	want := findingKeys(whole)
	if len(want) == 0 {
		t.Fatal("the unsharded serve exports no finding: nothing to compare")
	}
	if !maps.Equal(sum, want) {
		t.Errorf("the replicas' findings differ from one serve's:\nreplicas %v\nserve    %v", sortedKeys(sum), sortedKeys(want))
	}
	if w := series(whole, "unstick_verdict_failing"); len(w) != 1 || w[0].value != failing {
		t.Errorf("unstick_verdict_failing: one serve %v, the replicas' max %v", w, failing)
	}
}

// staleAfterStop checks what the remaining replicas say once replica k is gone: shard k is
// listed with its clusters and no replica's unstick_shard_info, and exactly k's clusters are
// listed with no status from anyone (the rules' unstick_shard_clusters unless
// unstick_shard_info, and unstick_cluster_shard unless unstick_cluster_status).
func staleAfterStop(t *testing.T, left []metricSample, k int, owner map[string]int) {
	t.Helper()
	live := labelSet(left, "unstick_shard_info", "shard")
	var down []string
	for _, s := range series(left, "unstick_shard_clusters") {
		if !live[s.labels["shard"]] && !slices.Contains(down, s.labels["shard"]+"="+strconv.Itoa(int(s.value))) {
			down = append(down, s.labels["shard"]+"="+strconv.Itoa(int(s.value)))
		}
	}
	var gone []string
	for c, i := range owner {
		if i == k {
			gone = append(gone, c)
		}
	}
	sort.Strings(gone)
	if want := []string{fmt.Sprintf("%d=%d", k, len(gone))}; !slices.Equal(down, want) {
		t.Errorf("shards down (shard=clusters) after stopping replica %d: %v, want %v", k, down, want)
	}
	reported := labelSet(left, "unstick_cluster_status", "cluster")
	var stale []string
	for c := range labelSet(left, "unstick_cluster_shard", "cluster") {
		if !reported[c] {
			stale = append(stale, c)
		}
	}
	sort.Strings(stale)
	if !slices.Equal(stale, gone) {
		t.Errorf("clusters no replica reports after stopping replica %d: %v, want its clusters %v", k, stale, gone)
	}
}
