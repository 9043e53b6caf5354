#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The VM rung of CI: the tests as built on Debian's 6.1 and 6.12 kernels
# under QEMU (tests/vm/run.sh), both kernels at once, then the SR-IOV test
# on QEMU's emulated igb; a table of test x kernel (result, time) at the end.
#
#   bash tests/vm/ci.sh [BUILD_DIR [FAILPOINT_BUILD_DIR]]
#       BUILD_DIR: default build, as scripts/test.sh made it; FAILPOINT_BUILD_DIR:
#       a build with -DRAILGATE_FAILPOINTS=ON (scripts/test.sh: build-asan)
#
# Nothing is built: the build dir runs as built, read through the guest's
# root (writes land in the guest's overlay and vanish); each kernel's output
# and logs go to a directory of its own (RAILGATE_VM_CI_KEEP=DIR keeps them
# there, else a temp dir removed at exit).
#
# The tests, on dummy rails (RAILGATE_TEST_RAIL_KIND=dummy) where they take
# the harness's kind (the CNI tests too: the CNI anchors a dummy rail with a
# VLAN on the host), veth where they need packets (they say so):
#   with KVM: every integration and e2e test (ctest -L 'integration|e2e');
#   under TCG (no KVM; tests run 5-16 times slower): the same but
#   integration/test-cni-hardening, whose 1000 ADD/DEL cycles alone take
#   8-9 minutes there (its crash trials need the failpoint build: below),
#   so that the step stays within about 15 minutes on a 2-core machine;
#   RAILGATE_VM_CI_TESTS (a ctest regex) chooses others.
# Then integration/test-sriov and integration/test-ethtool (veth, dummy and
# an igbvf VF's ethtool state) with --sriov on both kernels, where the build
# has it (it is skipped with a message where not). Then, with rdma_rxe
# loaded (run.sh --module rdma_rxe), integration/test-rdma (the RDMA netns
# mode read and set, what a second namespace sees, rxe's refusals),
# integration/test-cni-rdma (the CNI's ADD refused in exclusive mode for a
# rail whose RDMA device is rxe, everything home; shared mode unchanged) and the
# agent's tests that read the mode at start (test-metrics, test-health: the
# mode "shared" where elsewhere it is "unavailable"). Then, given a failpoint
# build, the CNI's races and crashes on dummy rails from it, on both kernels:
# integration/test-cni-hostile-pod (the swap races held open with failpoints)
# and integration/test-cni-hardening (SIGKILL at every step of ADD, DEL and
# GC; its churn cut to RAILGATE_CHURN_CYCLES=16) and, with rdma_rxe loaded,
# integration/test-cni-rdma again for its failpoint case (an ADD killed after
# its record, the RDMA device renamed and a decoy made under its name: the
# DEL finds it by index and node GUID): the development machines' kernel has
# no dummy driver and no RDMA, so these run nowhere else.
#
# Exit 0: every test passed; 1: a test failed, timed out, did not run or was
# skipped (every driver is there: a skip in the VM is lost coverage); 125:
# a VM never ran its tests; 77: not root.
set -euo pipefail

PROG=tests/vm/ci.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
KERNELS=(6.1 6.12)
SRIOV='^integration/test-(sriov|ethtool)$'
# the RDMA step's tests; test-rdma only there (without rdma_rxe it skips)
RDMA='^integration/test-(rdma|cni-rdma)$'
RDMA_STEP='^integration/test-(rdma|cni-rdma|metrics|health)$'

SAY_FD=2
# shellcheck source=scripts/lib/log.sh
. "$SRC/scripts/lib/log.sh"

if [ "$(id -u)" -ne 0 ]; then
  skip "needs root (tests/vm/run.sh boots QEMU with the host's root)"
fi
BUILD=$(cd "${1:-$SRC/build}" 2>/dev/null && pwd) || {
  say "error: no build dir ${1:-$SRC/build}: run scripts/test.sh or cmake first"
  exit 125
}
[ -f "$BUILD/CTestTestfile.cmake" ] || {
  say "error: $BUILD is not a build dir (no CTestTestfile.cmake)"
  exit 125
}
FP_BUILD=
if [ -n "${2:-}" ]; then
  FP_BUILD=$(cd "$2" 2>/dev/null && pwd) || FP_BUILD=$2
  if [ ! -f "$FP_BUILD/CTestTestfile.cmake" ]; then
    say "error: $2 is not a build dir (no CTestTestfile.cmake)"
    exit 125
  fi
fi
RACES='^integration/test-cni-(hostile-pod|hardening|rdma)$'

OUT=${RAILGATE_VM_CI_KEEP:-}
if [ -z "$OUT" ]; then
  OUT=$(mktemp -d /tmp/railgate-vm-ci.XXXXXX)
  trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"

