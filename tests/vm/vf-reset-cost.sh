#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run in the guest of `tests/vm/run.sh --sriov`: what a whole reset of an igbvf VF costs
# and leaves, against setting its ethtool state back setting by setting (issue 25). For
# each of a function-level reset (sysfs `reset`), a driver rebind (igbvf unbind, bind)
# and ethtool(8) setting each piece back: the wall time (median of RUNS), and what the
# VF has afterwards (ifindex, name, rings, coalescing, message level, a feature).
# Numbers only: it asserts nothing. Under TCG every figure is several times a real one.
#
#   bash tests/vm/run.sh [--kernel 6.12] --sriov bash tests/vm/vf-reset-cost.sh
set -euo pipefail

runs=${RUNS:-5}
fail() {
  echo "vf-reset-cost: $*" >&2
  exit 1
}

pf=
for n in /sys/class/net/*; do
  [ "$(cat "$n/device/subsystem_vendor" 2>/dev/null)" = 0x1af4 ] &&
    [ -e "$n/device/sriov_totalvfs" ] && pf=${n##*/}
done
[ -n "$pf" ] || fail "no SR-IOV PF of QEMU's igb (not run with --sriov?)"
dev=/sys/class/net/$pf/device
ip link set "$pf" up
echo 1 >"$dev/sriov_numvfs"
trap 'echo 0 >"$dev/sriov_numvfs"' EXIT
vf=$(basename "$(readlink -f "$dev/virtfn0")")
sysvf=/sys/bus/pci/devices/$vf

now() { date +%s%N; }
ms() { echo $((($2 - $1) / 1000000)); }
netdev() { find "$sysvf/net" -mindepth 1 -maxdepth 1 -printf "%f\n" 2>/dev/null | head -1; }
# wait (100 ms steps, WAIT_S (10) seconds times the wait scale at most) until "$@" succeeds
wait_for() {
  local i
  for ((i = 0; i < ${WAIT_S:-10} * 10 * ${RAILGATE_TEST_WAIT_SCALE:-1}; i++)); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}
has_netdev() { [ -n "$(netdev)" ]; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# rings, coalescing, message level and one feature, as one line
state() {
  local n
  n=$(netdev)
  printf 'ifindex %s name %s rings %s coalesce rx-usecs %s msglvl %s rx-gro-list %s' \
    "$(cat "/sys/class/net/$n/ifindex")" "$n" \
    "$(ethtool -g "$n" | sed -n '/Current/,$p' | awk '/^RX:|^TX:/ { printf "%s%s", $1, $2 }')" \
    "$(ethtool -c "$n" | awk '/^rx-usecs:/ { print $2 }')" \
    "$(ethtool "$n" | awk '/Current message level:/ { print $4 }')" \
    "$(ethtool -k "$n" | awk '/^rx-gro-list:/ { print $2 }')"
}
# what a pod would leave behind
dirty() {
  local n
  n=$(netdev)
  ethtool -G "$n" rx 512 tx 512
  ethtool -C "$n" rx-usecs 100
  ethtool -s "$n" msglvl 0x1
  ethtool -K "$n" rx-gro-list on >/dev/null
}
# setting by setting, back to what clean() read
restore() {
  local n
  n=$(netdev)
  ethtool -G "$n" rx "$rx0" tx "$tx0"
  ethtool -C "$n" rx-usecs "$usecs0"
  ethtool -s "$n" msglvl "$msglvl0"
  ethtool -K "$n" rx-gro-list off >/dev/null
}

wait_for has_netdev || fail "VF $vf has no netdev"
# the VF has no carrier here (NO-CARRIER with the PF up): nothing waits for it
ip link set "$(netdev)" up
n=$(netdev)
rx0=$(ethtool -g "$n" | sed -n '/Current/,$p' | awk '/^RX:/ { print $2 }')
tx0=$(ethtool -g "$n" | sed -n '/Current/,$p' | awk '/^TX:/ { print $2 }')
usecs0=$(ethtool -c "$n" | awk '/^rx-usecs:/ { print $2 }')
msglvl0=$(ethtool "$n" | awk '/Current message level:/ { print $4 }')
echo "VF $vf of $pf, driver $(basename "$(readlink -f "$sysvf/driver")"), kernel $(uname -r)"
echo "reset methods: $(cat "$sysvf/reset_method" 2>/dev/null || echo '(no reset_method file)')"
echo "as made:        $(state)"

declare -a t_flr t_bind t_bind_dev t_set
for ((i = 0; i < runs; i++)); do
  dirty
  [ "$i" -eq 0 ] && echo "as a pod left it: $(state)"
  t0=$(now)
  echo 1 >"$sysvf/reset"
  t1=$(now)
  t_flr+=("$(ms "$t0" "$t1")")
  [ "$i" -eq 0 ] && echo "after FLR:      $(state)"

  dirty
  t0=$(now)
  echo "$vf" >/sys/bus/pci/drivers/igbvf/unbind
  echo "$vf" >/sys/bus/pci/drivers/igbvf/bind
  t1=$(now)
  wait_for has_netdev || fail "no netdev after rebind"
  t2=$(now)
  ip link set "$(netdev)" up
  t_bind+=("$(ms "$t0" "$t1")")
  t_bind_dev+=("$(ms "$t0" "$t2")")
  [ "$i" -eq 0 ] && echo "after rebind:   $(state)"

  dirty
  t0=$(now)
  restore
  t1=$(now)
  t_set+=("$(ms "$t0" "$t1")")
  [ "$i" -eq 0 ] && echo "after ethtool:  $(state)"
  echo "run $i: flr ${t_flr[i]} ms, rebind ${t_bind_dev[i]} ms, ethtool ${t_set[i]} ms"
done

m() { printf '%s\n' "$@" | median; }
echo "median of $runs runs, ms:"
echo "  FLR (the write to reset returns): $(m "${t_flr[@]}")"
echo "  rebind (unbind + bind return): $(m "${t_bind[@]}"); its netdev there: $(m "${t_bind_dev[@]}")"
echo "  ethtool(8) -G, -C, -s msglvl, -K (4 processes): $(m "${t_set[@]}")"
echo "  all runs: flr ${t_flr[*]} | rebind ${t_bind_dev[*]} | ethtool ${t_set[*]}"
dmesg | grep -iE 'igbvf|igb |reset|FLR' | tail -15
