#!/usr/bin/env bash
# Bring up the kind cluster "railgate" with railgate deployed, ready for
# kind/e2e.sh. Idempotent: run it again to rebuild and reload the image and
# re-apply the manifests on the cluster that is there.
#
#   1. kind create cluster (kind-config.yaml: 1 control plane, 2 workers, no kindnet)
#   2. the primary CNI on every node: /etc/cni/net.d/10-pods.conflist (ptp +
#      host-local on the node's pod CIDR, cniVersion 1.0.0) and routes to the
#      other nodes' pod CIDRs
#   3. on each worker: rail NICs rail0..rail3, dummy where the kernel has the
#      driver and veth otherwise (up, with the node's own address on each rail) and simulated GPU device nodes /dev/railgate/gpu0..3
#   4. docker build deploy/Dockerfile (railgate:0.1.0, and the e2e pod image),
#      kind load docker-image
#   5. label the workers railgate.io/node=true, kubectl apply deploy/ with
#      kind/configmap.yaml in place of deploy/configmap.yaml, label the tenant
#      namespaces, wait for the DaemonSet and for each worker to offer
#      railgate.io/tenant-a: 2 and railgate.io/tenant-b: 2
#
# Needs a Docker engine (exits 77 without one), kind and kubectl.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

need_docker
need_tools

# ---- 1. cluster ----
if cluster_exists; then
  say "cluster $CLUSTER exists, reusing it"
else
  say "creating cluster $CLUSTER"
  # no --wait: the nodes stay NotReady until step 2 gives them a CNI config
  kind create cluster --config "$KIND_DIR/kind-config.yaml"
fi
version=$(kctl get --raw /version | tr -d '\n ')
minor=$(printf '%s' "$version" | sed -n 's/.*"minor":"\([0-9]*\).*/\1/p')
if [ -z "$minor" ] || [ "$minor" -lt 30 ]; then
  die "Kubernetes 1.${minor:-?}: deploy/admission.yaml needs admissionregistration.k8s.io/v1 (1.30 or later); use a newer kind or node image"
fi

# ---- 2. primary CNI ----
mapfile -t nodes < <(kind get nodes --name "$CLUSTER")
declare -A cidr ip
for node in "${nodes[@]}"; do
  for _ in $(seq 60); do # the controller manager hands out pod CIDRs as nodes register
    cidr[$node]=$(kctl get node "$node" -o jsonpath='{.spec.podCIDR}')
    ip[$node]=$(kctl get node "$node" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
    [ -n "${cidr[$node]}" ] && [ -n "${ip[$node]}" ] && break
    sleep 1
  done
  if [ -z "${cidr[$node]}" ] || [ -z "${ip[$node]}" ]; then
    die "$node: no pod CIDR or InternalIP after 60 s"
  fi
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
kctl wait --for=condition=Ready node --all --timeout=180s

# ---- 3. rails and GPUs on the workers ----
for node in "${WORKERS[@]}"; do
  n=$(node_number "$node")
  for k in "${RAILS[@]}"; do
    if ! docker exec "$node" ip link show "rail$k" >/dev/null 2>&1; then
      # a dummy NIC where the Docker host's kernel has the driver, else one end of
      # a veth pair whose other end (railp<k>) stays up on the node
      if ! docker exec "$node" ip link add "rail$k" type dummy 2>/dev/null; then
        docker exec "$node" ip link add "rail$k" type veth peer name "railp$k" ||
          die "$node: cannot create rail$k: the kernel has neither the dummy nor the veth driver"
        docker exec "$node" ip link set "railp$k" up
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
  say "$node: rail0..rail3 up, /dev/railgate/gpu0..3 present"
done

# ---- 4. images ----
say "building $IMAGE and $POD_IMAGE from deploy/Dockerfile"
docker build -f "$ROOT/deploy/Dockerfile" -t "$IMAGE" "$ROOT"
docker build -f "$ROOT/deploy/Dockerfile" --target e2e-pod -t "$POD_IMAGE" "$ROOT"
kind load docker-image --name "$CLUSTER" "$IMAGE" "$POD_IMAGE"

# ---- 5. deploy ----
for node in "${WORKERS[@]}"; do
  kctl label node "$node" railgate.io/node=true --overwrite
done
had_daemonset=false
if kctl -n railgate-system get daemonset railgate >/dev/null 2>&1; then
  had_daemonset=true
fi
kctl apply -f "$ROOT/deploy/namespace.yaml" -f "$ROOT/deploy/rbac.yaml" \
  -f "$KIND_DIR/configmap.yaml" -f "$ROOT/deploy/tenants.yaml" \
  -f "$ROOT/deploy/admission.yaml" -f "$ROOT/deploy/daemonset.yaml"
kctl label namespace team-a railgate.io/tenant=tenant-a --overwrite
kctl label namespace team-b railgate.io/tenant=tenant-b --overwrite
if $had_daemonset; then
  # a new image or node config reaches running pods only through a restart
  kctl -n railgate-system rollout restart daemonset/railgate
fi
kctl -n railgate-system rollout status daemonset/railgate --timeout=300s

for node in "${WORKERS[@]}"; do
  for _ in $(seq 120); do
    a=$(kctl get node "$node" -o jsonpath='{.status.allocatable.railgate\.io/tenant-a}')
    b=$(kctl get node "$node" -o jsonpath='{.status.allocatable.railgate\.io/tenant-b}')
    [ "$a" = 2 ] && [ "$b" = 2 ] && break
    sleep 1
  done
  if [ "$a" != 2 ] || [ "$b" != 2 ]; then
    die "$node offers railgate.io/tenant-a: '${a}', railgate.io/tenant-b: '${b}', want 2 and 2 (kubectl -n railgate-system logs ds/railgate)"
  fi
  say "$node offers railgate.io/tenant-a: 2, railgate.io/tenant-b: 2"
done
say "ready: kind/e2e.sh runs the scenario, kind/down.sh deletes the cluster"
