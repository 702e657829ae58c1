#!/usr/bin/env bash
# Every fleet-scale benchmark of issue 7, one after the other; the summary lines at the end.
# Takes about 30-40 minutes on 2 cores (the 5,000-cluster replay for live.sh and the
# kubectl runbook at 500 clusters are most of it). RUNS (default 3) applies to each.
#
#   hack/bench/all.sh 2>&1 | tee bench.log
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
summary=()
for s in offline growth registry runbook live; do
  echo "=== $s.sh (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  out="$("$here/$s.sh")"
  rc=$?
  printf '%s\n' "$out"
  [ "$rc" = 0 ] || out="$s.sh FAILED (exit $rc)"
  summary+=("$out")
done
echo
echo "=== summary ($(uname -m), $(nproc) cores, $(go env GOVERSION))"
printf '%s\n' "${summary[@]}"
