#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pod start as a user waits for it, on the one-node cluster that
#   flock /tmp/railgate-k8s.lock env RAILGATE_K8S_BENCH_RAILS=32 bash tests/k8s/e2e.sh --keep
# left running (either mode: devicePlugin, or dra with RAILGATE_K8S_MODE=dra):
#
#   bash tests/k8s/bench.sh [--serial N] [--parallel P] [--rounds R] [--units U]
#       [--background K]                                   (as root)
#
# (not under the flock: the kept cluster's processes inherited it from
# e2e.sh and hold it until tests/k8s/down.sh stops them, so no other cluster
# starts meanwhile, and a flock here would wait for ever)
#
# Pods in namespace bench (tenant-bench), busybox sleeping, no probes, so
# Ready is the container started and its status seen: "plain" pods without
# units and "rg" pods with railgate.io/tenant-bench: U (default 8; in DRA mode
# the same limit becomes a claim through tenant-bench's DeviceClass).
#   serial     N (default 20) of each, one at a time: create, Ready,
#              delete, gone and its sandbox stopped (so the next pod gets
#              the rails back); one sample of the 8-move floor before each
#              round of a plain, an rg and, on a node with floor rails, a
#              "floor" pod (below), in the six orders by turns (6 divides N:
#              each kind follows each other one equally often)
#   parallel   P (default 4) of a kind at once, R (default 5) rounds, kinds
#              alternating
#   background with K > 0 (default 0): K plain pods started and left Ready,
#              then the serial run again ("nothing grows with the pods on
#              the node"), then they go
# Creation timestamps are whole seconds, so the times come from sources with
# sub-second resolution, all on this host's CLOCK_REALTIME:
#   created   this script's clock just before `kubectl create`
#   sandbox   containerd's log: "RunPodSandbox for <metadata>" and
#             "... returns sandbox id", then "StopPodSandbox for <id>
#             returns successfully" at the delete (the same wording in
#             containerd 1.6 and 2.4)
#   running   kubelet's log: "Observed pod startup duration" (observedRunningTime)
#   Ready     the arrival of the pod's first Ready=True on a watch
#   railgate  the agent's log: the CNI's report of each ADD and DEL, joined on
#             the sandbox id ("CNI ADD of sandbox <id> answered 0 in 152.301 ms
#             (8 rails: agent .., moves .., configure .., state .. ms)"); in DRA
#             mode the claim's "prepared: 8 units in X ms"; in device-plugin
#             mode Allocate and GetPreferredAllocation have no pod in their
#             API: their mean from the agent's metrics over the phase
#   floor     `bench-cni --floor-only 1 U` (the kernel's cost of the U moves
#             there and back, veth rails of its own; RAILGATE_BENCH_CNI names
#             the binary, default $RAILGATE_BUILD_DIR/tests/bench/bench-cni);
#             without it the floor column says why
#   floor in position: floor pods (floor-u<U>-..., no units) in the serial
#             runs, whose U moves floor-cni makes (tests/bench/floor-cni.c,
#             chained after ptp and before railgate by e2e.sh with bench
#             rails: the same moves with bare requests, of rails as the
#             bench rails are at home, up and addressed, in the same place
#             of the same kind of pod start) and logs with the sandbox id
#             ($T/log/floor-cni.log); without floor rails there are none
# and the agent's and kubelet's metrics before and after each phase (means
# from _sum/_count deltas, a cross-check). It prints the table (p50 / p95 by
# nearest rank over n pods, ms), for each railgate / floor ratio a 90%
# bootstrap interval and the p50 of each rg pod over its round's floor pod,
# and writes the raw per-pod CSV, the logs and
# metrics it read under $T/log/bench-<time>/. No time is asserted: exit 0
# when every pod came and went, 1 otherwise; 77 not root.
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$K8S_DIR/../.." && pwd)
PROG=tests/k8s/bench.sh
# shellcheck source=scripts/lib/log.sh
. "$ROOT/scripts/lib/log.sh"
# shellcheck source=scripts/lib/wait.sh
. "$ROOT/scripts/lib/wait.sh"
# shellcheck source=tests/k8s/lib.sh
. "$K8S_DIR/lib.sh"

need_root "the kept cluster's network namespace and logs"
SERIAL=20 PARALLEL=4 ROUNDS=5 UNITS=8 BACKGROUND=0
usage() { die "usage: $PROG [--serial N] [--parallel P] [--rounds R] [--units U] [--background K]"; }
while [ $# -gt 0 ]; do
  if [ $# -lt 2 ] || ! [[ $2 =~ ^[0-9]+$ ]]; then usage; fi
  case $1 in
  --serial) SERIAL=$2 ;;
  --parallel) PARALLEL=$2 ;;
  --rounds) ROUNDS=$2 ;;
  --units) UNITS=$2 ;;
  --background) BACKGROUND=$2 ;;
  *) usage ;;
  esac
  shift 2
