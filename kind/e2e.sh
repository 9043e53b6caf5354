#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railgate end to end on kind: the scenario of tests/e2e/fabric.c on a real
# cluster of one control plane and two workers (kubelet, containerd,
# scheduler, admission), railgate installed with its Helm chart from the image
# loaded with `kind load`. The one command (as root):
#
#   bash kind/e2e.sh         # Docker, kind/up.sh, the scenario, kind/down.sh
#
# Where no Docker engine answers it starts a private one for the run
# (kind/docker.sh: Debian's docker.io in a network namespace of its own) and
# stops it at the end. RAILGATE_KIND_KEEP=1 keeps the cluster (and a private
# engine, saying how to reach and stop it); a cluster that was there before is
# always kept. Exit 0: every check passed; 1: a check failed; 77: skipped
# (not root, or no Docker engine and none installed).
#
#   - three nodes Ready, kube-proxy running on each, the kubernetes Service
#     reachable from the workers
#   - each worker offers railgate.io/tenant-a: 2 and railgate.io/tenant-b: 2
#   - a team-b pod asking for railgate.io/tenant-a is denied at admission with
#     the policy's message, and never exists
#   - without the policy's binding the same pod is scheduled and the CNI
#     refuses it: stuck in ContainerCreating, the CNI's message in its events,
#     the rails stay on the node
#   - team-a/a1 on worker 1 and team-a/a2 on worker 2 get 2 tenant-a units each,
#     team-b/b1 on worker 1 gets 2 tenant-b units: their environment names
#     exactly their rails; ip in each pod shows rail<k> with its address, MTU
#     9000, the rail's table (default via the rail gateway, the tenant prefix)
#     and the source rule; the GPU device nodes are there; the NICs left the node
#   - packets (veth rails, the default): a1 and a2 reach each other on every
#     rail pair through the leaves' tenant-a VRF (and the spine across rails);
#     b1 reaches its own leaf gateways and nothing of tenant-a's
#   - the pods are deleted: every rail is back on its node, up, with the node's
#     address, and no attachment state is left
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

need_root "a Docker engine, network namespaces"
t0=$(date +%s)
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/railgate-kind.XXXXXX")
created=false
keep=false
[ "${RAILGATE_KIND_KEEP:-0}" = 1 ] && keep=true

