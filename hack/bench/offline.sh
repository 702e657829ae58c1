#!/usr/bin/env bash
# Offline scan vs the decode floor at N = 5,000 clusters, whole programs side by side: the
# real CLI, `unstick scan --from BUNDLE -o json -q`, and hack/bench/decodefloor, which reads
# every file of the same bundle and decodes each JSON document into `any` on GOMAXPROCS
# workers and does nothing else. Both run under /usr/bin/time -v, RUNS times (default 5) in
# alternation, with the load average taken before each run. Prints each run, the medians of
# wall time, CPU time (user + system) and peak RSS, and the ratios CLI / floor (targets: wall
# <= 1.0, peak RSS <= 2.0).
#
#   hack/bench/offline.sh            RUNS=9 N=2000 hack/bench/offline.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${N:-5000}"
RUNS="${RUNS:-5}"
[ -x /usr/bin/time ] || { log "offline.sh needs GNU time as /usr/bin/time"; exit 1; }
build_unstick
[ -x "$work/decodefloor" ] || build_program "$work/decodefloor" ./hack/bench/decodefloor
dir="$(fleet "$N")"

# measure NAME CMD...: runs CMD under /usr/bin/time -v; prints "wall cpu rss_mib".
measure() {
  local name="$1"; shift
  local rc=0
  /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null || rc=$?
  # unstick scan exits 3 when it finds something (the generated fleet has stuck clusters).
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || { log "$name exited $rc"; cat "$work/time.txt" >&2; exit 1; }
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; w = s }
    /User time \(seconds\)|System time \(seconds\)/ { c += $2 }
    /Maximum resident set size/ { m = $2 / 1024 }
    END { printf "%.3f %.3f %.1f\n", w, c, m }' "$work/time.txt"
}

cw=() cc=() cm=() fw=() fc=() fm=()
for ((i = 1; i <= RUNS; i++)); do
  l1="$(load_avg)"
  read -r w c m < <(measure unstick "$work/unstick" scan --from "$dir" -o json -q)
  cw+=("$w") cc+=("$c") cm+=("$m")
  l2="$(load_avg)"
  read -r fw1 fc1 fm1 < <(measure decodefloor "$work/decodefloor" "$dir")
  fw+=("$fw1") fc+=("$fc1") fm+=("$fm1")
  log "run $i: unstick ${w} s wall, ${c} s CPU, ${m} MiB (load $l1) | floor ${fw1} s wall, ${fc1} s CPU, ${fm1} MiB (load $l2)"
done
med() { printf '%s\n' "$@" | median; }
mw="$(med "${cw[@]}")" mc="$(med "${cc[@]}")" mm="$(med "${cm[@]}")"
fwm="$(med "${fw[@]}")" fcm="$(med "${fc[@]}")" fmm="$(med "${fm[@]}")"
echo "offline N=$N, medians of $RUNS alternating runs: unstick scan ${mw} s wall, ${mc} s CPU, ${mm} MiB peak RSS; decode floor ${fwm} s wall, ${fcm} s CPU, ${fmm} MiB peak RSS"
echo "offline N=$N ratios unstick / floor: wall $(ratio "$mw" "$fwm") (target <= 1.0), CPU $(ratio "$mc" "$fcm"), peak RSS $(ratio "$mm" "$fmm") (target <= 2.0); load $(load_avg)"
