package cli

import (
	"errors"
	"testing"

	"github.com/unstick-dev/unstick/internal/serve"
)

// Which part of the fleet a serve replica judges: --shard when given, else a StatefulSet
// pod's ordinal once --shards or $UNSTICK_SHARDS says there is more than one replica; a
// replica that cannot tell its part refuses to start (judging the whole fleet twice, or a
// part no other replica misses, would go unnoticed).
func TestServeShardResolves(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == ShardsEnv {
				return v
			}
			return ""
		}
	}
	host := func(h string) func() (string, error) { return func() (string, error) { return h, nil } }
	noHost := func() (string, error) { return "", errors.New("uname failed") }
	for _, c := range []struct {
		name   string
		flags  shardFlags
		getenv func(string) string
		host   func() (string, error)
		want   serve.Shard
		ok     bool
	}{
		{"nothing: the whole fleet", shardFlags{}, env(""), host("laptop"), serve.Shard{}, true},
		{"--shard", shardFlags{shard: "1/3"}, env(""), host("laptop"), serve.Shard{Index: 1, Count: 3}, true},
		{"--shard beats the hostname", shardFlags{shard: "0/3"}, env("3"), host("unstick-2"), serve.Shard{Index: 0, Count: 3}, true},
		{"the env's count and the pod's ordinal", shardFlags{}, env("3"), host("unstick-2"), serve.Shard{Index: 2, Count: 3}, true},
		{"--shards and the pod's ordinal", shardFlags{shards: 4, shardsSet: true}, env(""), host("unstick-serve-3"), serve.Shard{Index: 3, Count: 4}, true},
		{"one replica needs no ordinal", shardFlags{}, env("1"), host("unstick-7d9f8b6c5-x2vqt"), serve.Shard{}, true},
		{"a Deployment's pod has no ordinal", shardFlags{}, env("3"), host("unstick-7d9f8b6c5-x2vqt"), serve.Shard{}, false},
		{"an ordinal past the count", shardFlags{}, env("3"), host("unstick-3"), serve.Shard{}, false},
		{"no hostname", shardFlags{}, env("3"), noHost, serve.Shard{}, false},
		{"--shard against --shards", shardFlags{shard: "1/3", shards: 4, shardsSet: true}, env(""), host("x"), serve.Shard{}, false},
		{"--shard against the env", shardFlags{shard: "1/3"}, env("2"), host("x"), serve.Shard{}, false},
		{"a bad --shard", shardFlags{shard: "3/3"}, env(""), host("x"), serve.Shard{}, false},
		{"a bad env", shardFlags{}, env("three"), host("unstick-0"), serve.Shard{}, false},
		{"--shards 0", shardFlags{shards: 0, shardsSet: true}, env(""), host("unstick-0"), serve.Shard{}, false},
	} {
		got, err := c.flags.resolve(c.getenv, c.host)
		var ue *UsageError
		if (err == nil) != c.ok || got != c.want || (err != nil && !errors.As(err, &ue)) {
			t.Errorf("%s: %v, %v; want %v, ok %v (a usage error otherwise)", c.name, got, err, c.want, c.ok)
		}
	}
	if _, errOut, code := run(t, "serve", "--shard", "3/3"); code != ExitUsage {
		t.Errorf("serve --shard 3/3: exit %d, want %d (%s)", code, ExitUsage, errOut)
	}
}
