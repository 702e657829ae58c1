#!/usr/bin/env bash
# Runs every fuzz target of unstick, one after another, each for DURATION (default 10m).
#
#   hack/fuzz.sh [DURATION] [FuzzName ...]
#
# With names, only those targets run. Each run is niced and uses one worker, so the machine
# stays usable. A failing input is written by `go test` under the package's
# testdata/fuzz/<FuzzName>/ and then runs as a regression test with every `go test ./...`;
# commit it together with the fix. Logs go to $FUZZ_LOG_DIR (default: a new temporary
# directory); a summary line per target (target, duration, execs, result) is printed at the
# end and the script exits non-zero when any target failed. FUZZ_MINIMIZE (default 5s) bounds
# the minimization of each new input.
set -u

cd "$(dirname "$0")/.."

duration=${1:-10m}
shift || true

# package : target
targets=(
	./internal/source:FuzzLoadFile
	./internal/source:FuzzLoadTarGz
	./internal/helmrelease:FuzzDecode
	./internal/classify:FuzzClassify
	./internal/imageref:FuzzParse
	./internal/remediate/execute:FuzzReadJournal
	./internal/report:FuzzRenderLoaded
	./internal/report:FuzzRenderStrings
	./internal/textsafe:FuzzText
)

want() {
	[ $# -eq 0 ] && return 0
	local t
	for t in "${selected[@]}"; do
		[ "$t" = "$1" ] && return 0
	done
	return 1
}
selected=("$@")

logdir=${FUZZ_LOG_DIR:-$(mktemp -d -t unstick-fuzz.XXXXXX)}
mkdir -p "$logdir"
summary=()
status=0
for spec in "${targets[@]}"; do
	pkg=${spec%%:*}
	name=${spec##*:}
	if [ ${#selected[@]} -gt 0 ] && ! want "$name"; then
		continue
	fi
	log="$logdir/$name.log"
	corpus="$pkg/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null | wc -l)
	start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	echo "== $name ($pkg) for $duration, from $start; log: $log"
	# Every new coverage input is minimized first, up to -fuzzminimizetime (60s by default):
	# on a busy machine that would leave almost no time to fuzz.
	nice -n 19 go test -run '^$' -fuzz "^${name}\$" -fuzztime "$duration" -fuzzminimizetime "${FUZZ_MINIMIZE:-5s}" -parallel 1 "$pkg" >"$log" 2>&1
	rc=$?
	end=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	last=$(grep -E '^fuzz: elapsed:' "$log" | tail -n 1)
	execs=$(printf '%s\n' "$last" | sed -n 's/.*execs: \([0-9]*\).*/\1/p')
	after=$(ls "$corpus" 2>/dev/null | wc -l)
	if [ $rc -eq 0 ]; then
		result="no failure"
	elif [ "$after" -eq "$before" ] && grep -q 'context deadline exceeded' "$log"; then
		# Go 1.26's fuzz coordinator may report its own -fuzztime deadline as a failure when
		# a worker is busy as time runs out (golang/go#75804, fixed in Go 1.27): no input
		# failed and none was written.
		result="no failure (the run ended on Go's fuzztime deadline race, golang/go#75804)"
	else
		result="FAILED (exit $rc): $(grep -E -m1 -- '--- FAIL|panic:|Failing input written to' "$log")"
		status=1
	fi
	summary+=("$name	$start	$end	$duration	execs=${execs:-?}	$result")
	echo "   ${last:-no progress line}"
done

echo
echo "target	start	end	duration	execs	result"
printf '%s\n' "${summary[@]}"
exit $status
