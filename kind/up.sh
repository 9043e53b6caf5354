#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Bring up the kind cluster "railgate" with railgate installed, ready for
# kind/e2e.sh. Idempotent: run it again to rebuild and reload the image and
# upgrade the release on the cluster that is there.
#
#   1. the node image (kind/node-image.sh: built locally, cached), docker import
#   2. kind create cluster (kind-config.yaml: 1 control plane, 2 workers, no
#      kindnet, no CoreDNS)
#   3. the primary CNI on every node: /etc/cni/net.d/10-pods.conflist (ptp +
#      host-local on the node's pod CIDR, cniVersion 1.0.0) and routes to the
#      other nodes' pod CIDRs
#   4. on each worker: rail NICs rail0..rail3 and simulated GPU device nodes
#      /dev/railgate/gpu0..3. Rails are veth (RAILGATE_KIND_RAILS=veth, the
#      default) whose peers are ports of the fabric's leaves on the Docker
#      host, as in tests/e2e/fabric.c: leaf k per rail k, one routing table per
#      tenant VRF chosen by ingress port, a spine joining the leaves per VRF;
#      or dummy (RAILGATE_KIND_RAILS=dummy, where the kernel has the driver:
#      the rails lead nowhere)
#   5. railgate's image (deploy/image.sh, an OCI archive) and the e2e pods'
#      (tests/k8s/image.sh busybox), kind load image-archive
#   6. label the workers railgate.io/node=true, helm upgrade --install the
#      chart with kind/values.yaml, wait for the DaemonSet and for each worker
#      to offer railgate.io/tenant-a: 2 and railgate.io/tenant-b: 2
#
# Needs root and a Docker engine (exits 77 without one; kind/e2e.sh starts
# its own); kind, kubectl and helm are built from the Go module proxy unless
# KIND, KUBECTL, HELM name them.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[ "$(id -u)" -eq 0 ] || die "run as root (the node image, the fabric's namespaces)"
need_docker
need_tools
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

# ---- 1. node image ----
node_tar=$(bash "$KIND_DIR/node-image.sh") || die "building the node image failed"
NODE_IMAGE=$(cat "$(dirname "$node_tar")/image")
if ! docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  say "docker import $node_tar as $NODE_IMAGE"
  start=$(date +%s)
  docker import --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
    --change 'ENV container=docker' "$node_tar" "$NODE_IMAGE" >/dev/null
  say "docker import took $(($(date +%s) - start))s"
fi

# ---- 2. cluster ----
if cluster_exists; then
  say "cluster $CLUSTER exists, reusing it"
else
  say "creating cluster $CLUSTER ($NODE_IMAGE)"
  start=$(date +%s)
  # no --wait: the nodes stay NotReady until step 3 gives them a CNI config
  kindc create cluster --image "$NODE_IMAGE" --config "$KIND_DIR/kind-config.yaml"
  say "kind create cluster took $(($(date +%s) - start))s"
fi
version=$(kctl get --raw /version | tr -d '\n ')
minor=$(printf '%s' "$version" | sed -n 's/.*"minor":"\([0-9]*\).*/\1/p')
if [ -z "$minor" ] || [ "$minor" -lt 30 ]; then
  die "Kubernetes 1.${minor:-?}: the admission policy needs admissionregistration.k8s.io/v1 (1.30 or later)"
fi

