#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): go vet, then every package's tests.
#
# On a fresh machine most of the first run is compiling: the dependencies of unstick's own
# packages, and the test bed's programs from the Go module proxy (kube-apiserver and etcd,
# kubectl, kube-controller-manager and kube-scheduler, KWOK, the system-upgrade-controller and
# Fleet; see docs/testbed.md). The test bed is built in one module graph with unstick's own
# versions (internal/testenv/bedmodule.go), so client-go and the rest compile once for both. go
# vet goes first and compiles them; the test bed's programs then build in the background beside
# the test binaries' compiles, instead of when the first test needs each, and tests that get
# there first wait on the same file locks. (Two go commands compiling the same package at once
# both compile it: the build cache shares only what is finished.) With every program already
# cached (any later run) the background step finds them and ends in seconds.
#
# The tests build as the release does (static, -trimpath: see hack/release.sh), so the packages
# compiled for go vet and the test binaries are the ones hack's release-build test links
# instead of compiling them a second time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CGO_ENABLED=0 GOFLAGS="-trimpath${GOFLAGS:+ $GOFLAGS}"

status=0
go vet ./... || status=$?
if [ "$status" -ne 0 ]; then
  exit "$status"
fi

log="$(mktemp "${TMPDIR:-/tmp}/unstick-testbed-build.XXXXXX")"
go run ./hack/testbed binaries >"$log" 2>&1 &
build=$!
trap 'kill "$build" 2>/dev/null || true' INT TERM
echo "test.sh: building the test bed's programs in the background (log: $log)" >&2

# internal/e2e is named first so that it takes one of go test's two test slots (-p is the
# number of cores) as soon as it is compiled: it is the longest package (about 30 minutes warm,
# 41 on a fresh machine) and, listed in its place, it waited for a free slot until minute 18.6
# of a cold run and then ended the run (docs/performance.md).
#
# go vet above ran every analyzer over every package and its tests; -vet=off keeps go test from
# running its smaller set again (it would first recompute the facts of every dependency).
go test -count=1 -timeout 60m -vet=off ./internal/e2e ./... || status=$?

if ! wait "$build"; then
  echo "test.sh: building the test bed's programs failed; the end of $log:" >&2
  tail -n 40 "$log" >&2
  [ "$status" -ne 0 ] || status=1
else
  rm -f "$log"
fi
exit "$status"
