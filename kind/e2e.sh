#!/usr/bin/env bash
# railgate end to end on kind: the scenario of tests/e2e/fabric.c against a real
# kubelet, containerd, scheduler and admission. The one command:
#
#   bash kind/e2e.sh         # kind/up.sh, the scenario, kind/down.sh
#
# RAILGATE_KIND_KEEP=1 keeps the cluster afterwards (a cluster that was there
# before is always kept). Exit 0: every check passed; 1: a check failed; 77: no
# Docker engine, skipped.
#
#   - each worker offers railgate.io/tenant-a: 2 and railgate.io/tenant-b: 2
#   - a team-b pod asking for railgate.io/tenant-a is denied at admission with
#     the policy's message, and never exists
#   - team-a/a1 on worker 1 and team-a/a2 on worker 2 get 2 tenant-a units each,
#     team-b/b1 on worker 1 gets 2 tenant-b units: their environment names
#     exactly their rails; ip in each pod shows rail<k> with its address, MTU
#     9000, the rail's table (default via the rail gateway, the tenant prefix)
#     and the source rule; the GPU device nodes are there; the NICs left the node
#   - the pods are deleted: every rail is back on its node, up, with the node's
#     address, and no attachment state is left
#
# Packets do not flow between pods here (the rails lead nowhere);
# tests/e2e/fabric.c checks reachability and isolation with real packets.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

need_docker
need_tools

created=false
if ! cluster_exists; then
  created=true
fi
bash "$KIND_DIR/up.sh"

cleanup() {
  kctl delete pod -n team-a a1 a2 --ignore-not-found --wait=false >/dev/null 2>&1 || true
  kctl delete pod -n team-b b1 intruder --ignore-not-found --wait=false >/dev/null 2>&1 || true
  if $created && [ "${RAILGATE_KIND_KEEP:-0}" != 1 ]; then
    bash "$KIND_DIR/down.sh" || true
  fi
}
trap cleanup EXIT

# pod_yaml NAMESPACE NAME NODE RESOURCE COUNT
pod_yaml() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $2
  namespace: $1
spec:
  nodeSelector:
    kubernetes.io/hostname: $3
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: $POD_IMAGE
      imagePullPolicy: Never
      command: ["sleep", "infinity"]
      resources:
        limits:
          $4: "$5"
EOF
}

allocatable() { # allocatable NODE TENANT
  kctl get node "$1" -o jsonpath="{.status.allocatable.railgate\\.io/$2}"
}

pod_env() { # pod_env NAMESPACE NAME VARIABLE: its value, "" if unset or the pod is not there
  { kctl exec -n "$1" "$2" -- env 2>/dev/null || true; } | sed -n "s/^$3=//p"
}

in_pod() { # in_pod NAMESPACE NAME COMMAND...: its output, "" if it fails
  local ns=$1 name=$2
  shift 2
  kctl exec -n "$ns" "$name" -- "$@" 2>/dev/null || true
}

on_node() { # on_node NODE COMMAND...: its output, "" if it fails
  local node=$1
  shift
  docker exec "$node" "$@" 2>/dev/null || true
}

section "device plugins register with kubelet on each worker"
for node in "${WORKERS[@]}"; do
  check "$node allocatable railgate.io/tenant-a: 2" equals "$(allocatable "$node" tenant-a)" 2
  check "$node allocatable railgate.io/tenant-b: 2" equals "$(allocatable "$node" tenant-b)" 2
done

section "a team-b pod asking for tenant-a's resource"
intruder=$(pod_yaml team-b intruder "${WORKERS[0]}" railgate.io/tenant-a 2)
# a new policy takes a few seconds to be enforced: wait for the server-side dry run to deny
for _ in $(seq 60); do
  if ! out=$(kctl apply --dry-run=server -f - <<<"$intruder" 2>&1) && contains "$out" "railgate:"; then
    break
  fi
  sleep 1
done
if out=$(kctl apply -f - <<<"$intruder" 2>&1); then denied=false; else denied=true; fi
check "kubectl apply of team-b/intruder fails" $denied
check "the denial is the policy's: $(head -c 300 <<<"$out")" \
  contains "$out" "$POLICY_DENIAL"
check "the denial names ValidatingAdmissionPolicy railgate-tenant-resources" contains "$out" "railgate-tenant-resources"
check "team-b/intruder does not exist" equals "$(kctl get pod -n team-b intruder -o name 2>/dev/null || true)" ""

section "pods start: tenant-a on both workers, tenant-b on worker 1"
pod_yaml team-a a1 "${WORKERS[0]}" railgate.io/tenant-a 2 | kctl apply -f -
pod_yaml team-a a2 "${WORKERS[1]}" railgate.io/tenant-a 2 | kctl apply -f -
pod_yaml team-b b1 "${WORKERS[0]}" railgate.io/tenant-b 2 | kctl apply -f -
for p in team-a/a1 team-a/a2 team-b/b1; do
  check "$p Ready" kctl wait --for=condition=Ready -n "${p%/*}" "pod/${p#*/}" --timeout=180s
done
check_pod team-a a1 tenant-a "${WORKERS[0]}" 100 0 1
check_pod team-a a2 tenant-a "${WORKERS[1]}" 100 0 1
check_pod team-b b1 tenant-b "${WORKERS[0]}" 200 2 3
check "team-b/b1 holds none of tenant-a's rails" \
  equals "$(in_pod team-b b1 ip -o link show | grep -cE ' rail[01][:@]' || true)" 0
for node in "${WORKERS[@]}"; do
  check "$node allocatable unchanged while in use (railgate.io/tenant-a: 2)" \
    equals "$(allocatable "$node" tenant-a)" 2
done

section "pods are deleted"
kctl delete pod -n team-a a1 a2 --wait --timeout=120s
kctl delete pod -n team-b b1 --wait --timeout=120s
for node in "${WORKERS[@]}"; do
  n=$(node_number "$node")
  for k in "${RAILS[@]}"; do
    want="inet $(host_address "$n" "$k")"
    for _ in $(seq 60); do # the runtime tears the sandbox down after the pod object is gone
      contains "$(on_node "$node" ip -o -4 addr show dev "rail$k")" "$want" && break
      sleep 1
    done
    check "$node: rail$k back, $want" contains "$(on_node "$node" ip -o -4 addr show dev "rail$k")" "$want"
    check "$node: rail$k up, mtu 1500" \
      contains "$(on_node "$node" ip -o link show dev "rail$k")" "mtu 1500"
  done
  check "$node: no attachment state left in /var/lib/railgate/attachments" \
    equals "$(on_node "$node" sh -c 'ls /var/lib/railgate/attachments 2>/dev/null')" ""
done

printf '\nkind e2e: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
