#!/usr/bin/env bash
# Offline scan vs the decode floor at N = 5,000 clusters: the existing Go benchmarks
# BenchmarkOfflineScan (load + judge + group, in process) and BenchmarkDecodeOnly (read every
# file and json.Unmarshal it into `any` with GOMAXPROCS workers) of internal/check, run
# RUNS times (default 3) in alternation, each run -benchtime BENCHTIME (default 3x).
# Prints the medians and the ratio scan / decode (target ≤ 1.3).
#
#   hack/bench/offline.sh            RUNS=5 hack/bench/offline.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${N:-5000}"
BENCHTIME="${BENCHTIME:-3x}"

go test -c -o "$work/check.test" ./internal/check
scan=() decode=()
for ((i = 1; i <= RUNS; i++)); do
  out="$(cd internal/check && "$work/check.test" -test.run '^$' -test.bench "^(BenchmarkOfflineScan|BenchmarkDecodeOnly)\$/^clusters=$N\$" -test.benchtime "$BENCHTIME")"
  s="$(awk '/^BenchmarkOfflineScan/ { print $3 / 1e9 }' <<<"$out")"
  d="$(awk '/^BenchmarkDecodeOnly/ { print $3 / 1e9 }' <<<"$out")"
  log "run $i: scan ${s} s, decode ${d} s (load $(load_avg))"
  scan+=("$s") decode+=("$d")
done
ms="$(printf '%s\n' "${scan[@]}" | median)"
md="$(printf '%s\n' "${decode[@]}" | median)"
echo "offline N=$N: scan ${ms} s, decode floor ${md} s (medians of $RUNS), ratio $(ratio "$ms" "$md") (target <= 1.3); load $(load_avg)"