done
[ "$UNITS" -ge 1 ] || die "--units: at least 1"

# ---- the kept cluster ----
KEEP_HINT="flock /tmp/railgate-k8s.lock env RAILGATE_K8S_BENCH_RAILS=32 bash tests/k8s/e2e.sh --keep"
T=$(cat "$K8S_KEPT" 2>/dev/null || true)
{ [ -n "$T" ] && [ -f "$T/cluster.env" ]; } || die "no kept cluster ($K8S_KEPT): start one with $KEEP_HINT"
declare -A PID=() SYSCTL_WAS=()
MODE=
# shellcheck disable=SC1091 # written by e2e.sh --keep (declare -p of K8S_STATE_VARS)
. "$T/cluster.env"
kc() { "$T/kubectl" "$@"; }
kc get --raw /readyz >/dev/null 2>&1 || die "the kept cluster in $T does not answer"
NODE=$(kc get nodes -o jsonpath='{.items[0].metadata.name}')
if [ -z "$MODE" ]; then # a cluster kept before e2e.sh recorded its mode
  MODE=devicePlugin
  ! kc get deviceclass tenant-bench.railgate.io >/dev/null 2>&1 || MODE=dra
fi
bench_rails=$(ip -n "$NS" -o link show | grep -cE '^[0-9]+: rail([4-9]|[1-9][0-9]+)[:@]' || true)
need=$((UNITS * (PARALLEL > 1 ? PARALLEL : 1)))
[ "$bench_rails" -ge "$need" ] ||
  die "$bench_rails bench rails on the node, $need needed ($PARALLEL pods of $UNITS at once): restart the cluster with RAILGATE_K8S_BENCH_RAILS=$need ($KEEP_HINT)"
kc get namespace bench >/dev/null 2>&1 || die "no namespace bench: restart the cluster with $KEEP_HINT"
[ -z "$(kc get pods -n bench -o name)" ] || die "namespace bench has pods already: delete them first"

BENCH_CNI=${RAILGATE_BENCH_CNI:-${RAILGATE_BUILD_DIR:-$ROOT/build}/tests/bench/bench-cni}
FLOOR_WHY=
if [ "$UNITS" -gt 8 ]; then
  FLOOR_WHY="the floor moves at most 8 NICs"
elif [ ! -x "$BENCH_CNI" ]; then
  FLOOR_WHY="no $BENCH_CNI (build tests/bench, or set RAILGATE_BENCH_CNI)"
elif ! "$BENCH_CNI" --floor-only 1 "$UNITS" 2>/dev/null | grep -q '^floor [0-9]'; then
  FLOOR_WHY="$BENCH_CNI has no --floor-only mode"
fi
[ -z "$FLOOR_WHY" ] || say "no floor samples: $FLOOR_WHY"
# the in-position floor: pods named floor-u<U>-... whose 8 moves floor-cni
# (chained after ptp by e2e.sh with bench rails) makes and logs
floor_rails=$(ip -n "$NS" -o link show | grep -cE '^[0-9]+: flr[0-9]+[:@]' || true)
FLOOR_PODS=0
if [ "$floor_rails" -ge "$UNITS" ] && nsenter -t "$HOLDER" -m -- test -x /opt/cni/bin/floor-cni; then
  FLOOR_PODS=1
else
  say "no floor pods: the node has $floor_rails floor rails and needs $UNITS, and floor-cni (a cluster from e2e.sh with RAILGATE_K8S_BENCH_RAILS)"
fi

OUT=$T/log/bench-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$OUT"
AGENT_SEL=(-n railgate-system -l app.kubernetes.io/component=node-agent)
say "cluster $T (mode $MODE, node $NODE, $bench_rails bench rails); serial $SERIAL, parallel $PARALLEL x $ROUNDS, $UNITS units, background $BACKGROUND; out $OUT"

# ---- the watch: every update of a bench pod, stamped on arrival ----
stamp() { # each line of stdin with this host's clock in front
  local l
  while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done
}
WATCH=$OUT/watch.txt
: >"$WATCH"
# (kubectl itself, not the function: $! is then its pid, nsenter and kubectl exec)
"$T/kubectl" get pods -n bench --watch \
  -o 'jsonpath={.metadata.name} {.metadata.uid} {.status.conditions[?(@.type=="Ready")].status}{"\n"}' \
  2>"$OUT/watch.err" > >(stamp >>"$WATCH") &
WATCHER=$!

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  kill "$WATCHER" 2>/dev/null
  wait "$WATCHER" 2>/dev/null
  if [ "$rc" -ne 0 ]; then # leave the cluster as it was found
    kc delete pods -n bench --all --wait=true --timeout=180s >/dev/null 2>&1
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
sleep 2 # the watch is established before the first create (it lists nothing)
kill -0 "$WATCHER" 2>/dev/null || die "kubectl get --watch failed: $(cat "$OUT/watch.err")"