cleanup() {
  local rc=$?
  if [ -n "${KUBECTL:-}" ] && cluster_exists; then
    kctl delete pod -n team-a a1 a2 --ignore-not-found --wait=false >/dev/null 2>&1 || true
    kctl delete pod -n team-b b1 intruder --ignore-not-found --wait=false >/dev/null 2>&1 || true
  fi
  if $created && ! $keep; then
    bash "$KIND_DIR/down.sh" || true
  fi
  if [ -n "$DOCKER_PID" ] && $keep && [ -n "${KUBECTL:-}" ] && cluster_exists; then
    say "kept: the private dockerd (pid $DOCKER_PID) and the cluster; reach them with"
    say "  export DOCKER_HOST=$DOCKER_HOST KUBECONFIG=$KUBECONFIG"
    say "  nsenter --net=/run/netns/$DOCKER_NETNS kubectl get nodes"
    say "stop: bash kind/down.sh; kill $DOCKER_PID; ip netns delete $DOCKER_NETNS; rm -rf $SCRATCH"
    return "$rc"
  fi
  docker_stop "$SCRATCH/docker"
  rm -rf "$SCRATCH"
  say "done in $(($(date +%s) - t0))s"
  return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rc=0
docker_start "$SCRATCH/docker" || rc=$?
if [ "$rc" -eq 77 ]; then
  exit 77
elif [ "$rc" -ne 0 ]; then
  die "no Docker engine"
fi
if [ -n "$DOCKER_PID" ]; then
  # a private engine's cluster is this run's: its kubeconfig too
  export KUBECONFIG=$SCRATCH/kubeconfig
fi
need_tools
if ! cluster_exists; then
  created=true
fi
t_up=$(date +%s)
bash "$KIND_DIR/up.sh"
t_up=$(($(date +%s) - t_up))
t_scenario=$(date +%s)

allocatable() { # allocatable NODE TENANT
  kctl get node "$1" -o jsonpath="{.status.allocatable.railgate\\.io/$2}"
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
node_fs() { on_node "$@"; } # a kind node's files and netns are its container's
restore_binding() { # the admission policy's binding as the chart renders it
  helmc template "$RELEASE" "$ROOT/deploy/helm/railgate" --namespace railgate-system \
    -f "$KIND_DIR/values.yaml" --show-only templates/admission.yaml |
    kctl apply --server-side --force-conflicts -f - >/dev/null
}

# pinged NAMESPACE NAME IFACE|"" DESTINATION: the pod reaches it (an echo
# reply within 2 s times RAILGATE_TEST_WAIT_SCALE, of 2 requests)
pinged() {
  local iface=() w
  w=$(scaled 2)
  [ -n "$3" ] && iface=(-I "$3")
  kctl exec -n "$1" "$2" -- ping -q -c 2 -W "$w" "${iface[@]}" "$4" >/dev/null 2>&1
}

section "the cluster: three nodes Ready, kube-proxy on each"
check "3 nodes Ready" equals "$(kctl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -cx True)" 3
check "kube-proxy ready on 3 nodes" equals \
  "$(kctl -n kube-system get daemonset kube-proxy -o jsonpath='{.status.numberReady}')" 3
svc=$(kctl get service kubernetes -o jsonpath='{.spec.clusterIP}')
svc_answers() { docker exec "$1" bash -c "</dev/tcp/$svc/443"; } # svc_answers NODE
for node in "${WORKERS[@]}"; do
  check "$node reaches the kubernetes Service $svc:443 through kube-proxy's rules" \
    wait_for 30 "the kubernetes Service from $node" svc_answers "$node"
done

section "device plugins register with kubelet on each worker"
for node in "${WORKERS[@]}"; do
  check "$node allocatable railgate.io/tenant-a: 2" equals "$(allocatable "$node" tenant-a)" 2
  check "$node allocatable railgate.io/tenant-b: 2" equals "$(allocatable "$node" tenant-b)" 2
done
wait_service_accounts
check_intruder "${WORKERS[0]}"

section "pods start: tenant-a on both workers, tenant-b on worker 1"
pod_yaml team-a a1 "${WORKERS[0]}" railgate.io/tenant-a 2 | kctl apply -f -
pod_yaml team-a a2 "${WORKERS[1]}" railgate.io/tenant-a 2 | kctl apply -f -
pod_yaml team-b b1 "${WORKERS[0]}" railgate.io/tenant-b 2 | kctl apply -f -
for p in team-a/a1 team-a/a2 team-b/b1; do
  check "$p Ready" kctl wait --for=condition=Ready -n "${p%/*}" "pod/${p#*/}" \
    --timeout="$(scaled 180)s"
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

if [ "$RAIL_KIND" = veth ]; then
  section "packets: tenant-a across the workers through the leaves, tenant-b isolated"
  for k in 0 1; do
    for j in 0 1; do
      check "team-a/a1 rail$k reaches team-a/a2 on rail$j (10.100.$j.12)" pinged team-a a1 "rail$k" "10.100.$j.12"
      check "team-a/a2 rail$k reaches team-a/a1 on rail$j (10.100.$j.11)" pinged team-a a2 "rail$k" "10.100.$j.11"
    done
  done
  for k in 2 3; do
    check "team-b/b1 rail$k reaches its leaf gateway 10.200.$k.1" pinged team-b b1 "rail$k" "10.200.$k.1"
    for dst in 10.100.0.11 10.100.1.11 10.100.0.12 10.100.1.12; do
      check "team-b/b1 rail$k does not reach tenant-a's $dst" not pinged team-b b1 "rail$k" "$dst"
    done
  done
  for dst in 10.100.0.11 10.100.1.11 10.100.0.12 10.100.1.12; do
    check "team-b/b1 does not reach tenant-a's $dst on any path" not pinged team-b b1 "" "$dst"
  done
else
  section "packets: not checked (RAILGATE_KIND_RAILS=$RAIL_KIND: the rails lead nowhere)"
fi

section "pods are deleted: every NIC home"
kctl delete pod -n team-a a1 a2 --wait --timeout=120s
kctl delete pod -n team-b b1 --wait --timeout=120s
for node in "${WORKERS[@]}"; do
  check_home "$node"
  # a dummy rail moved with an anchor, a VLAN on it on the node: gone with DEL
  if [ "$RAIL_KIND" = dummy ]; then
    check "$node: no rail anchor (VLAN) left on the node" \
      equals "$(on_node "$node" ip -o link show type vlan)" ""
  fi
done

say "cluster up in ${t_up}s, scenario in $(($(date +%s) - t_scenario))s"
printf '\nkind-e2e: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
