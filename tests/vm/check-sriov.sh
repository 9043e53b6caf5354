#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run in the guest of `tests/vm/run.sh --sriov`: the emulated igb is a real
# SR-IOV PF. Four VFs with virtfn/physfn links and igbvf netdevs, and the
# PF's per-VF settings (mac, vlan, spoofchk, trust) take. Exits 1 on the
# first thing missing.
#
#   bash tests/vm/run.sh [--kernel 6.12] --sriov bash tests/vm/check-sriov.sh
set -euo pipefail

fail() {
  echo "check-sriov: $*" >&2
  exit 1
}

pf=
for n in /sys/class/net/*; do
  [ -e "$n/device/sriov_totalvfs" ] && pf=${n##*/}
done
[ -n "$pf" ] || fail "no netdev with sriov_totalvfs (not run with --sriov?)"
dev=/sys/class/net/$pf/device
echo "PF $pf at $(basename "$(readlink -f "$dev")"), driver $(basename "$(readlink -f "$dev/driver")"), sriov_totalvfs $(cat "$dev/sriov_totalvfs")"

t0=$(date +%s.%N)
echo 4 >"$dev/sriov_numvfs"
t1=$(date +%s.%N)
# igbvf binds as the VFs appear; allow 60 s times the wait scale for the netdevs
limit=$((600 * ${RAILGATE_TEST_WAIT_SCALE:-1}))
for ((i = 0; i < limit; i++)); do
  [ "$(find "$dev"/virtfn*/net/ -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" -ge 4 ] && break
  sleep 0.1
done
t2=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" \
  'BEGIN { printf "echo 4 > sriov_numvfs: %.1f s; 4 VF netdevs after %.1f s\n", b - a, c - a }'

for n in 0 1 2 3; do
  v=$dev/virtfn$n
  [ -e "$v" ] || fail "no virtfn$n"
  [ "$(readlink -f "$v/physfn")" = "$(readlink -f "$dev")" ] || fail "virtfn$n has no physfn link to $pf"
  net=$(ls "$v/net" 2>/dev/null) || fail "virtfn$n has no netdev"
  echo "virtfn$n -> $(basename "$(readlink -f "$v")"), physfn -> $(basename "$(readlink -f "$v/physfn")"), netdev $net, driver $(basename "$(readlink -f "$v/driver")")"
done

ip link set "$pf" vf 0 mac 02:00:00:00:00:10
ip link set "$pf" vf 1 vlan 100
ip link set "$pf" vf 2 spoofchk off
ip link set "$pf" vf 3 trust on
show=$(ip link show "$pf")
echo "$show"
grep -q 'vf 0 .*02:00:00:00:00:10' <<<"$show" || fail "vf 0 mac did not take"
grep -q 'vf 1 .*vlan 100' <<<"$show" || fail "vf 1 vlan did not take"
grep -q 'vf 2 .*spoof checking off' <<<"$show" || fail "vf 2 spoofchk did not take"
grep -q 'vf 3 .*trust on' <<<"$show" || fail "vf 3 trust did not take"
echo "check-sriov: ok"
