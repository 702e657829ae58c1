#!/usr/bin/env bash
# Registry inventory: 1,000 distinct image references probed by the real prober against
# go-containerregistry's in-process registry with 20 ms added to every request
# (BenchmarkInventory1000Refs in internal/registry), at the default concurrency and at 8,
# 16, 32 and 64; medians of RUNS (default 3). Target: < 2 s at the default.
#
#   hack/bench/registry.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
out="$(go test ./internal/registry -run '^$' -bench 'Inventory1000Refs' -benchtime 1x -count "$RUNS")" || { log "$out"; exit 1; }
log "$out"
for c in $(awk '/^BenchmarkInventory1000Refs/ { split($1, a, "="); sub(/-[0-9]+$/, "", a[2]); print a[2] }' <<<"$out" | sort -u); do
  m="$(awk -v c="concurrency=$c" 'index($1, c) { for (i = 2; i < NF; i++) if ($(i + 1) == "s/op") print $i }' <<<"$out" | median)"
  echo "registry 1000 refs @20ms, concurrency $c: ${m} s (median of $RUNS)"
done
echo "registry: target < 2 s at the default concurrency; load $(load_avg)"
