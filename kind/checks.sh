# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2034 # POLICY_DENIAL is for the scripts that source this
# The assertions kind/e2e.sh and tests/k8s/e2e.sh share: the counters and
# check(), the fabric's addressing plan, and check_pod, everything one running
# pod must show. Sourced, not run. The sourcing script defines how to look:
#   pod_env NAMESPACE NAME VARIABLE   the container's value of VARIABLE
#   in_pod NAMESPACE NAME COMMAND...  COMMAND's output in the pod's netns
#   on_node NODE COMMAND...           COMMAND's output in the node's netns
#   node_number NODE                  n of the node (1, 2, ...)

passed=0
failed=0
check() { # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
    printf '  ok   %s\n' "$what"
  else
    failed=$((failed + 1))
    printf '  FAIL %s\n' "$what"
  fi
}
section() { printf '\n== %s\n' "$*"; }
contains() { # contains HAYSTACK NEEDLE
  case "$1" in *"$2"*) return 0 ;; *) return 1 ;; esac
}
equals() { [ "$1" = "$2" ]; }

# rail k's second octet: 100 for tenant-a's rails 0-1, 200 for tenant-b's 2-3 (as in
# tests/e2e/fabric.c and kind/values.yaml)
octet() {
  if [ "$1" -lt 2 ]; then echo 100; else echo 200; fi
}

# The address node n itself gives rail k (restored by the CNI's DEL):
# host_address N K
host_address() {
  echo "10.$(octet "$2").$2.$((100 + $1))/24"
}

# The policy's denial of a team-b pod asking for tenant-a's resource (deploy/admission.yaml).
POLICY_DENIAL="railgate: container(s) main of this pod request a railgate.io resource that namespace team-b may not use; it may use only railgate.io/tenant-b"

# Everything one pod must show: check_pod NAMESPACE NAME TENANT NODE TABLE RAILS...
check_pod() {
  local ns=$1 name=$2 tenant=$3 node=$4 table=$5
  shift 5
  local owned=" $* " n units rails want_if k o addr
  n=$(node_number "$node")
  units=$(pod_env "$ns" "$name" RAILGATE_UNITS)
  rails=$(pod_env "$ns" "$name" RAILGATE_RAILS)
  check "$ns/$name env RAILGATE_TENANT=$tenant" equals "$(pod_env "$ns" "$name" RAILGATE_TENANT)" "$tenant"
  check "$ns/$name env RAILGATE_UNITS=$units: two units" equals "$(tr ',' '\n' <<<"$units" | grep -c .)" 2
  want_if="=$units" # unit rail<k> is interface rail<k>
  check "$ns/$name env NCCL_SOCKET_IFNAME=$want_if names exactly its rails" \
    equals "$(pod_env "$ns" "$name" NCCL_SOCKET_IFNAME)" "$want_if"
  check "$ns/$name env RAILGATE_RAILS=$rails matches its units" equals "$rails" "${units//rail/}"
  for k in ${rails//,/ }; do
    o=$(octet "$k")
    addr=10.$o.$k.$((10 + n))
    check "$ns/$name: rail $k belongs to $tenant" contains "$owned" " $k "
    check "$ns/$name has rail$k with inet $addr/24" \
      contains "$(in_pod "$ns" "$name" ip -o -4 addr show dev "rail$k")" "inet $addr/24"
    check "$ns/$name rail$k: mtu 9000, up" \
      contains "$(in_pod "$ns" "$name" ip -o link show dev "rail$k")" "mtu 9000"
    check "$ns/$name table $((table + k)): default via 10.$o.$k.1 dev rail$k" \
      contains "$(in_pod "$ns" "$name" ip route show table $((table + k)))" "default via 10.$o.$k.1 dev rail$k"
    check "$ns/$name table $((table + k)): 10.$o.0.0/16 via 10.$o.$k.1 dev rail$k" \
      contains "$(in_pod "$ns" "$name" ip route show table $((table + k)))" "10.$o.0.0/16 via 10.$o.$k.1 dev rail$k"
    check "$ns/$name rule: from $addr lookup $((table + k))" \
      contains "$(in_pod "$ns" "$name" ip rule show)" "from $addr lookup $((table + k))"
    check "$ns/$name has /dev/railgate/gpu$k" \
      contains "$(in_pod "$ns" "$name" ls /dev/railgate)" "gpu$k"
    check "$node: rail$k left the node" equals "$(on_node "$node" ip -o link show dev "rail$k")" ""
  done
  addr=$(in_pod "$ns" "$name" ip -br addr) # busybox's ip has no -br
  [ -n "$addr" ] || addr=$(in_pod "$ns" "$name" ip -o -4 addr | awk '{ print $2, $4 }')
  printf '     %s/%s on %s: %s\n' "$ns" "$name" "$node" "$(tr '\n' ';' <<<"$addr")"
}
