#!/usr/bin/env bash
# Live scan vs the LIST floor at N = 5,000: BenchmarkLiveScan (internal/bench) replays a
# generated management bundle (internal/fleetgen) into a real kube-apiserver (testenv.Load,
# 32 writers, ~5 minutes at 5,000), then alternates RUNS times (default 3) between
#   - the live scan: source.Live (the real live loader) + check.Evaluate, in process, and
#   - the floor: only the LIST calls the live loader makes (source.Resources(), same page
#     size, parallelism and client rate limit), decoding nothing beyond what client-go does,
# and also times the real CLI (`unstick scan --kubeconfig … -o json`) on the same server.
# Prints the medians and the ratio scan / floor (target ≤ 1.3).
#
#   hack/bench/live.sh               N=500 hack/bench/live.sh
#   KUBECONFIG_LOADED=/path/kubeconfig N=5000 hack/bench/live.sh   (a server already loaded)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${N:-5000}"
build_unstick
out="$(UNSTICK_BENCH_CLUSTERS="$N" UNSTICK_BENCH_CLI="$work/unstick" UNSTICK_BENCH_KUBECONFIG="${KUBECONFIG_LOADED:-}" \
  go test ./internal/bench -run '^$' -bench 'BenchmarkLiveScan' -benchtime "${RUNS}x" -timeout 90m -v)" || { log "$out"; exit 1; }
log "$out"
metric() { awk -v m="$1" '/^BenchmarkLiveScan/ { for (i = 2; i < NF; i++) if ($(i + 1) == m) print $i }' <<<"$out"; }
floor="$(metric s-floor)" scan="$(metric s-scan)" cli="$(metric s-cli)"
echo "live N=$N: scan ${scan} s (CLI ${cli} s), LIST floor ${floor} s (medians of $RUNS), ratio $(ratio "$scan" "$floor") (CLI $(ratio "$cli" "$floor")) (target <= 1.3); load $(load_avg)"
