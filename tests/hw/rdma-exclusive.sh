#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A unit's RDMA device into a pod and home again, in exclusive mode, on a node
# with a ConnectX (mlx5) NIC: what no emulated device can show (rxe cannot
# change namespace; tests/vm checks the refusal). See tests/hw/README.md.
#
#   bash tests/hw/rdma-exclusive.sh [BUILD_DIR]
#       RAILGATE_HW_RDMA_DEV=mlx5_N chooses the device (default: the first
#       mlx5 device with a netdev and no VFs enabled)
#
# The CNI runs as on a node: the node agent (railgate-device-plugin) on a
# node config of one rail, the device's netdev, in front of the fake
# kubelet, whose PodResources says pod team-a/rghw-pod holds unit rail0.
# Steps: exclusive mode (set here if the node is in shared mode and has no
# other network namespace; set back at the end), ADD; the pod's namespace
# lists the device (`rdma dev`, its own sysfs' /sys/class/infiniband) and
# the host does not; CHECK passes; the tenant renames it from inside, and
# CHECK names the rename; DEL; the device is
# home under its own name, the netdev too, and no record is left.
#
# Exit 0: every check passed; 1: one failed; 77: skipped (not root, no
# mlx5 device, no iproute2 rdma tool, the mode cannot be made exclusive).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
POD_NS=rghw-pod
TENANT_NAME=rghwtenant0

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root"
command -v rdma >/dev/null || skip "no rdma tool (iproute2) to check with"
for b in cni/railgate agent/railgate-device-plugin tests/railgate-fakekubelet; do
  [ -x "$BUILD/$b" ] || skip "no $BUILD/$b: build the project first"
done

# ---- the device --------------------------------------------------------------
DEV=${RAILGATE_HW_RDMA_DEV:-}
NETDEV=
for d in /sys/class/infiniband/*; do
  [ -e "$d" ] || continue
  name=$(basename "$d")
  [ -z "$DEV" ] || [ "$name" = "$DEV" ] || continue
  drv=$(basename "$(readlink -f "$d/device/driver")" 2>/dev/null || true)
  [ "$drv" = mlx5_core ] || continue
  [ "$(cat "$d/device/sriov_numvfs" 2>/dev/null || echo 0)" = 0 ] || continue
  nd=
  for n in "$d"/device/net/*; do [ -e "$n" ] && nd=$(basename "$n") && break; done
  [ -n "$nd" ] || continue
  DEV=$name NETDEV=$nd
  break
done
[ -n "$NETDEV" ] || skip "no mlx5 RDMA device with a netdev (and no VFs enabled) on this node${DEV:+ named $DEV}"
PCI=$(basename "$(readlink -f "/sys/class/infiniband/$DEV/device")")
echo "device $DEV, netdev $NETDEV, PCI $PCI"

# ---- the mode ----------------------------------------------------------------
mode_now() { rdma system show netns | sed -n 's/.*netns \([a-z]*\).*/\1/p'; }
ORIG=$(mode_now)
[ -n "$ORIG" ] || fail "rdma system show netns said nothing of the mode"
if [ "$ORIG" != exclusive ]; then
  rdma system set netns exclusive 2>/dev/null ||
    skip "the RDMA netns mode is $ORIG and cannot change while other network namespaces exist: boot with ib_core.netns_mode=0, or run on a node without pods"
fi
[ "$(mode_now)" = exclusive ] || fail "the mode is not exclusive after setting it"