# ---- pods ----
pod_doc() { # pod_doc NAME KIND: the pod's manifest (one List item)
  local limits=
  [ "$2" = plain ] || [ "$2" = bg ] || [ "$2" = floor ] || limits="
      resources:
        limits:
          railgate.io/tenant-bench: \"$UNITS\""
  cat <<EOF
- apiVersion: v1
  kind: Pod
  metadata:
    name: $1
    namespace: bench
    labels: {railgate.io/bench: "$2"}
  spec:
    nodeSelector: {kubernetes.io/hostname: $NODE}
    automountServiceAccountToken: false
    terminationGracePeriodSeconds: 1
    containers:
    - name: main
      image: railgate.test/busybox:e2e
      imagePullPolicy: Never
      command: ["sh", "-c", "trap 'exit 0' TERM; sleep 1000000 & wait"]$limits
EOF
}
pods_list() { # pods_list KIND NAME...: a List of the pods
  local kind=$1 n
  shift
  printf 'apiVersion: v1\nkind: List\nitems:\n'
  for n in "$@"; do pod_doc "$n" "$kind"; done
}
ready_line() { # ready_line T0 NAME: the watch's first Ready=True of NAME since T0
  awk -v t0="$1" -v n="$2" '$1 >= t0 && $2 == n && $4 == "True" { print; exit }' "$WATCH"
}
all_ready() { # all_ready T0 NAME...
  local t0=$1 n
  shift
  for n in "$@"; do [ -n "$(ready_line "$t0" "$n")" ] || return 1; done
}
sandbox_of() { # sandbox_of UID: the id containerd's RunPodSandbox returned for the pod
  grep -F "RunPodSandbox for" "$T/log/containerd.log" | grep -F "$1" | grep -F "returns sandbox id" |
    tail -n 1 | grep -oE '[0-9a-f]{64}' | tail -n 1
}
stopped() { # stopped SANDBOX...: containerd stopped each (the CNI's DEL done)
  local id
  for id in "$@"; do
    grep -F "StopPodSandbox for" "$T/log/containerd.log" | grep -F "$id" | grep -qF "returns successfully" ||
      return 1
  done
}
no_claims() { [ -z "$(kc get resourceclaims -n bench -o name 2>/dev/null)" ]; }
PODS=$OUT/pods.tsv # phase kind name uid sandbox t0 t_ready t_delete t_gone t_stopped claim
printf 'phase\tkind\tname\tuid\tsandbox\tt0\tt_ready\tt_delete\tt_gone\tt_stopped\tclaim\n' >"$PODS"
FLOOR=$OUT/floor.txt
: >"$FLOOR"
floor_sample() {
  [ -z "$FLOOR_WHY" ] || return 0
  "$BENCH_CNI" --floor-only 1 "$UNITS" >>"$FLOOR" 2>>"$OUT/floor.err" || say "bench-cni --floor-only failed"
}

# run_batch PHASE KIND NAME...: create the pods at once, wait until all are
# Ready, delete them, wait until they are gone and their sandboxes stopped
run_batch() {
  local phase=$1 kind=$2 t0 td tg ts n line uid id claim
  shift 2
  local -a ids=() uids=() claims=()
  pods_list "$kind" "$@" >"$OUT/batch.yaml"
  t0=$EPOCHREALTIME
  kc create -f "$OUT/batch.yaml" >/dev/null || die "creating $kind pods $*"
  wait_for 180 "$kind pods $* Ready" all_ready "$t0" "$@" || die "$kind pods $* did not become Ready"
  for n in "$@"; do
    line=$(ready_line "$t0" "$n")
    uid=$(awk '{ print $3 }' <<<"$line")
    uids+=("$uid")
    id=
    wait_for 30 "containerd's sandbox of $n" sandbox_of "$uid" || true
    id=$(sandbox_of "$uid")
    [ -n "$id" ] || die "no RunPodSandbox of $n ($uid) in $T/log/containerd.log"
    ids+=("$id")
    claim=-
    if [ "$MODE" = dra ] && [ "$kind" = rg ]; then # the claim the scheduler made for its units
      claim=$(kc get pod -n bench "$n" -o jsonpath='{.status.extendedResourceClaimStatus.resourceClaimName}')
    fi
    claims+=("${claim:--}")
  done
  td=$EPOCHREALTIME
  kc delete pod -n bench "$@" --wait=true --timeout="$(scaled 180)s" >/dev/null || die "deleting $*"
  tg=$EPOCHREALTIME
  wait_for 120 "the sandboxes of $* stopped" stopped "${ids[@]}" || die "the sandboxes of $* were not stopped"
  ts=$EPOCHREALTIME
  # DRA: their claims deallocated and gone too, so that the next pods find
  # every unit free for the scheduler (with --parallel P of U, all of them)
  [ "$MODE" != dra ] || wait_for 120 "the claims of $* gone" no_claims || die "the claims of $* stayed"
  local i=0
  for n in "$@"; do
    line=$(ready_line "$t0" "$n")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$phase" "$kind" "$n" "${uids[$i]}" "${ids[$i]}" \
      "$t0" "${line%% *}" "$td" "$tg" "$ts" "${claims[$i]}" >>"$PODS"
    i=$((i + 1))
  done
}

