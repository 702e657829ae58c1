#!/usr/bin/env bash
# A real kube-apiserver + etcd with the Fleet and SUC CRDs, for manual testing, demos and
# benchmarks. The first start builds both binaries from the Go module proxy (minutes).
#
#   hack/testenv.sh start DIR [--no-crds]     start in the background; writes DIR/kubeconfig
#   hack/testenv.sh load DIR BUNDLE [CLUSTER]  replay an offline bundle (dir or .tar.gz) into it;
#                                              CLUSTER picks clusters/CLUSTER/ of a multi-cluster bundle
#   hack/testenv.sh stop DIR                   stop it and remove what start wrote
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

abs() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s' "$PWD/$1" ;; esac; }

args=("$@")
# Paths are made absolute here because the tool runs from the repository root.
case "${1:-}" in
  start|stop) [ $# -ge 2 ] && args[1]="$(abs "$2")" ;;
  load) [ $# -ge 2 ] && args[1]="$(abs "$2")"; [ $# -ge 3 ] && args[2]="$(abs "$3")" ;;
esac

cd "$root"
exec go run ./hack/testenv "${args[@]}"
