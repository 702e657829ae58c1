package serve

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/unstick-dev/unstick/internal/catalog"
	"github.com/unstick-dev/unstick/internal/check"
	"github.com/unstick-dev/unstick/internal/finding"
	"github.com/unstick-dev/unstick/internal/judge"
	"github.com/unstick-dev/unstick/internal/report"
	"github.com/unstick-dev/unstick/internal/source"
)

// rancherIDs are n cluster IDs shaped as Rancher names the clusters it provisions or imports.
func rancherIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c-m-%08x", uint32(i)*2654435761)
	}
	return out
}

// Each replica's share is close to 1/N, and adding a replica moves only the clusters the new
// one takes (about 1/(N+1) of them): the others keep their replica, their caches and series.
func TestShardOfSpreadsAndMovesLittle(t *testing.T) {
	ids := rancherIDs(2000)
	for _, n := range []int{2, 3, 5, 8} {
		sizes := make([]int, n)
		moved := 0
		for _, id := range ids {
			before, after := ShardOf(id, n), ShardOf(id, n+1)
			sizes[before]++
			if before != after {
				moved++
				if after != n {
					t.Errorf("%s moved from replica %d to %d going from %d to %d replicas: only the new replica may take clusters", id, before, after, n, n+1)
				}
			}
		}
		fair := len(ids) / n
		for j, s := range sizes {
			if s < fair*8/10 || s > fair*12/10 {
				t.Errorf("%d replicas: replica %d holds %d of %d clusters, want about %d", n, j, s, len(ids), fair)
			}
		}
		if want := len(ids) / (n + 1); moved < want*8/10 || moved > want*12/10 {
			t.Errorf("%d → %d replicas moved %d clusters, want about %d", n, n+1, moved, want)
		}
	}
	if ShardOf("c-m-4x7kq2zt", 1) != 0 || ShardOf("c-m-4x7kq2zt", 0) != 0 {
		t.Error("one replica (or none given) holds every cluster")
	}
}

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"0/3", Shard{0, 3}, true},
		{"2/3", Shard{2, 3}, true},
		{"0/1", Shard{0, 1}, true},
		{"3/3", Shard{}, false},
		{"-1/3", Shard{}, false},
		{"1/0", Shard{}, false},
		{"1", Shard{}, false},
		{"a/b", Shard{}, false},
	} {
		got, err := ParseShard(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		host string
		want Shard
		ok   bool
	}{
		{"unstick-2", Shard{2, 3}, true},
		{"unstick-serve-0", Shard{0, 3}, true},
		{"unstick-3", Shard{}, false}, // a fourth pod of three replicas
		{"unstick-7d9f8b6c5-x2vqt", Shard{}, false},
		{"laptop", Shard{}, false},
	} {
		got, err := ShardFromHostname(c.host, 3)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ShardFromHostname(%q, 3) = %v, %v; want %v, ok %v", c.host, got, err, c.want, c.ok)
		}
	}
}

// rancherTargets are targets as RancherTargets makes them: local and the given clusters.
func rancherTargets(ids ...string) []source.Target {
	cs := []source.RancherCluster{{ID: "local"}}
	for _, id := range ids {
		cs = append(cs, source.RancherCluster{ID: id, DisplayName: "prod-" + id[len(id)-4:]})
	}
	return source.RancherTargets(&rest.Config{BearerToken: "token-x:y"}, "https://rancher.example.com", cs, nil)
}

// Every replica watches Rancher's management cluster (its Fleet objects describe every
// downstream cluster) and its own downstream clusters; each cluster is owned by exactly one.
func TestFleetMapSplitsTheList(t *testing.T) {
	ts := rancherTargets(rancherIDs(30)...)
	const n = 3
	owners := map[string]int{}
	for i := range n {
		f := newFleetMap(Shard{i, n}, ts)
		sawLocal := false
		for _, w := range f.watch(ts) {
			if w.Name == "local" {
				sawLocal = true
				continue
			}
			if !f.owns(w.Name) {
				t.Errorf("replica %d watches %s, which it does not own", i, w.Name)
			}
		}
		if !sawLocal {
			t.Errorf("replica %d does not watch the management cluster", i)
		}
		for _, x := range ts {
			if f.owns(x.Name) {
				owners[x.Name]++
			}
		}
		if sizes := f.sizes(); sizes[0]+sizes[1]+sizes[2] != len(ts) {
			t.Errorf("replica %d: shard sizes %v do not add up to %d clusters", i, sizes, len(ts))
		}
	}
	for _, x := range ts {
		if owners[x.Name] != 1 {
			t.Errorf("%s is owned by %d replicas, want 1", x.Name, owners[x.Name])
		}
	}
	if f := newFleetMap(Shard{}, ts); len(f.watch(ts)) != len(ts) || !f.owns("anything") {
		t.Error("the zero Shard is the whole fleet")
	}
}

