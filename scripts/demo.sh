#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job. Part 1: the device plugin on a real server shape (hwloc XML of
# an 8-GPU / 8-NIC / 4-switch node), two tenants, under the fake kubelet.
# Part 2: the two-tenant scenario on a simulated two-node rail fabric
# (tests/e2e/fabric.c). Runs in network namespaces: the host's interfaces are not touched.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" != "--in-netns" ]; then
  # shellcheck source=scripts/deps.sh
  . "$src/scripts/deps.sh"
  railgate_deps
  if [ "$(id -u)" -ne 0 ]; then
    echo "demo: needs root (network namespaces, veth rails)" >&2
    exit 1
  fi
  build=$src/build
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target railgate-device-plugin railgate-fakekubelet-bin \
    railgate-cni-bin railgate-e2e-fabric >/dev/null
  exec unshare --net -- "$0" --in-netns "$build"
fi

build=$2
plugin=$build/agent/railgate-device-plugin
fakekubelet=$build/tests/railgate-fakekubelet
fixture=$src/tests/fixtures/topology/dgx-8gpu-4sw.xml
tmp=$(mktemp -d /tmp/railgate-demo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ip link set lo up

# What the NVIDIA driver would show: one procfs entry and device node per GPU.
mkdir -p "$tmp/root/dev/infiniband" "$tmp/sys" "$tmp/kubelet"
touch "$tmp/root/dev/nvidiactl" "$tmp/root/dev/nvidia-uvm" "$tmp/root/dev/infiniband/rdma_cm"
i=0
while read -r pci; do
  d=$tmp/proc/driver/nvidia/gpus/$pci
  mkdir -p "$d"
  printf 'Model: NVIDIA H100 80GB HBM3\nDevice Minor: %d\nGPU UUID: GPU-demo0000-0000-0000-0000-00000000000%d\n' \
    "$i" "$i" >"$d/information"
  touch "$tmp/root/dev/nvidia$i"
  i=$((i + 1))
done < <(grep -o 'pci_busid="[^"]*" pci_type="030[02] \[10de' "$fixture" | cut -d'"' -f2)
# What ib_uverbs would show for the NICs' RDMA devices: a unit whose RDMA
# device has no uverbs node is unhealthy.
while read -r rdma; do
  n=${rdma#mlx5_}
  mkdir -p "$tmp/sys/class/infiniband_verbs/uverbs$n"
  echo "$rdma" >"$tmp/sys/class/infiniband_verbs/uverbs$n/ibdev"
  touch "$tmp/root/dev/infiniband/uverbs$n"
done < <(grep -o 'name="mlx5_[0-9]*"' "$fixture" | cut -d'"' -f2 | sort -u)

cat >"$tmp/node.json" <<JSON
{
  "domain": "railgate.io",
  "kubeletDir": "$tmp/kubelet",
  "stateDir": "$tmp/state",
  "procRoot": "$tmp/proc",
  "sysfsRoot": "$tmp/sys",
  "devRoot": "$tmp/root",
  "discovery": {"enabled": true, "topologyXml": "$fixture",
                "maxDistance": "switch", "nicExclude": ["eno1"]},
  "tenants": [
    {"name": "tenant-a", "namespaces": ["team-a"], "rails": [0, 1, 2, 3],
     "vrf": {"table": 100, "prefixes": ["10.100.0.0/16"]}},
    {"name": "tenant-b", "namespaces": ["team-b"], "rails": [4, 5, 6, 7],
     "vrf": {"table": 200, "prefixes": ["10.200.0.0/16"]}}
  ]
}
JSON

echo "== discovery: $(basename "$fixture") paired by hwloc"
"$plugin" --config "$tmp/node.json" --print-inventory | tee "$tmp/inventory.txt"

# The rail NICs, as veth pairs under their discovered names, cables up.
k=0
while read -r nic; do
  ip link add "$nic" type veth peer name "leaf$k"
  ip link set "$nic" up
  ip link set "leaf$k" up
  k=$((k + 1))
done < <(sed -n 's/.* nic=\([^ ]*\) .*/\1/p' "$tmp/inventory.txt")

echo
echo "== device plugin under the fake kubelet"
"$fakekubelet" --kubelet-dir "$tmp/kubelet" --wait 2 \
  --allocate railgate.io/tenant-a=2 --allocate railgate.io/tenant-b=4 -- \
  "$plugin" --config "$tmp/node.json" --log-level warn

echo
echo "== two tenants end to end: 2 nodes, 4 rails each, 4 leaves with tenant VRFs, 1 spine"
echo "   (tests/e2e/fabric.c: fake kubelet per node, CNI chain ptp + railgate, ping across leaves)"
"$build/tests/railgate-e2e-fabric"