# the accelerator run.sh will choose: the same test
if [ "${RAILGATE_VM_ACCEL:-auto}" = kvm ] ||
  { [ "${RAILGATE_VM_ACCEL:-auto}" = auto ] && [ -c /dev/kvm ] &&
    { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; }; then
  accel=kvm select=(-L 'integration|e2e' -E "$SRIOV|$RDMA")
else
  accel=tcg select=(-L 'integration|e2e' -E "^integration/test-(cni-hardening|sriov|ethtool|rdma|cni-rdma)\$")
fi
[ -z "${RAILGATE_VM_CI_TESTS:-}" ] || select=(-R "$RAILGATE_VM_CI_TESTS" -E "$SRIOV|$RDMA")

# vm_ctest KERNEL DIR [--sriov] [--module NAME]... CTEST-ARGS...: ctest in the guest on the
# build dir $ctest_build, its console in DIR/console.log, run.sh's summary in
# DIR/run.log, every test's output (ctest's LastTest.log, written in the
# guest's overlay) copied to DIR/tests.log; the status run.sh returned in
# DIR/rc
ctest_build=$BUILD
rail_kind=dummy
vm_ctest() {
  local kernel=$1 dir=$2 rc=0
  shift 2
  local opts=()
  while [ $# -gt 0 ]; do
    case $1 in
    --sriov) opts+=(--sriov) && shift ;;
    --module) opts+=(--module "$2") && shift 2 ;;
    *) break ;;
    esac
  done
  mkdir -p "$dir"
  # shellcheck disable=SC2016 # expanded by the guest's bash
  (cd "$dir" && RAILGATE_TEST_RAIL_KIND=$rail_kind bash "$HERE/run.sh" --kernel "$kernel" "${opts[@]}" \
    bash -c 'ctest --test-dir "$1" --output-on-failure "${@:3}"; rc=$?
             cp "$1/Testing/Temporary/LastTest.log" "$2/tests.log" 2>/dev/null; exit $rc' \
    ctest "$ctest_build" "$dir" "$@") >"$dir/console.log" 2>"$dir/run.log" || rc=$?
  echo "$rc" >"$dir/rc"
}

# kernels in parallel (TCG: one vCPU each on the host's cores)
run_kernels() { # run_kernels STEP [--sriov] [--module NAME]... CTEST-ARGS...
  local step=$1 pids=() k
  shift
  for k in "${KERNELS[@]}"; do
    vm_ctest "$k" "$OUT/$step-$k" "$@" &
    pids+=($!)
  done
  wait "${pids[@]}" || true
}

t0=$(date +%s)
say "the tests on Debian ${KERNELS[*]} under QEMU ($accel), build $BUILD, logs in $OUT"
run_kernels tests "${select[@]}"
sriov_listed=$(ctest --test-dir "$BUILD" -N -R "$SRIOV" 2>/dev/null | sed -n 's/^Total Tests: //p')
if [ "${sriov_listed:-0}" -gt 0 ]; then
  run_kernels sriov --sriov -R "$SRIOV"
else
  say "integration/test-sriov, test-ethtool: not in this build: the SR-IOV step is skipped"
fi
rdma_listed=$(ctest --test-dir "$BUILD" -N -R "$RDMA" 2>/dev/null | sed -n 's/^Total Tests: //p')
if [ "${rdma_listed:-0}" -gt 0 ]; then
  run_kernels rdma --module rdma_rxe -R "$RDMA_STEP"
else
  say "integration/test-rdma: not in this build: the RDMA step is skipped"
fi
# what a pod sets on a macvlan rail (its mode, source list, protodown, the
# macvlans it stacks that land on the node's lower): the hostile-pod suite
# on macvlan rails too
rail_kind=macvlan run_kernels macvlan -R '^integration/test-cni-hostile-pod$'
if [ -n "$FP_BUILD" ]; then
  ctest_build=$FP_BUILD
  RAILGATE_CHURN_CYCLES=16 run_kernels races --module rdma_rxe -R "$RACES"
  ctest_build=$BUILD
fi
t1=$(date +%s)

