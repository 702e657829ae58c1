#!/usr/bin/env bash
# scan, collect and serve through Rancher at fleet scale: BenchmarkRancherFleet
# (internal/bench) starts the Rancher stand-in (testenv.RancherBed) listing max(SIZES) cluster
# IDs routed over SERVERS real API servers, each holding one downstream cluster of the example
# fleet, and for each size N runs the real CLI through it:
#   - `unstick scan --rancher` RUNS times, alternating with the floor (hack/bench/rancherfloor:
#     the scan's own requests, replayed under the same --max-inflight, decoded into `any`),
#   - `unstick collect --rancher` once,
#   - `unstick serve --rancher` once (N <= SERVE_MAX): time to ready, memory and watches per
#     cluster, steady-state requests/s, time from a planted failure to its metric.
# Every figure is printed with the load average and what the stand-in counted (requests, the
# most in flight at once, bytes).
#
#   hack/bench/rancher.sh            SIZES=200,1000 RUNS=1 hack/bench/rancher.sh
#   PROFILE=DIR writes a CPU profile of every run of the CLI into DIR (--profile cpu);
#   CLI_ARGS="--concurrency 64" adds flags to every run of the CLI, to compare settings.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SIZES="${SIZES:-200,1000,2000}"
build_unstick
[ -x "$work/rancherfloor" ] || go build -o "$work/rancherfloor" ./hack/bench/rancherfloor
# env, not assignments before the command: a word an expansion makes is never an assignment,
# so "${PROFILE:+UNSTICK_BENCH_PROFILE=…}" there would be run as the command.
{
  rc=0
  env UNSTICK_BENCH_CLI="$work/unstick" UNSTICK_BENCH_FLOOR="$work/rancherfloor" UNSTICK_BENCH_SIZES="$SIZES" \
    UNSTICK_BENCH_SERVERS="${SERVERS:-4}" UNSTICK_BENCH_SERVE_MAX="${SERVE_MAX:-1000}" \
    UNSTICK_BENCH_STEADY="${STEADY:-60}" UNSTICK_BENCH_VERBS="${VERBS:-scan,collect,serve}" RUNS="$RUNS" \
    ${MAX_INFLIGHT:+UNSTICK_BENCH_MAX_INFLIGHT="$MAX_INFLIGHT"} ${PROFILE:+UNSTICK_BENCH_PROFILE="$PROFILE"} \
    ${CLI_ARGS:+UNSTICK_BENCH_CLI_ARGS="$CLI_ARGS"} \
    go test ./internal/bench -run '^$' -bench 'BenchmarkRancherFleet' -benchtime 1x -timeout 180m -v || rc=$?
  echo "$rc" >"$work/rancher.rc"
} 2>&1 | tee "$work/rancher.log" | { grep --line-buffered -E 'N=|bed:|^(ok|FAIL|---)' || true; } >&2
rc="$(cat "$work/rancher.rc")"
if [ "$rc" != 0 ]; then
  log "the benchmark failed (exit $rc); the end of its output:"
  tail -n 30 "$work/rancher.log" >&2
  exit "$rc"
fi
