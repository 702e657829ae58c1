package cli

import (
	"strconv"

	"github.com/unstick-dev/unstick/internal/serve"
)

// ShardsEnv is the environment variable that says how many serve replicas share the fleet
// when --shards is not given (the Helm chart sets it on a StatefulSet's pods).
const ShardsEnv = "UNSTICK_SHARDS"

// shardFlags are --shard i/N and --shards N: which part of the fleet this serve replica
// judges.
type shardFlags struct {
	shard     string
	shards    int
	shardsSet bool
}

// resolve is the replica's shard: --shard when given; else, with more than one replica
// (--shards or $UNSTICK_SHARDS), the ordinal of a StatefulSet pod's hostname; else the whole
// fleet.
func (f *shardFlags) resolve(getenv func(string) string, hostname func() (string, error)) (serve.Shard, error) {
	n, from, err := f.count(getenv)
	if err != nil {
		return serve.Shard{}, err
	}
	if f.shard != "" {
		s, err := serve.ParseShard(f.shard)
		if err != nil {
			return serve.Shard{}, usageErrorf("--shard %v", err)
		}
		if from != "" && n != s.Count {
			return serve.Shard{}, usageErrorf("--shard %s says %d replicas, %s says %d", f.shard, s.Count, from, n)
		}
		return s, nil
	}
	if n <= 1 {
		return serve.Shard{}, nil
	}
	host, err := hostname()
	if err != nil {
		return serve.Shard{}, usageErrorf("%s is %d but the hostname cannot be read (%v): pass --shard i/%d", from, n, err, n)
	}
	s, err := serve.ShardFromHostname(host, n)
	if err != nil {
		return serve.Shard{}, usageErrorf("%s is %d and no --shard is given, but %v: pass --shard i/%d, or run serve as a StatefulSet pod", from, n, err, n)
	}
	return s, nil
}

// count is the number of replicas --shards or $UNSTICK_SHARDS gives, and which gave it.
func (f *shardFlags) count(getenv func(string) string) (int, string, error) {
	if f.shardsSet {
		if f.shards < 1 {
			return 0, "", usageErrorf("--shards must be at least 1")
		}
		return f.shards, "--shards", nil
	}
	v := getenv(ShardsEnv)
	if v == "" {
		return 0, "", nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, "", usageErrorf("$%s=%q: want the number of serve replicas, at least 1", ShardsEnv, v)
	}
	return n, "$" + ShardsEnv, nil
}