# One line per test and kernel: name, result, seconds, from ctest's lines
# "N/M Test #K: NAME ....   Passed   1.23 sec" (or ***Failed, ***Skipped,
# ***Timeout, ***Exception: ..., ***Not Run); the rail kind from the test's
# own "rail kind: ..." line in tests.log (", anchored" where the CNI said it
# anchors them: "rails: <kind>, anchored ...").
results() { # results DIR
  awk '{ sub(/\r$/, "") } # the guest console ends lines with CR LF
       /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
         line = $0
         sub(/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: /, "", line)
         name = line; sub(/ .*/, "", name)
         rest = substr(line, length(name) + 1)
         sub(/^ *\.*\**/, "", rest); sub(/ +[0-9.]+ sec$/, "", rest); gsub(/ /, "", rest)
         print name, rest, $(NF - 1)
       }' "$1/console.log" 2>/dev/null
}
kinds() { # kinds DIR: NAME KIND..., first "rail kind:" line of each test
  awk '/^[0-9]+\/[0-9]+ Test: / { t = $3 }
       /^rail kind: / && t != "" && !(t in k) { sub(/^rail kind: /, ""); k[t] = $0 }
       /^rails: [a-z]+, anchored/ && t != "" { anchored[t] = 1 }
       /^== fabric: / && t != "" && !(t in k) { k[t] = ($0 ~ /VRF device/) ? "veth, VRF devices" : "veth, VRF tables" }
       /^[0-9]+\/[0-9]+ Test: integration\/test-sriov/ { k[$3] = "igbvf: the VFs of QEMU'"'"'s igb (--sriov)" }
       /^[0-9]+\/[0-9]+ Test: integration\/test-ethtool/ { k[$3] = "veth, dummy, an igbvf VF (--sriov)" }
       /^[0-9]+\/[0-9]+ Test: integration\/test-rdma/ { k[$3] = "rxe on a dummy (--module rdma_rxe)" }
       END { for (t in k) print t, k[t] (t in anchored ? ", anchored" : "") }' "$1/tests.log" 2>/dev/null
}
kver() { sed -n 's/^tests\/vm\/run.sh: kernel \([^,]*\),.*/\1/p' "$1/run.log" 2>/dev/null | head -n1; }

declare -A res seen
names=()
fail=0
for step in tests sriov rdma macvlan races; do
  tag=
  [ "$step" != races ] || tag=" (failpoints)"
  [ "$step" != macvlan ] || tag=" (macvlan)"
  [ "$step" != rdma ] || tag=" (rdma_rxe)"
  for k in "${KERNELS[@]}"; do
    d=$OUT/$step-$k
    [ -d "$d" ] || continue
    rc=$(cat "$d/rc")
    if [ "$rc" -eq 125 ] || ! grep -q '^Test project' "$d/console.log"; then
      say "$step on $k: the VM never ran the tests (exit $rc):"
      tail -n 20 "$d/run.log" >&2
      fail=1
      continue
    fi
    while read -r name status secs; do
      name+=$tag
      [ -n "${seen[$name]+x}" ] || names+=("$name")
      seen[$name]=1
      res[$name,$k]="$status $secs"
      case $status in Passed) ;; *) fail=1 ;; esac
    done < <(results "$d")
    while read -r name kind; do
      res[$name$tag,kind]=$kind
    done < <(kinds "$d")
    res[kver,$k]=$(kver "$d")
    # a failed test's own output (ctest --output-on-failure), into CI's log:
    # the VM's logs go with its temp dir
    if [ "$rc" -ne 0 ]; then
      awk '{ sub(/\r$/, "") }
           /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / { show = $0 !~ / Passed / }
           /^ *Start +[0-9]+: / { show = 0 }
           show && n++ < 300' "$d/console.log" | sed "s|^|$step on $k: |" >&2
    fi
    # a run whose ctest failed must show a failed test, or it failed itself
    if [ "$rc" -ne 0 ] && ! results "$d" | grep -qv ' Passed '; then
      say "$step on $k: ctest exited $rc with no test failed:"
      tail -n 20 "$d/console.log" >&2
      fail=1
    fi
  done
done

printf '\n%-46s %-44s' "VM rung ($accel)" "rails"
for k in "${KERNELS[@]}"; do printf ' %-22s' "${res[kver,$k]:-$k}"; done
printf '\n'
for name in "${names[@]}"; do
  printf '%-46s %-44.44s' "$name" "${res[$name,kind]:--}"
  for k in "${KERNELS[@]}"; do
    read -r status secs <<<"${res[$name,$k]:-missing -}"
    case $status in
    Passed) cell="pass ${secs}s" ;;
    missing) cell="MISSING"; fail=1 ;;
    *) cell="${status^^} ${secs}s" ;;
    esac
    printf ' %-22s' "$cell"
  done
  printf '\n'
done
printf 'VM step: %dm%02ds wall time (both kernels at once)\n' $(((t1 - t0) / 60)) $(((t1 - t0) % 60))
if [ "$fail" -ne 0 ]; then
  say "FAILED: see above and the logs in $OUT (RAILGATE_VM_CI_KEEP=DIR keeps them)"
  exit 1
fi