metrics_snap() { # metrics_snap NAME: the agent's and kubelet's metrics now
  in_node curl -sf --max-time 5 http://127.0.0.1:9402/metrics >"$OUT/agent-$1.prom" 2>/dev/null || true
  kc get --raw "/api/v1/nodes/$NODE/proxy/metrics" >"$OUT/kubelet-$1.prom" 2>/dev/null || true
}
in_node() { nsenter --net="/run/netns/$NS" "$@"; }

# The order of the kinds in serial round i: the six orders of plain, rg and
# floor by turns (plain and rg by turns without floor pods), so that each
# kind follows each other kind, and the quiet floor's sample, as often as any
# other does: what the pod before leaves (its namespace's teardown, the
# kernel's work after its moves) falls on every kind alike.
serial_order() { # serial_order I: the kinds of round I, one per line
  local -a orders=("plain rg floor" "rg floor plain" "floor plain rg" "plain floor rg" "rg plain floor"
    "floor rg plain")
  [ "$FLOOR_PODS" != 0 ] || orders=("plain rg" "rg plain")
  tr ' ' '\n' <<<"${orders[$(($1 % ${#orders[@]}))]}"
}

run_serial() { # run_serial PHASE
  local i kind
  metrics_snap "$1-before"
  for ((i = 1; i <= SERIAL; i++)); do
    floor_sample
    for kind in $(serial_order "$i"); do
      case $kind in
      floor) run_batch "$1" floor "floor-u$UNITS-$1-$i" ;;
      *) run_batch "$1" "$kind" "$kind-$1-$i" ;;
      esac
    done
  done
  metrics_snap "$1-after"
  say "$1: $SERIAL + $SERIAL pods"
}

run_parallel() { # run_parallel PHASE
  local r k kind
  local -a names kinds
  metrics_snap "$1-before"
  for ((r = 1; r <= ROUNDS; r++)); do
    floor_sample
    kinds=(plain rg)
    [ $((r % 2)) = 1 ] || kinds=(rg plain) # the other order every other round
    for kind in "${kinds[@]}"; do
      names=()
      for ((k = 1; k <= PARALLEL; k++)); do names+=("$kind-$1-$r-$k"); done
      run_batch "$1" "$kind" "${names[@]}"
    done
  done
  metrics_snap "$1-after"
  say "$1: $ROUNDS rounds of $PARALLEL + $PARALLEL pods"
}

# ---- the runs ----
start_s=$SECONDS
[ "$SERIAL" -eq 0 ] || run_serial serial
[ "$PARALLEL" -eq 0 ] || [ "$ROUNDS" -eq 0 ] || run_parallel parallel
if [ "$BACKGROUND" -gt 0 ] && [ "$SERIAL" -gt 0 ]; then
  bg=()
  for ((k = 1; k <= BACKGROUND; k++)); do bg+=("bg-$k"); done
  pods_list bg "${bg[@]}" >"$OUT/background.yaml"
  t_bg=$EPOCHREALTIME
  kc create -f "$OUT/background.yaml" >/dev/null || die "creating $BACKGROUND background pods"
  wait_for 600 "$BACKGROUND background pods Ready" all_ready "$t_bg" "${bg[@]}" ||
    die "the background pods did not become Ready"
  say "$BACKGROUND background pods Ready in $(awk -v a="$t_bg" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
  run_serial "bg$BACKGROUND"
  kc delete pods -n bench -l railgate.io/bench=bg --wait=true --timeout="$(scaled 600)s" >/dev/null ||
    die "deleting the background pods"
fi
say "all pods came and went in $((SECONDS - start_s)) s"

# ---- what the logs say ----
kc logs "${AGENT_SEL[@]}" -c device-plugin --tail=-1 >"$OUT/agent.log" 2>&1 || true
info() { kc get node "$NODE" -o jsonpath="{.status.nodeInfo.$1}"; }
python3 "$K8S_DIR/bench-report.py" --out "$OUT" --logs "$T/log" --mode "$MODE" --units "$UNITS" --parallel "$PARALLEL" \
  --background "$BACKGROUND" --floor-why "$FLOOR_WHY" --kubernetes "$(info kubeletVersion)" \
  --containerd "$(info containerRuntimeVersion)"
