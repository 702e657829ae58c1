package serve

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// shardDescs are the series that say how the fleet is split between replicas. Every replica
// exports the whole split (each shard's size, each listed cluster's shard), not only its own
// part, so that when one replica is gone the others still say which shard and which clusters
// no replica judges: the alert rules report them stale rather than healthy.
type shardDescs struct {
	info, clusters, clusterShard *prometheus.Desc
}

func newShardDescs() shardDescs {
	return shardDescs{
		info: prometheus.NewDesc("unstick_shard_info",
			"Always 1: the shard this replica judges (--shard i/N; 0 of 1 when serve is not sharded).", []string{"shard", "shards"}, nil),
		clusters: prometheus.NewDesc("unstick_shard_clusters",
			"Clusters of the last cluster list each shard holds, exported by every replica for every shard.", []string{"shard", "shards"}, nil),
		clusterShard: prometheus.NewDesc("unstick_cluster_shard",
			"Always 1: the shard that judges each cluster of the last cluster list, exported by every replica for every cluster.", []string{"cluster", "shard", "shards"}, nil),
	}
}

func (d shardDescs) collect(f *fleetMap, gauge func(*prometheus.Desc, float64, ...string)) {
	if f == nil {
		return
	}
	n := strconv.Itoa(f.shard.count())
	gauge(d.info, 1, strconv.Itoa(f.shard.Index), n)
	for j, size := range f.sizes() {
		gauge(d.clusters, float64(size), strconv.Itoa(j), n)
	}
	for _, name := range f.order {
		gauge(d.clusterShard, 1, name, strconv.Itoa(f.shardOf(name)), n)
	}
}
