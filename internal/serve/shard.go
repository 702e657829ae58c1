package serve

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/unstick-dev/unstick/internal/lazyre"
	"github.com/unstick-dev/unstick/internal/snapshot"
	"github.com/unstick-dev/unstick/internal/source"
)

// Shard is one replica's part of the fleet when several serve replicas share it (serve
// --shard i/N, or a StatefulSet pod's ordinal): each cluster is judged and exported by the
// replica whose Index its ID hashes to. The zero Shard, like 0/1, is the whole fleet.
type Shard struct {
	Index, Count int
}

// sharded says whether the fleet is split at all.
func (s Shard) sharded() bool { return s.Count > 1 }

// count is Count, 1 for the zero Shard.
func (s Shard) count() int { return max(s.Count, 1) }

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.count()) }

// ParseShard reads "i/N": replica i (from 0) of N.
func ParseShard(v string) (Shard, error) {
	is, ns, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("%q: want i/N, replica i (counted from 0) of N, such as 0/3", v)
	}
	return NewShard(i, n)
}

// NewShard is replica i of n, checked.
func NewShard(i, n int) (Shard, error) {
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("replica %d of %d: want 0 ≤ i < N and N ≥ 1", i, n)
	}
	return Shard{Index: i, Count: n}, nil
}

// ordinal is the trailing -<number> a StatefulSet gives its pods' hostnames (unstick-2).
var ordinal = lazyre.New(`-([0-9]{1,9})$`)

// ShardFromHostname is replica <ordinal> of n for a StatefulSet pod named NAME-<ordinal>.
func ShardFromHostname(host string, n int) (Shard, error) {
	m := ordinal().FindStringSubmatch(host)
	if m == nil {
		return Shard{}, fmt.Errorf("hostname %q does not end in -<ordinal> as a StatefulSet pod's does", host)
	}
	i, _ := strconv.Atoi(m[1])
	return NewShard(i, n)
}

// ShardOf is the replica of n that holds cluster id, by rendezvous (highest random weight)
// hashing: every replica scores the id and the highest score wins. The same id always lands
// on the same replica for a given n, and going from n to n+1 replicas moves only the clusters
// the new replica wins, about 1/(n+1) of them; no other cluster changes replica.
func ShardOf(id string, n int) int {
	best, bestScore := 0, uint64(0)
	for j := range max(n, 1) {
		if s := shardScore(id, j); j == 0 || s > bestScore {
			best, bestScore = j, s
		}
	}
	return best
}

// shardScore is cluster id's weight on replica j: FNV-1a of both, spread by SplitMix64's
// finaliser (FNV alone scores similar ids alike).
func shardScore(id string, j int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	var b [9]byte
	binary.BigEndian.PutUint64(b[1:], uint64(j))
	_, _ = h.Write(b[:])
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// ClusterID is what a target is sharded by: its Rancher cluster ID (c-m-4x7kq2zt, local),
// which stays when the cluster is renamed, else its name.
func ClusterID(t source.Target) string {
	if _, id := source.SplitRancherServer(t.Server); id != "" {
		return id
	}
	return t.Name
}

// watchedByAll says whether every replica watches the target whatever its shard: Rancher's
// management cluster, whose Fleet objects describe every downstream cluster, so each replica
// judges its own clusters with them (an agent's heartbeat, a bundle's deployments there).
func watchedByAll(t source.Target) bool {
	_, id := source.SplitRancherServer(t.Server)
	return t.ViaRancher && id == source.RancherLocalCluster
}

// fleetMap is every cluster of the fleet list and the replica that holds it; each replica
// builds the same one from the same list.
type fleetMap struct {
	shard Shard
	// ids maps a report name to its cluster ID.
	ids map[string]string
	// order is the report names in list order, for stable series.
	order []string
	// others are the listed clusters other replicas watch (declareOthers).
	others []source.Target
}

func newFleetMap(shard Shard, ts []source.Target) *fleetMap {
	f := &fleetMap{shard: shard, ids: map[string]string{}}
	for _, t := range ts {
		if _, dup := f.ids[t.Name]; !dup {
			f.order = append(f.order, t.Name)
		}
		f.ids[t.Name] = ClusterID(t)
	}
	return f
}

// shardOf is the replica holding the cluster a report calls name: by its ID when the list
// has it, else by the name itself (a Fleet cluster Rancher's list does not show).
func (f *fleetMap) shardOf(name string) int {
	id, ok := f.ids[name]
	if !ok {
		id = name
	}
	return ShardOf(id, f.shard.count())
}

// owns says whether this replica judges and exports the cluster a report calls name. The
// fleet-wide series (a failed cluster list) have no cluster: every replica exports them. A
// nil map (an evaluation not made by a Server) owns everything.
func (f *fleetMap) owns(name string) bool {
	return f == nil || !f.shard.sharded() || name == "" || f.shardOf(name) == f.shard.Index
}

// watch is the part of ts this replica watches: its own clusters and those every replica
// watches.
func (f *fleetMap) watch(ts []source.Target) []source.Target {
	if !f.shard.sharded() {
		return ts
	}
	var out []source.Target
	f.others = nil
	for _, t := range ts {
		if watchedByAll(t) || f.owns(t.Name) {
			out = append(out, t)
		} else {
			f.others = append(f.others, t)
		}
	}
	return out
}

// declareOthers puts the clusters other replicas watch in the snapshot, with no objects:
// the checks then see the cluster set one serve would see, and a finding read on the
// management cluster about one of them names it (and is left to its replica) rather than
// being taken for the management cluster's own (an imported cluster's stuck upgrade).
func (f *fleetMap) declareOthers(b *snapshot.Builder) {
	for _, t := range f.others {
		b.DeclareCluster(t.Info())
	}
}

// sizes counts the listed clusters each replica holds.
func (f *fleetMap) sizes() []int {
	out := make([]int, f.shard.count())
	for _, name := range f.order {
		out[f.shardOf(name)]++
	}
	return out
}

// describe says, for the dashboard, which part of the fleet this replica shows; empty when
// serve is not sharded (or f is nil).
func (f *fleetMap) describe() string {
	if f == nil || !f.shard.sharded() {
		return ""
	}
	return fmt.Sprintf("shard %s: %d of the %d listed clusters; the other replicas show the rest, Prometheus the whole fleet (unstick:clusters:by_status)",
		f.shard, f.sizes()[f.shard.Index], len(f.order))
}

// ShardNote says, for serve's start line, which part of the listed clusters this replica
// judges; empty when serve is not sharded.
func (s *Server) ShardNote() string {
	s.wmu.Lock()
	f := s.fleet
	s.wmu.Unlock()
	if !f.shard.sharded() {
		return ""
	}
	return fmt.Sprintf(" (shard %s judges %d of them)", f.shard, f.sizes()[f.shard.Index])
}
