#!/usr/bin/env bash
# The real-controllers test bed: a kube-apiserver + etcd (with the Fleet, SUC, Rancher and
# CAPI CRDs), kube-controller-manager and kube-scheduler of the same release, and KWOK playing
# the nodes' kubelets. The first start builds every program from the Go module proxy (minutes).
#
#   hack/testbed.sh start DIR [--fleet] [--gitjob] [--suc]
#                                 start in the background; writes DIR/kubeconfig. --fleet adds
#                                 the real Fleet controller, a downstream bed and its agent;
#                                 --gitjob also Fleet's gitjob controller (implies --fleet);
#                                 --suc the real system-upgrade-controller
#   hack/testbed.sh stop DIR      stop it and remove what start wrote
#   hack/testbed.sh binaries      build every program of the test bed and print their paths
#   hack/testbed.sh node-down DIR NODE   stop NODE's kubelet (Ready=Unknown within 20s)
#   hack/testbed.sh node-up DIR NODE     start it again
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

abs() { case "$1" in /*) printf '%s' "$1" ;; *) printf '%s' "$PWD/$1" ;; esac; }

args=("$@")
# Paths are made absolute here because the tool runs from the repository root.
case "${1:-}" in
  start|stop|node-down|node-up) [ $# -ge 2 ] && args[1]="$(abs "$2")" ;;
esac

cd "$root"
exec go run ./hack/testbed "${args[@]}"