TMP=$(mktemp -d /tmp/rghw.XXXXXX)
FK=
cleanup() {
  set +e
  [ -n "$FK" ] && kill "$FK" && wait "$FK"
  ip netns del "$POD_NS" 2>/dev/null
  if [ "$ORIG" != exclusive ]; then
    for _ in $(seq 1 50); do rdma system set netns "$ORIG" 2>/dev/null && break; sleep 0.2; done
    echo "RDMA netns mode: $(mode_now) (was $ORIG)"
  fi
  if [ -n "${RAILGATE_HW_KEEP:-}" ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

# ---- the node ----------------------------------------------------------------
mkdir -p "$TMP/kubelet/device-plugins" "$TMP/kubelet/pod-resources" "$TMP/state"
cat >"$TMP/node.json" <<JSON
{"kubeletDir": "$TMP/kubelet", "stateDir": "$TMP/state", "logFile": "$TMP/cni.log",
 "rails": [{"index": 0, "nic": {"name": "$NETDEV", "rdma": "$DEV"}, "addresses": ["10.254.0.2/24"]}],
 "tenants": [{"name": "a", "namespaces": ["team-a"], "rails": [0],
              "vrf": {"table": 100, "prefixes": ["10.254.0.0/16"]}}]}
JSON
"$BUILD/tests/railgate-fakekubelet" --kubelet-dir "$TMP/kubelet" \
  --pod "team-a/$POD_NS=railgate.io/a:rail0" --serve -- \
  "$BUILD/agent/railgate-device-plugin" --config "$TMP/node.json" >"$TMP/fk.log" 2>&1 &
FK=$!
for _ in $(seq 1 100); do [ -S "$TMP/state/agent.sock" ] && break; sleep 0.1; done
[ -S "$TMP/state/agent.sock" ] || { cat "$TMP/fk.log"; fail "the node agent did not start"; }
grep -q "\"rdma\": \"$DEV\"" "$TMP/state/inventory.json" ||
  fail "the published inventory does not give rail0 RDMA device $DEV"
ip netns add "$POD_NS"

cni() {
  env CNI_COMMAND="$1" CNI_CONTAINERID=rghw1 CNI_NETNS="/run/netns/$POD_NS" CNI_IFNAME=eth0 \
    CNI_PATH="$BUILD/cni" CNI_ARGS="K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=$POD_NS" \
    RAILGATE_NODE_CONFIG="$TMP/node.json" "$BUILD/cni/railgate" \
    <<<'{"cniVersion": "1.1.0", "name": "rails", "type": "railgate"}'
}
in_pod() { ip netns exec "$POD_NS" "$@"; }

# ---- ADD ---------------------------------------------------------------------
IDX=$(rdma -j dev show "$DEV" | sed -n 's/.*"ifindex":\([0-9]*\).*/\1/p')
cni ADD >"$TMP/add.json" || { cat "$TMP/add.json"; fail "ADD failed"; }
ok "ADD"
in_pod rdma dev show "$DEV" >/dev/null || fail "the pod's namespace does not list $DEV"
in_pod test -e "/sys/class/infiniband/$DEV" || fail "the pod's sysfs has no /sys/class/infiniband/$DEV"
! rdma dev show "$DEV" >/dev/null 2>&1 || fail "the host still lists $DEV"
[ ! -e "/sys/class/infiniband/$DEV" ] || fail "the host's sysfs still shows $DEV"
in_pod ip link show rail0 >/dev/null || fail "the NIC is not rail0 in the pod"
grep -q "\"rdma\"" "$TMP"/state/attachments/* || fail "the record names no RDMA device"
ok "$DEV in the pod with its NIC (rdma dev, sysfs), gone from the host"
cni CHECK >"$TMP/check.json" || { cat "$TMP/check.json"; fail "CHECK failed after the ADD"; }
ok "CHECK"

# ---- the tenant renames it ----------------------------------------------------
in_pod rdma dev set "$DEV" name "$TENANT_NAME" || fail "the tenant's rename was refused"
in_pod rdma dev show "$TENANT_NAME" >/dev/null || fail "the rename did not take"
ok "renamed $TENANT_NAME in the pod"
! cni CHECK >"$TMP/check.json" || fail "CHECK passed with $DEV renamed in the pod"
grep -q "is called $TENANT_NAME in the pod" "$TMP/check.json" ||
  { cat "$TMP/check.json"; fail "CHECK's error does not name the rename"; }
ok "CHECK names the rename"

# ---- DEL ---------------------------------------------------------------------
cni DEL >"$TMP/del.json" || { cat "$TMP/del.json"; fail "DEL failed"; }
ok "DEL"
rdma dev show "$DEV" >/dev/null || fail "$DEV is not home under its name"
[ -e "/sys/class/infiniband/$DEV" ] || fail "the host's sysfs does not show $DEV"
! rdma dev show "$TENANT_NAME" >/dev/null 2>&1 || fail "the tenant's name $TENANT_NAME is left"
! in_pod rdma dev show "$DEV" >/dev/null 2>&1 || fail "the pod still lists $DEV"
NOW=$(rdma -j dev show "$DEV" | sed -n 's/.*"ifindex":\([0-9]*\).*/\1/p')
[ "$NOW" = "$IDX" ] || fail "$DEV came home at index $NOW, not $IDX"
ip link show "$NETDEV" >/dev/null || fail "netdev $NETDEV is not home"
[ -z "$(ls -A "$TMP/state/attachments" 2>/dev/null)" ] || fail "a record is left"
ok "$DEV home under its name at index $IDX, $NETDEV home, no record left"
echo "PASS"