# ---- 3. primary CNI ----
mapfile -t nodes < <(kindc get nodes --name "$CLUSTER")
declare -A cidr ip
pod_network() { # pod_network NODE: the node's pod CIDR and InternalIP into cidr[] and ip[]
  cidr[$1]=$(kctl get node "$1" -o jsonpath='{.spec.podCIDR}')
  ip[$1]=$(kctl get node "$1" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
  [ -n "${cidr[$1]}" ] && [ -n "${ip[$1]}" ]
}
for node in "${nodes[@]}"; do
  # the controller manager hands out pod CIDRs as nodes register
  wait_for 60 "$node's pod CIDR" pod_network "$node" || die "$node: no pod CIDR or InternalIP"
  pod_network "$node"
done
for node in "${nodes[@]}"; do
  # written once: railgate-cni-install chains railgate into this file later, and a
  # rewrite would drop it
  if ! docker exec "$node" test -e /etc/cni/net.d/10-pods.conflist; then
    docker exec -i "$node" sh -ec \
      'cat > /etc/cni/net.d/.10-pods.new && mv /etc/cni/net.d/.10-pods.new /etc/cni/net.d/10-pods.conflist' <<EOF
{
  "cniVersion": "1.0.0",
  "name": "pods",
  "plugins": [
    {"type": "ptp", "ipMasq": true, "mtu": 1500,
     "ipam": {"type": "host-local", "dataDir": "/run/cni-ipam-state",
              "ranges": [[{"subnet": "${cidr[$node]}"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
    say "$node: primary CNI config written (pod CIDR ${cidr[$node]})"
  fi
  for other in "${nodes[@]}"; do
    [ "$other" = "$node" ] && continue
    docker exec "$node" ip route replace "${cidr[$other]}" via "${ip[$other]}"
  done
done
kctl wait --for=condition=Ready node --all --timeout="$(scaled 180)s"
kctl -n kube-system rollout status daemonset/kube-proxy --timeout="$(scaled 180)s"

# ---- 4. the fabric, rails and GPUs ----
in_ns() { # in_ns NAMESPACE COMMAND...: COMMAND in the fabric namespace's network
  local ns=$1
  shift
  nsenter --net="/run/netns/$ns" "$@"
}
octet_of() { octet "$1"; }
table_of() { if [ "$1" -lt 2 ]; then echo 10; else echo 20; fi; } # the leaf's VRF table of rail k

# tests/e2e/fabric.c's plan: leaf k, for each tenant VRF (a: table 10, 172.16/16;
# b: table 20, 172.17/16) a link to the spine; the main tables would carry
# anything anywhere, so only the VRF tables (chosen by ingress port, ending in
# an unreachable default) keep the tenants apart
fabric_up() {
  local spine=$FABRIC-spine k t c table net leaf
  ip netns add "$spine"
  in_ns "$spine" ip link set lo up
  in_ns "$spine" sysctl -qw net.ipv4.ip_forward=1
  for k in "${RAILS[@]}"; do
    leaf=$FABRIC-leaf$k
    ip netns add "$leaf"
    in_ns "$leaf" ip link set lo up
    in_ns "$leaf" sysctl -qw net.ipv4.ip_forward=1
    for t in 0 1; do
      c=${t/0/a}
      c=${c/1/b}
      table=$((10 + 10 * t)) net=$((16 + t))
      ip -n "$leaf" link add "l$k$c" type veth peer name "s$k$c" netns "$spine"
      ip -n "$leaf" addr add "172.$net.$k.0/31" dev "l$k$c"
      ip -n "$spine" addr add "172.$net.$k.1/31" dev "s$k$c"
      ip -n "$leaf" link set "l$k$c" up
      ip -n "$spine" link set "s$k$c" up
      ip -n "$leaf" rule add iif "l$k$c" lookup "$table" pref 100
      ip -n "$spine" rule add iif "s$k$c" lookup "$table" pref 100
      for tb in "$table" main; do
        ip -n "$leaf" route replace "10.$((100 * (t + 1))).0.0/16" via "172.$net.$k.1" dev "l$k$c" onlink table "$tb"
        ip -n "$spine" route replace "10.$((100 * (t + 1))).$k.0/24" via "172.$net.$k.0" dev "s$k$c" onlink table "$tb"
      done
      ip -n "$leaf" route replace unreachable default table "$table"
      ip -n "$spine" route replace unreachable default table "$table"
    done
  done
}

# node n's rail k: a veth whose peer n<n>r<k> is a port of leaf k, in the
# rail's tenant VRF, with the gateway address and proxy ARP for the subnet
rail_veth() { # rail_veth NODE N K
  local pid leaf=$FABRIC-leaf$3 port=n$2r$3 o table
  o=$(octet_of "$3")
  table=$(table_of "$3")
  pid=$(docker inspect -f '{{.State.Pid}}' "$1")
  nsenter -t "$pid" -n ip link add "rail$3" type veth peer name "$port" netns "$leaf"
  ip -n "$leaf" addr replace "10.$o.$3.1/32" dev "$port"
  ip -n "$leaf" link set "$port" up
  in_ns "$leaf" sysctl -qw "net.ipv4.conf.$port.proxy_arp=1" "net.ipv4.neigh.$port.proxy_delay=0"
  ip -n "$leaf" rule add iif "$port" lookup "$table" pref 100
  ip -n "$leaf" route replace "10.$o.$3.$((10 + $2))/32" dev "$port" table "$table"
  ip -n "$leaf" route replace "10.$o.$3.$((10 + $2))/32" dev "$port"
}

case $RAIL_KIND in
veth)
  if ! ip netns list | grep -q "^$FABRIC-spine\b"; then
    fabric_up
    say "fabric: $FABRIC-leaf0..3 (a VRF table per tenant), $FABRIC-spine"
  fi
  ;;
dummy) ;;
*) die "RAILGATE_KIND_RAILS=$RAIL_KIND: veth or dummy" ;;
esac
for node in "${WORKERS[@]}"; do
  n=$(node_number "$node")
  for k in "${RAILS[@]}"; do
    if ! docker exec "$node" ip link show "rail$k" >/dev/null 2>&1; then
      if [ "$RAIL_KIND" = dummy ]; then
        docker exec "$node" ip link add "rail$k" type dummy ||
          die "$node: cannot create a dummy rail$k (no dummy driver in this kernel?): use RAILGATE_KIND_RAILS=veth"
        # the CNI moves a dummy rail only with its anchor, a VLAN it makes on
        # it on the node: a kernel without 8021q would have every ADD refused
        docker exec "$node" ip link add rgvlanprobe link "rail$k" type vlan proto 802.1ad id 4094 ||
          die "$node: cannot put a VLAN on a dummy rail (no 8021q driver in this kernel?): the CNI anchors dummy rails with one; use RAILGATE_KIND_RAILS=veth"
        docker exec "$node" ip link del rgvlanprobe
      else
        rail_veth "$node" "$n" "$k"
      fi
    fi
    docker exec "$node" ip link set "rail$k" mtu 1500 up
    docker exec "$node" ip addr replace "$(host_address "$n" "$k")" dev "rail$k"
  done
  docker exec "$node" sh -ec '
    mkdir -p /dev/railgate
    for k in 0 1 2 3; do
      [ -e /dev/railgate/gpu$k ] || mknod -m 0666 /dev/railgate/gpu$k c 1 3
    done'
  say "$node: rail0..rail3 up ($RAIL_KIND), /dev/railgate/gpu0..3 present"
done

# ---- 5. images ----
say "building $IMAGE (deploy/image.sh) and $POD_IMAGE (tests/k8s/image.sh busybox)"
bash "$ROOT/deploy/image.sh" "$T/railgate.tar" "$IMAGE"
bash "$ROOT/tests/k8s/image.sh" busybox "$T/pod.tar" "$POD_IMAGE"
kindc load image-archive --name "$CLUSTER" "$T/railgate.tar"
kindc load image-archive --name "$CLUSTER" "$T/pod.tar"
say "loaded $IMAGE ($(du -h "$T/railgate.tar" | cut -f1)) and $POD_IMAGE ($(du -h "$T/pod.tar" | cut -f1)) into every node"

# ---- 6. install ----
for node in "${WORKERS[@]}"; do
  kctl label node "$node" railgate.io/node=true --overwrite
done
had_daemonset=false
if kctl -n railgate-system get daemonset railgate >/dev/null 2>&1; then
  had_daemonset=true
fi
helmc upgrade --install "$RELEASE" "$ROOT/deploy/helm/railgate" --namespace railgate-system \
  --create-namespace -f "$KIND_DIR/values.yaml"
if $had_daemonset; then
  # a new image under the same tag, or a new node config, reaches running pods only through a restart
  kctl -n railgate-system rollout restart daemonset/railgate
fi
kctl -n railgate-system rollout status daemonset/railgate --timeout="$(scaled 300)s"

offers() { # offers NODE: railgate.io/tenant-a: 2 and railgate.io/tenant-b: 2
  [ "$(kctl get node "$1" -o jsonpath='{.status.allocatable.railgate\.io/tenant-a}')" = 2 ] &&
    [ "$(kctl get node "$1" -o jsonpath='{.status.allocatable.railgate\.io/tenant-b}')" = 2 ]
}
for node in "${WORKERS[@]}"; do
  wait_for 120 "$node to offer railgate.io/tenant-a: 2, railgate.io/tenant-b: 2" offers "$node" ||
    die "$node does not offer 2 units of each tenant (kubectl -n railgate-system logs ds/railgate)"
  say "$node offers railgate.io/tenant-a: 2, railgate.io/tenant-b: 2"
done
say "ready: kind/e2e.sh runs the scenario, kind/down.sh deletes the cluster"
