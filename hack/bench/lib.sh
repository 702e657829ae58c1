# Shared by the hack/bench scripts (sourced, not run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

# RUNS: repetitions a figure is the median of. BENCH_DIR: where binaries, bundles and test
# servers go (a fresh temporary directory by default, removed at the end).
RUNS="${RUNS:-3}"
if [ -n "${BENCH_DIR:-}" ]; then
  mkdir -p "$BENCH_DIR"
  work="$(cd "$BENCH_DIR" && pwd)"
  keep=1
else
  work="$(mktemp -d "${TMPDIR:-/tmp}/unstick-bench.XXXXXX")"
  keep=0
fi

cleanups=()
cleanup() {
  local i
  for ((i = ${#cleanups[@]} - 1; i >= 0; i--)); do eval "${cleanups[i]}" || true; done
  if [ "$keep" = 0 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

log() { printf '%s\n' "$*" >&2; }
load_avg() { cut -d' ' -f1-3 /proc/loadavg; }

# median of the numbers on stdin
median() {
  sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) printf "%.3f\n", a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
# ratio A B → A/B with two decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a / b }'; }
now_s() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.3f\n", b - a }'; }

# build_program OUT PKG builds PKG and installs a copy as OUT, as a release archive or a package
# installs it. How many of a binary's pages a process maps depends on how the file entered the
# page cache: the same unstick binary ran with 42-46 MiB of file-backed RSS straight from
# `go build` (the linker writes its output through a shared mapping) and 30-31 MiB as a copy
# (docs/performance.md, "What a process pays before it reads anything"), a difference that
# would count against any peak-RSS figure.
build_program() {
  go build -o "$1.link" "$2" && cp "$1.link" "$1" && rm -f "$1.link"
}
build_unstick() {
  [ -x "$work/unstick" ] || { log "building unstick"; build_program "$work/unstick" ./cmd/unstick; }
}
build_tools() {
  [ -x "$work/benchtool" ] || go build -o "$work/benchtool" ./hack/bench/benchtool
  [ -x "$work/testenv" ] || go build -o "$work/testenv" ./hack/testenv
}

# fleet N → path of a generated management bundle of N clusters (internal/fleetgen, seed 1)
fleet() {
  local d="$work/fleet-$1"
  if [ ! -f "$d/unstick-bundle.yaml" ]; then
    rm -rf "$d"
    go run ./hack/genfleet -n "$1" -out "$d" >&2
  fi
  printf '%s\n' "$d"
}

# The moment fleetgen's bundles were collected: live scans are judged at it (--now), as the
# offline scan of the same bundle is.
collected_at="2026-11-28T09:30:00Z"

# start_server NAME BUNDLE: a real kube-apiserver + etcd (hack/testenv) with BUNDLE replayed,
# stopped when the script ends; sets $kc to its kubeconfig (direct to the server). Not to be
# called in a subshell: the stop is registered in this shell.
start_server() {
  build_tools
  local dir="$work/env-$1"
  "$work/testenv" start "$dir" >&2
  cleanups+=("'$work/testenv' stop '$dir' >/dev/null")
  local t0; t0="$(now_s)"
  "$work/benchtool" load "$dir/kubeconfig-direct" "$2" >&2
  log "replayed $2 in $(since "$t0") s"
  kc="$dir/kubeconfig-direct"
}
