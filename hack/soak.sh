#!/usr/bin/env bash
# Soak test of `unstick serve` (issue 8): a real kube-apiserver with the example fleet's
# management cluster, serve watching it, 50 object updates per second for 30 minutes; fails
# when serve's resident memory grows more than 10 % after a 5-minute warm-up, its goroutines
# grow, or its findings change. Flags pass through (go run ./hack/soak -h lists them):
#
#   hack/soak.sh                           # the full run (about 32 minutes)
#   hack/soak.sh -duration 3m -warmup 1m   # a short one
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec go run ./hack/soak "$@"
