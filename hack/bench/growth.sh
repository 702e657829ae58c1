#!/usr/bin/env bash
# Growth of the whole command: wall time, CPU time (user + system: the work done, which
# other load on the machine disturbs far less than wall time) and peak RSS of `unstick scan --from BUNDLE -o json -q`
# (/usr/bin/time -v) for generated management bundles of N = 500, 1,000, 2,000 and 5,000
# clusters (go run ./hack/genfleet), medians of RUNS (default 3) runs each, then the ratios
# 500 → 5,000 (targets: time ×≤ 12, memory ×≤ 12; peak RSS at 5,000 < 1 GiB).
#
#   hack/bench/growth.sh             SIZES="500 5000" hack/bench/growth.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SIZES="${SIZES:-500 1000 2000 5000}"
[ -x /usr/bin/time ] || { log "growth.sh needs GNU time as /usr/bin/time"; exit 1; }
build_unstick

declare -A T C M
for n in $SIZES; do
  dir="$(fleet "$n")"
  ts=() cs=() ms=()
  for ((i = 1; i <= RUNS; i++)); do
    rc=0
    /usr/bin/time -v -o "$work/time.txt" "$work/unstick" scan --from "$dir" -o json -q >/dev/null || rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 3 ] || { log "unstick scan exited $rc"; cat "$work/time.txt" >&2; exit 1; }
    t="$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")"
    c="$(awk -F': ' '/User time \(seconds\)|System time \(seconds\)/ { s += $2 } END { print s }' "$work/time.txt")"
    m="$(awk -F': ' '/Maximum resident set size/ { printf "%.1f\n", $2 / 1024 }' "$work/time.txt")"
    log "N=$n run $i: ${t} s wall, ${c} s CPU, ${m} MiB peak RSS (load $(load_avg))"
    ts+=("$t") cs+=("$c") ms+=("$m")
  done
  T[$n]="$(printf '%s\n' "${ts[@]}" | median)"
  C[$n]="$(printf '%s\n' "${cs[@]}" | median)"
  M[$n]="$(printf '%s\n' "${ms[@]}" | median)"
  echo "growth N=$n: ${T[$n]} s wall, ${C[$n]} s CPU, ${M[$n]} MiB peak RSS (medians of $RUNS); load $(load_avg)"
done
first="${SIZES%% *}" last="${SIZES##* }"
if [ "$first" != "$last" ]; then
  echo "growth $first -> $last: wall time x$(ratio "${T[$last]}" "${T[$first]}"), CPU time x$(ratio "${C[$last]}" "${C[$first]}"), memory x$(ratio "${M[$last]}" "${M[$first]}") (targets x<=12); peak RSS at $last: ${M[$last]} MiB (target < 1024)"
fi