// A replica's report keeps its own clusters, the incidents that affect one of them (their
// evidence may be on the management cluster) and the errors of no cluster; its verdict is
// taken again over them.
func TestOwnReportKeepsOwnClusters(t *testing.T) {
	ts := rancherTargets(rancherIDs(12)...)
	f := newFleetMap(Shard{0, 2}, ts)
	var mine, theirs string
	for _, x := range ts[1:] {
		if f.owns(x.Name) && mine == "" {
			mine = x.Name
		}
		if !f.owns(x.Name) && theirs == "" {
			theirs = x.Name
		}
	}
	stale := func(c string) finding.Finding {
		return finding.Finding{ID: "fleet/agent-heartbeat-stale", Severity: finding.Error, Cluster: "local", Affects: c}
	}
	rep := &report.Report{
		Clusters:  []report.Cluster{{Name: mine, Objects: 5}, {Name: theirs, Objects: 5}},
		Findings:  []finding.Finding{stale(theirs)},
		Incidents: []finding.Incident{finding.NewIncident(stale(theirs), nil)},
		Errors:    []finding.ScanError{{Cluster: theirs, Message: "forbidden"}, {Message: "listing Rancher's clusters has failed"}},
	}
	ownReport(rep, f, finding.Error)
	if len(rep.Clusters) != 1 || rep.Clusters[0].Name != mine {
		t.Errorf("clusters %v, want only %s", rep.Clusters, mine)
	}
	if len(rep.Findings) != 0 || len(rep.Incidents) != 0 {
		t.Errorf("kept another replica's finding or incident: %v %v", rep.Findings, rep.Incidents)
	}
	if len(rep.Errors) != 1 || rep.Errors[0].Cluster != "" {
		t.Errorf("errors %v, want only the list's", rep.Errors)
	}
	if rep.Verdict != report.VerdictIncomplete {
		t.Errorf("verdict %q, want %q (the list failed; the finding about %s is another replica's)", rep.Verdict, report.VerdictIncomplete, theirs)
	}
}

// A sharded replica's dashboard shows its own clusters and says which shard it is and where
// the rest of the fleet is; the example bundle is judged whole, then narrowed as serve does.
func TestDashboardShowsItsShard(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := (&source.Offline{Path: "../../examples/fleet-upgrade-stuck"}).Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ts []source.Target
	for _, c := range snap.Clusters {
		ts = append(ts, source.Target{Name: c.Name})
	}
	f := newFleetMap(Shard{1, 3}, ts)
	rep := judge.Judge(snap, judge.Options{Thresholds: check.NewThresholds(cat), Catalog: cat}).Report
	ownReport(rep, f, finding.Error)
	s := &Server{o: Options{Version: "test"}, last: &state{report: rep, fleet: f}}
	p := s.page()
	want := fmt.Sprintf("shard 1/3: %d of the %d listed clusters", f.sizes()[1], len(ts))
	if !strings.HasPrefix(p.Shard, want) {
		t.Errorf("dashboard shard line %q, want it to start %q", p.Shard, want)
	}
	if len(p.Clusters) != f.sizes()[1] {
		t.Errorf("%d cluster rows, want shard 1's %d", len(p.Clusters), f.sizes()[1])
	}
	for _, c := range p.Clusters {
		if !f.owns(c.Name) {
			t.Errorf("row for %s, another shard's", c.Name)
		}
	}
	rec := httptest.NewRecorder()
	s.dashboard(rec, httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(rec.Body.String(), want) {
		t.Error("the rendered dashboard does not name its shard")
	}
	if (&fleetMap{shard: Shard{}}).describe() != "" {
		t.Error("an unsharded serve's dashboard names a shard")
	}
}
