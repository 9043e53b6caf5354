# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2034 # POLICY_DENIAL is for the scripts that source this
# shellcheck disable=SC2153 # RAILS is the sourcing script's
# The scenario kind/e2e.sh and tests/k8s/e2e.sh (and its DRA mode,
# tests/k8s/dra.sh) share: the counters and check(), the fabric's addressing
# plan, the pod manifest (pod.yaml), the admission and CNI refusal of another
# tenant's pod, check_pod (everything one running pod must show) and the NICs
# coming home. Sourced after scripts/lib/{log,wait,template}.sh, not run. The
# sourcing script defines how to reach the cluster and the node:
#   kctl ARGS...                      kubectl for the cluster
#   in_pod NAMESPACE NAME COMMAND...  COMMAND's output in the pod's netns
#   on_node NODE COMMAND...           COMMAND's output in the node's netns
#   node_fs NODE COMMAND...           COMMAND's output with the node's files
#   node_number NODE                  n of the node (1, 2, ...)
#   restore_binding                   the admission policy's binding applied again
#   RAILS                             the rails' indexes on a node (0 1 2 3)

CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

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

# The scenario's pod: pod_yaml NAMESPACE NAME NODE RESOURCE COUNT
pod_yaml() {
  render "$CLUSTER_DIR/pod.yaml" NAMESPACE="$1" NAME="$2" NODE="$3" RESOURCE="$4" COUNT="$5"
}
pod_env() { # pod_env NAMESPACE NAME VARIABLE: its value, "" if unset or the pod is not there
  { kctl exec -n "$1" "$2" -- env 2>/dev/null || true; } | sed -n "s/^$3=//p"
}
pod_events() { # pod_events NAMESPACE NAME: "reason: message" per event of the pod
  kctl get events -n "$1" --field-selector "involvedObject.name=$2" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' 2>/dev/null || true
}
not() { ! "$@"; }

# The tenants' namespaces have their default service accounts (pods wait for them)
wait_service_accounts() {
  local n
  for n in team-a team-b; do
    wait_for 60 "service account $n/default" kctl get serviceaccount default -n "$n" || true
  done
}

# team-b/intruder asks for tenant-a's resource on NODE: INTRUDER holds its
# manifest, denied_dry says whether the server denies it (out: its answer)
intruder_on() { # intruder_on NODE
  INTRUDER=$(pod_yaml team-b intruder "$1" railgate.io/tenant-a 2)
}
denied_dry() { ! out=$(kctl apply --dry-run=server -f - <<<"$INTRUDER" 2>&1) && contains "$out" "railgate:"; }
admitted_dry() { kctl apply --dry-run=server -f - <<<"$INTRUDER"; }

# The admission policy denies team-b/intruder on NODE; without its binding the
# pod reaches the node (n) and the CNI refuses it, then the binding is back:
# check_intruder NODE
check_intruder() {
  local node=$1 n k events
  n=$(node_number "$node")
  section "a team-b pod asking for tenant-a's resource: the admission policy denies it"
  intruder_on "$node"
  # a new policy takes a few seconds to be enforced
  wait_for 60 "the policy to be enforced" denied_dry || true
  if out=$(kctl apply -f - <<<"$INTRUDER" 2>&1); then denied=false; else denied=true; fi
  check "kubectl apply of team-b/intruder fails" $denied
  check "the denial is the policy's: $(head -c 300 <<<"$out")" contains "$out" "$POLICY_DENIAL"
  check "the denial names ValidatingAdmissionPolicy railgate-tenant-resources" contains "$out" "railgate-tenant-resources"
  check "team-b/intruder does not exist" equals "$(kctl get pod -n team-b intruder -o name 2>/dev/null || true)" ""

  section "without the policy's binding the same pod reaches the node: the CNI refuses it"
  kctl delete validatingadmissionpolicybinding railgate-tenant-resources >/dev/null
  wait_for 60 "the binding's removal to take effect" admitted_dry || true
  check "kubectl apply of team-b/intruder succeeds" kctl apply -f - <<<"$INTRUDER"
  wait_for 120 "the sandbox to fail" cni_refused || true
  events=$(pod_events team-b intruder)
  check "team-b/intruder was scheduled to $node" \
    equals "$(kctl get pod -n team-b intruder -o jsonpath='{.spec.nodeName}')" "$node"
  check "its events carry the CNI's refusal: $(grep -m1 'is not one of that tenant' <<<"$events" | head -c 400)" \
    contains "$events" "namespace team-b is not one of that tenant's; nothing was moved"
  check "the refusal is FailedCreatePodSandBox" contains "$events" "FailedCreatePodSandBox"
  check "team-b/intruder stays in ContainerCreating" equals \
    "$(kctl get pod -n team-b intruder -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')" \
    ContainerCreating
  for k in 0 1; do
    check "$node: rail$k stayed on the node with its address" \
      contains "$(on_node "$node" ip -o -4 addr show dev "rail$k")" "inet $(host_address "$n" "$k")"
  done
  kctl delete pod -n team-b intruder --wait=true --timeout=60s >/dev/null
  restore_binding
  wait_for 60 "the policy to be enforced again" denied_dry || true
  check "with the binding back the policy denies team-b/intruder again" denied_dry
}

cni_refused() { pod_events team-b intruder | grep -q 'is not one of that tenant'; }
home() { contains "$(on_node "$1" ip -o -4 addr show dev "rail$2")" "$3"; } # home NODE K WANT

# Every rail of NODE back on it with the node's address, up, MTU 1500, and no
# attachment state left: check_home NODE
check_home() {
  local node=$1 n k want
  n=$(node_number "$node")
  for k in "${RAILS[@]}"; do
    want="inet $(host_address "$n" "$k")"
    # the runtime tears the sandbox down after the pod object is gone
    wait_for 60 "$node rail$k home" home "$node" "$k" "$want" || true
    check "$node: rail$k back on the node, $want" home "$node" "$k" "$want"
    check "$node: rail$k up, mtu 1500" contains "$(on_node "$node" ip -o link show dev "rail$k")" "mtu 1500"
  done
  check "$node: no attachment state left in /var/lib/railgate/attachments" \
    equals "$(node_fs "$node" ls -A /var/lib/railgate/attachments 2>/dev/null)" ""
}
