#!/usr/bin/env bash
# The manual runbook of the field reports against `unstick scan`, at N = 500 clusters.
#
# A generated management bundle (internal/fleetgen) is replayed into a real kube-apiserver.
# The runbook is what operators do by hand, scripted: list the Fleet clusters, then for each
# one `kubectl get cluster -o yaml` (heartbeat, agent generation), `kubectl get
# bundledeployments -n <cluster namespace>` (bundles not deployed or not ready) and
# `kubectl describe` of the agent's BundleDeployment (is the new agent applied?), deciding
# stuck or not in plain bash (no grep, no jq). kubectl is built from the same
# k8s.io/kubernetes release as the test server (internal/testenv Kubectl), never the system's.
# Both are judged at the bundle's collection time (unstick --now). Prints both times (the
# runbook once, RUNBOOK_RUNS to repeat; unstick the median of RUNS), the ratio (target ≥ 50)
# and whether both found the same stuck clusters (unstick's set from -o json: every Fleet
# Cluster with a finding at warning or above on it or on one of its BundleDeployments).
#
#   hack/bench/runbook.sh            N=100 hack/bench/runbook.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N="${N:-500}"
RUNBOOK_RUNS="${RUNBOOK_RUNS:-1}"
build_unstick
build_tools
kubectl="$("$work/benchtool" kubectl)"
bundle="$(fleet "$N")"
start_server runbook "$bundle"

# A heartbeat older than twice the agents' 15-minute check-in is stale.
stale_before="$(date -u -d "$collected_at - 30 minutes" +%Y-%m-%dT%H:%M:%SZ)"

# runbook OUT: writes "cluster NAME" for each stuck cluster to OUT and "NAMESPACE NAME" of every
# cluster to OUT.map.
runbook() {
  local out="$1" k=("$kubectl" --kubeconfig "$kc")
  : >"$out"
  : >"$out.map"
  local ns name rest
  while read -r ns name rest; do
    local line cns="" seen="" want="" have="" why=()
    # 1. The Fleet Cluster: heartbeat and agent generation.
    while IFS= read -r line; do
      case "$line" in
        "  namespace: "*) [ -z "$cns" ] && [[ "$line" == *"cluster-"* ]] && cns="${line#*: }" ;;
        *"  lastSeen: "*) seen="${line#*: }"; seen="${seen//\"/}" ;;
        *"redeployAgentGeneration: "*) want="${line#*: }" ;;
        *"agentDeployedGeneration: "*) have="${line#*: }" ;;
      esac
    done < <("${k[@]}" get clusters.fleet.cattle.io -n "$ns" "$name" -o yaml)
    printf '%s %s\n' "$cns" "$name" >>"$out.map"
    if [ -z "$seen" ]; then why+=("agent never checked in")
    elif [[ "$seen" < "$stale_before" ]]; then why+=("agent last seen $seen"); fi
    if [ -n "$want" ] && [ "$want" != "${have:-0}" ]; then why+=("agent generation $have, wanted $want"); fi
    # 2. Its BundleDeployments: deployed, and ready (the STATUS column is the Ready message).
    local bd deployed monitored status
    while read -r bd deployed monitored status; do
      [ "$bd" = NAME ] && continue
      if [ "$deployed" != True ] || [ -n "$status" ]; then why+=("bundle $bd: deployed=$deployed ${status}"); fi
    done < <("${k[@]}" get bundledeployments -n "$cns")
    # 3. The agent's BundleDeployment: is the wanted agent applied? (Deployed condition)
    local last_status="" cond_msg="" spec_id="" applied_id=""
    while IFS= read -r line; do
      line="${line#"${line%%[! ]*}"}"
      case "$line" in
        "Deployment ID:"*) spec_id="${line#*:}" ;;
        "Applied Deployment ID:"*) applied_id="${line#*:}" ;;
        "Message:"*) cond_msg="${line#*:}" ;;
        "Status:"*) last_status="${line#*:}"; last_status="${last_status// /}" ;;
        "Type:"*)
          if [ "${line// /}" = "Type:Deployed" ] && [ "$last_status" = False ]; then
            why+=("agent bundle not applied:${cond_msg}")
          fi
          cond_msg="" ;;
      esac
    done < <("${k[@]}" describe bundledeployments -n "$cns" "fleet-agent-$name")
    # A new agent handed out but not applied yet, without an error, is in progress: the
    # runbook cannot tell for how long, so it is not called stuck (neither does unstick).
    if [ "${#why[@]}" -gt 0 ]; then
      printf 'cluster %s\n' "$name" >>"$out"
      printf '  %s stuck: %s\n' "$name" "${why[*]}" >>"$out.why"
    fi
  done < <("${k[@]}" get clusters.fleet.cattle.io -A --no-headers)
}

rb=()
for ((i = 1; i <= RUNBOOK_RUNS; i++)); do
  rm -f "$work/runbook.txt.why"
  t0="$(now_s)"
  runbook "$work/runbook.txt"
  t="$(since "$t0")"
  log "runbook run $i: $t s, $(wc -l <"$work/runbook.txt") stuck of $(wc -l <"$work/runbook.txt.map") (load $(load_avg))"
  rb+=("$t")
done
us=()
for ((i = 1; i <= RUNS; i++)); do
  t0="$(now_s)"
  rc=0
  "$work/unstick" scan --kubeconfig "$kc" --now "$collected_at" -o json -q --offline-registry >"$work/unstick.json" || rc=$?
  t="$(since "$t0")"
  [ "$rc" = 0 ] || [ "$rc" = 3 ] || { log "unstick scan exited $rc"; exit 1; }
  log "unstick run $i: $t s (load $(load_avg))"
  us+=("$t")
done
mr="$(printf '%s\n' "${rb[@]}" | median)"
mu="$(printf '%s\n' "${us[@]}" | median)"

# unstick's stuck set: Fleet Clusters named by a finding, or owning a BundleDeployment's namespace.
"$work/benchtool" stuck "$work/unstick.json" | while read -r kind what; do
  if [ "$kind" = cluster ]; then printf 'cluster %s\n' "$what"
  else awk -v ns="$what" '$1 == ns { print "cluster " $2 }' "$work/runbook.txt.map"; fi
done | sort -u >"$work/unstick.txt"
sort -u -o "$work/runbook.txt" "$work/runbook.txt"
if diff "$work/runbook.txt" "$work/unstick.txt" >"$work/stuck.diff"; then
  same="same $(wc -l <"$work/unstick.txt") stuck clusters"
else
  same="DIFFERENT stuck sets (< runbook only, > unstick only):"$'\n'"$(cat "$work/stuck.diff")"
fi
echo "runbook N=$N: kubectl runbook ${mr} s (median of $RUNBOOK_RUNS), unstick scan ${mu} s (median of $RUNS), ratio x$(ratio "$mr" "$mu") (target >= 50); $same; load $(load_avg)"
