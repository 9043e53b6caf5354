#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railgate on a real one-node Kubernetes cluster, with no Docker and no image
# registry: the pinned upstream release built from the Go module proxy
# (tests/k8s/build.sh), Debian's containerd and runc. The one command:
#
#   bash tests/k8s/e2e.sh [--keep]   (as root)
#
# --keep leaves the cluster running after the scenario (railgate installed)
# and prints how to reach it; tests/k8s/down.sh stops it.
#
# What it starts, all as plain processes stopped by PID at the end:
#   - etcd, kube-apiserver (own CA and certificates, made with openssl now;
#     ValidatingAdmissionPolicy on), kube-controller-manager, kube-scheduler
#   - the node: containerd (CRI, cgroupfs, restrict_oom_score_adj) and kubelet,
#     Debian's ptp as the primary CNI in /etc/cni/net.d and /opt/cni/bin
#   - railgate as users install it: its image (deploy/image.sh) imported into
#     the node's containerd under the name deploy/ uses, deploy/*.yaml applied
#     as written plus the node's key in the railgate-nodes ConfigMap; the
#     DaemonSet's init container renders /etc/railgate/node.json, copies the
#     CNI and its libraries to the node and chains it; its device plugin
#     container registers both tenants
# Everything runs inside a network namespace of its own holding four veth rail
# NICs (their peers in a second namespace), and the node's processes in a
# mount namespace of their own with fresh /run, /var/lib, /var/log and /opt
# and an overlay on /etc, so that the DaemonSet's hostPath volumes land in
# this run's files (one temporary directory), never in the host's. The host's
# interfaces and system dirs are never touched (kubelet's kernel sysctls are
# put back at the end). The images (pause, busybox) are built here and
# imported with ctr.
#
# The scenario (kind/e2e.sh's, sharing its assertions from tests/cluster/checks.sh):
# both tenant resources in capacity and allocatable; a team-b pod asking for
# tenant-a's resource denied by the admission policy; without the policy's
# binding the same pod refused by the CNI, stuck in ContainerCreating with the
# CNI's message in its events; a team-a pod with two units running with
# exactly its rails; kubelet and device plugin restarts re-register without
# allocatable ever dropping to 0 and leave the pod alone; a rail going down
# shows in allocatable; a rail in the pod losing its link (its fabric side
# down) shows in the pod's allocatedResourcesStatus and allocatable, then
# Healthy again, the pod untouched (its status kept in the log dir as
# ars-dp-*.yaml); deleting the pods brings every NIC home. Then the
# life of an install: a rolling update of the DaemonSet to a second image tag
# (running pods keep their rails, a new pod gets its own, each resource
# registered once by the new plugin); the uninstall of deploy/README.md
# (deploy/uninstall) leaves the node's files as they were before the install;
# a re-install with `helm install --take-ownership` works, and the chart's
# uninstall (`helm upgrade --set uninstall.enabled=true`, `helm uninstall`)
# leaves the node as it was again.
#
# Exit 0: every check passed; 1: a check failed or the cluster did not come
# up; 77: not root. RAILGATE_BUILD_DIR: the railgate build (default build/,
# configured and built here when its binaries are missing).
# RAILGATE_K8S_CONTAINERD: 1 (default) runs the node on Debian's containerd
# 1.6; 2 on containerd 2.x built from the Go module proxy (tests/k8s/build.sh
# containerd, cached like Kubernetes), whose CRI resolves CDI device names from
# /etc/cdi and /var/run/cdi (DRA mode needs it; 1.6 has no CDI).
# RAILGATE_K8S_MODE: devicePlugin (default) runs the scenario above; dra (with
# RAILGATE_K8S_CONTAINERD=2) installs deploy/dra/ (the node config's "mode":
# "dra", the DeviceClasses and the driver's RBAC) and runs DRA mode's
# two-tenant scenario, tests/k8s/dra.sh, with the same pod spec
# (railgate.io/tenant-a: 2).
# RAILGATE_K8S_BENCH_RAILS: n (default 0: none) more veth rails, rail4 to
# rail<3+n>, each with a simulated GPU, all of a third tenant, tenant-bench,
# in namespace bench (its own VRF table, 300), with its DeviceClass in DRA
# mode: what tests/k8s/bench.sh starts its pods on, on the cluster --keep
# leaves. The scenario itself is the same (it uses only tenant-a and b).
# With bench rails the node also gets the in-position floor: 8 more veth
# rails, flr0 to flr7, and tests/bench's floor-cni chained after ptp, which
# moves them into a pod named floor-u<N>-... (and home at its DEL, then up
# and addressed as railgate's DEL leaves its rails) with bare requests and
# logs the time, for tests/k8s/bench.sh's floor pods.
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$K8S_DIR/../.." && pwd)
PROG=tests/k8s/e2e.sh
# shellcheck source=scripts/lib/log.sh
. "$ROOT/scripts/lib/log.sh"
# shellcheck source=scripts/lib/wait.sh
. "$ROOT/scripts/lib/wait.sh"
# shellcheck source=scripts/lib/template.sh
. "$ROOT/scripts/lib/template.sh"
# shellcheck source=tests/cluster/checks.sh
. "$ROOT/tests/cluster/checks.sh"
# shellcheck source=tests/k8s/lib.sh
. "$K8S_DIR/lib.sh"

need_root "network namespaces, containerd, kubelet"
KEEP=false
KEPT=0
for a in "$@"; do
  case $a in
  --keep) KEEP=true ;;
  *) die "usage: $PROG [--keep]" ;;
  esac
done
CONTAINERD_MAJOR=${RAILGATE_K8S_CONTAINERD:-1}
case $CONTAINERD_MAJOR in
1) NEEDED=(containerd containerd-shim-runc-v2 ctr) ;;
2) NEEDED=() ;;
*) die "RAILGATE_K8S_CONTAINERD must be 1 (Debian's containerd) or 2 (containerd 2.x), not '$CONTAINERD_MAJOR'" ;;
esac
MODE=${RAILGATE_K8S_MODE:-devicePlugin}
case $MODE in
devicePlugin) ;;
dra) [ "$CONTAINERD_MAJOR" = 2 ] || die "RAILGATE_K8S_MODE=dra needs RAILGATE_K8S_CONTAINERD=2 (containerd 1.6 has no CDI)" ;;
*) die "RAILGATE_K8S_MODE must be devicePlugin or dra, not '$MODE'" ;;
esac
BENCH_RAILS=${RAILGATE_K8S_BENCH_RAILS:-0}
{ [[ $BENCH_RAILS =~ ^[0-9]+$ ]] && [ "$BENCH_RAILS" -le 64 ]; } ||
  die "RAILGATE_K8S_BENCH_RAILS must be 0 to 64, not '$BENCH_RAILS'"
need_cmds "${NEEDED[@]}" runc openssl gcc curl nsenter unshare ip
[ -x /usr/lib/cni/ptp ] || die "/usr/lib/cni/ptp is missing (containernetworking-plugins)"

# ---- binaries ----
BIN=$(bash "$K8S_DIR/build.sh") || die "building Kubernetes failed"
if [ "$CONTAINERD_MAJOR" = 2 ]; then
  # containerd, ctr and the shim containerd starts (found on PATH) all from the build
  CONTAINERD_BIN=$(bash "$K8S_DIR/build.sh" containerd) || die "building containerd 2 failed"
  export PATH="$CONTAINERD_BIN:$PATH"
fi
HELM=$(bash "$ROOT/scripts/helm.sh") || die "building helm failed"
BUILD=${RAILGATE_BUILD_DIR:-$ROOT/build}
RG_INSTALL=$BUILD/installer/railgate-cni-install # validates the node config before it is applied
if [ ! -x "$RG_INSTALL" ]; then
  say "building railgate-cni-install in $BUILD"
  [ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" -j2 --target railgate-cni-install >/dev/null
fi
FLOOR_CNI=$BUILD/tests/bench/floor-cni
FLOOR_RAILS=0
if [ "$BENCH_RAILS" -gt 0 ]; then
  FLOOR_RAILS=8
  if [ ! -x "$FLOOR_CNI" ]; then
    say "building floor-cni in $BUILD"
    cmake --build "$BUILD" -j2 --target floor-cni >/dev/null
  fi
fi

# ---- names ----
T=$(mktemp -d /tmp/railgate-k8s.XXXXXX)
chmod 0755 "$T"
NS=rgk8s-$$      # the node: control plane, containerd, kubelet, the rails
FABRIC=rgk8sf-$$ # the rails' peers
NODE=rg-node
NODE_IP=192.0.2.10 # on the node namespace's lo: kubelet wants a non-loopback address
CGROUP=rgk8s-$$    # kubelet's cgroup root, in every cgroup v1 hierarchy
SOCK=$T/containerd/containerd.sock
KUBECONFIG_FILE=$T/pki/admin.kubeconfig
KUBELET_DIR=$T/kubelet # /var/lib/kubelet on the node
IMAGE=docker.io/library/railgate:0.1.0 # what deploy/'s "railgate:0.1.0" names
IMAGE_NEXT=docker.io/library/railgate:0.1.0-next # the rolling update's
AGENT=(-n railgate-system -l app.kubernetes.io/component=node-agent)
mkdir -p "$T/log" "$T/pki" "$KUBELET_DIR" "$T/cni/ipam" "$T/nodes" "$T/pod-logs" \
  "$T/etc/upper" "$T/etc/work"
mapfile -t HIERARCHIES < <(awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts)
declare -A PID=()
HOLDER=
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
declare -A SYSCTL_WAS=()
for s in "${SYSCTLS[@]}"; do
  SYSCTL_WAS[$s]=$(sysctl -n "$s")
done

# ---- processes ----
# the node's network with the host's files; the node's network and mounts
# (arrays, so that start's $! is the process itself: nsenter execs it)
IN_NS=(nsenter --net="/run/netns/$NS")
IN_NODE=()
in_ns() { "${IN_NS[@]}" "$@"; }
kctl() { in_ns "$BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }
helm() { in_ns env KUBECONFIG="$KUBECONFIG_FILE" HELM_CACHE_HOME="$T/helm/cache" \
  HELM_CONFIG_HOME="$T/helm/config" HELM_DATA_HOME="$T/helm/data" "$HELM" "$@"; }
on_node_fs() { "${IN_NODE[@]}" "$@"; } # the node's files: its mounts, the host's pids

cleanup() {
  local rc=$? name
  set +e
  trap - EXIT INT TERM
  if [ "$KEPT" = 1 ]; then # --keep: tests/k8s/down.sh stops it
    exit "$rc"
  fi
  if alive kube-apiserver && alive kubelet; then
    kctl delete pod -n team-a --all --wait=true --timeout=60s >/dev/null 2>&1
    kctl delete pod -n team-b --all --wait=true --timeout=60s >/dev/null 2>&1
  fi
  k8s_teardown
  if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
    for name in "$T"/log/*.log "$T"/pod-logs/railgate-system_*/*/*.log; do
      [ -f "$name" ] || continue
      printf '\n---- last lines of %s\n' "${name##*/}"
      tail -n 25 "$name"
    done
    printf '\n---- kubelet on device plugins and DRA\n'
    grep -E 'registration request|[Dd]evice plugin|new client|[Dd]eregistered|already connected|DRA|dra' \
      "$T/log/kubelet.log" | tail -n 60
  fi
  if [ "${RAILGATE_K8S_KEEP_DIR:-0}" = 1 ]; then
    say "kept $T"
  else
    rm -rf "$T"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the node's namespaces and rails ----
section "setup: namespaces, rails, certificates, control plane, node"
ip netns add "$NS"
ip netns add "$FABRIC"
ip -n "$NS" link set lo up
ip -n "$NS" addr add "$NODE_IP/32" dev lo
ip -n "$FABRIC" link set lo up
RAILS=(0 1 2 3)
BENCH=() # tenant-bench's rails, after the scenario's: 10.250.<k>.0/24
for ((k = 4; k < 4 + BENCH_RAILS; k++)); do BENCH+=("$k"); done
for k in "${RAILS[@]}" "${BENCH[@]}"; do
  if [ "$k" -lt 4 ]; then o=$(octet "$k") && a=$(host_address 1 "$k"); else o=250 && a=10.250.$k.101/24; fi
  ip -n "$NS" link add "rail$k" type veth peer name "fab$k" netns "$FABRIC"
  ip -n "$NS" link set "rail$k" mtu 1500 up
  ip -n "$NS" addr add "$a" dev "rail$k"
  ip -n "$FABRIC" addr add "10.$o.$k.1/24" dev "fab$k"
  ip -n "$FABRIC" link set "fab$k" mtu 9000 up
done
# the floor pods' rails: no tenant's; as the bench rails are at home (up, addressed, their
# peers addressed with MTU 9000), which floor-cni's DEL restores: a move takes the address
# and its routes along, which costs the kernel more than moving a bare link
for ((k = 0; k < FLOOR_RAILS; k++)); do
  ip -n "$NS" link add "flr$k" type veth peer name "flrp$k" netns "$FABRIC"
  ip -n "$NS" link set "flr$k" mtu 1500 up
  ip -n "$NS" addr add "10.251.$k.101/24" dev "flr$k"
  ip -n "$FABRIC" addr add "10.251.$k.1/24" dev "flrp$k"
  ip -n "$FABRIC" link set "flrp$k" mtu 9000 up
done

# The node's mount namespace: the netns' own sysfs with the host's cgroup
# hierarchies on it, and empty /run, /var/lib, /var/log (containerd's shim
# sockets, libcni's cache, kubelet's container log links land there), /opt
# (the CNI's bin dir and railgate's libraries) and an overlay on /etc whose
# writes land in $T/etc/upper (the CNI config, /etc/railgate). Kubelet's root
# dir /var/lib/kubelet is $KUBELET_DIR, bound: the host sees its sockets.
for h in "${HIERARCHIES[@]}"; do
  mkdir -p "$h/$CGROUP"
  if [ -e "$h/cpuset.cpus" ]; then
    cat "$h/cpuset.cpus" >"$h/$CGROUP/cpuset.cpus"
    cat "$h/cpuset.mems" >"$h/$CGROUP/cpuset.mems"
  fi
done
mkdir -p "$T/cgroup"
# shellcheck disable=SC2016 # $1 is the inner shell's
unshare -m --propagation slave nsenter --net="/run/netns/$NS" sh -ec '
  mount --rbind /sys/fs/cgroup "$1/cgroup"
  mount -t sysfs sysfs /sys
  mount --rbind "$1/cgroup" /sys/fs/cgroup
  umount -l "$1/cgroup"
  for d in /run /var/lib /var/log /opt; do mount -t tmpfs -o mode=0755 railgate-k8s "$d"; done
  mount -t overlay railgate-k8s -o "lowerdir=/etc,upperdir=$1/etc/upper,workdir=$1/etc/work" /etc
  mkdir -p /var/lib/kubelet
  mount --bind "$1/kubelet" /var/lib/kubelet
  touch "$1/holder.ready"
  exec sleep infinity' holder "$T" >"$T/log/holder.log" 2>&1 &
HOLDER=$!
IN_NODE=(nsenter -t "$HOLDER" -m -n --)
wait_for 10 "the node's mount namespace" test -e "$T/holder.ready" || die "the node's mount namespace did not come up"

# ---- certificates ----
P=$T/pki
key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }
cert() { # cert NAME SUBJECT [SANS]
  key "$P/$1.key"
  openssl req -new -key "$P/$1.key" -subj "$2" -out "$P/$1.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [ -z "${3:-}" ] || echo "subjectAltName=$3"
  } >"$P/$1.ext"
  openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
    -days 2 -extfile "$P/$1.ext" -out "$P/$1.crt" 2>/dev/null
}
key "$P/ca.key"
openssl req -x509 -new -key "$P/ca.key" -subj /CN=railgate-k8s-ca -days 2 -out "$P/ca.crt" 2>/dev/null
cert apiserver /CN=kube-apiserver \
  "IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default.svc"
cert admin "/O=system:masters/CN=railgate-k8s-admin"
key "$P/sa.key"
openssl ec -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
render "$K8S_DIR/node/admin.kubeconfig" PKI="$P" >"$KUBECONFIG_FILE"

# ---- control plane ----
start etcd "${IN_NS[@]}" "$BIN/etcd" --name rg --data-dir "$T/etcd" --unsafe-no-fsync \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster rg=http://127.0.0.1:2380
wait_for 60 etcd in_ns curl -fsS http://127.0.0.1:2379/health || die "etcd did not come up"
start kube-apiserver "${IN_NS[@]}" "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
  --bind-address=0.0.0.0 --secure-port=6443 --advertise-address="$NODE_IP" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --service-cluster-ip-range=10.96.0.0/16 \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction,ValidatingAdmissionPolicy \
  --kubelet-client-certificate="$P/admin.crt" --kubelet-client-key="$P/admin.key" \
  --kubelet-preferred-address-types=InternalIP \
  --allow-privileged=true --profiling=false --cert-dir="$T/apiserver"
wait_for 180 kube-apiserver kctl get --raw /readyz || die "kube-apiserver did not become ready"
start kube-controller-manager "${IN_NS[@]}" "$BIN/kube-controller-manager" \
  --kubeconfig="$KUBECONFIG_FILE" --authentication-kubeconfig="$KUBECONFIG_FILE" \
  --authorization-kubeconfig="$KUBECONFIG_FILE" --leader-elect=false \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --use-service-account-credentials=false --bind-address=127.0.0.1 --cert-dir="$T/kcm"
start kube-scheduler "${IN_NS[@]}" "$BIN/kube-scheduler" --kubeconfig="$KUBECONFIG_FILE" \
  --authentication-kubeconfig="$KUBECONFIG_FILE" --authorization-kubeconfig="$KUBECONFIG_FILE" \
  --leader-elect=false --bind-address=127.0.0.1
say "control plane up: $(kctl version 2>/dev/null | tr '\n' ' ')"

# ---- the node: its primary CNI, its simulated GPUs, its railgate config ----
# Debian's ptp in /etc/cni/net.d and /opt/cni/bin, as a node's primary CNI
# (links to /usr/lib/cni, made here in the node's /opt); the GPU device nodes
# under /etc/railgate/sim, a path the device plugin's container mounts too
# (the node config's devRoot)
# the conflist on stdin, with floor-cni after ptp when the node has floor rails
floor_chained() {
  if [ "$FLOOR_RAILS" = 0 ]; then
    cat
    return
  fi
  python3 -c 'import json, sys
c = json.load(sys.stdin)
n = int(sys.argv[1])
c["plugins"].append({"type": "floor-cni", "rails": n, "railPrefix": "flr",
                     "podPrefix": "floor-", "log": sys.argv[2],
                     "hostAddresses": ["10.251.%d.101/24" % k for k in range(n)]})
json.dump(c, sys.stdout, indent=2)' "$FLOOR_RAILS" "$T/log/floor-cni.log"
}
# shellcheck disable=SC2016 # the node's shell expands them
on_node_fs sh -ec '
  mkdir -p /opt/cni/bin /etc/cni/net.d /etc/railgate/sim/dev/railgate
  for p in ptp host-local loopback; do ln -s "/usr/lib/cni/$p" "/opt/cni/bin/$p"; done
  for k in "$@"; do mknod -m 0666 "/etc/railgate/sim/dev/railgate/gpu$k" c 1 3; done
  cat >/etc/cni/net.d/10-pods.conflist' node "${RAILS[@]}" "${BENCH[@]}" \
  < <(render "$K8S_DIR/node/10-pods.conflist" T="$T" | floor_chained)
if [ "$FLOOR_RAILS" -gt 0 ]; then
  # shellcheck disable=SC2016 # the node's shell expands it
  on_node_fs sh -ec 'ln -s "$1" /opt/cni/bin/floor-cni' node "$FLOOR_CNI"
fi
# This node's key in the railgate-nodes ConfigMap: its rails by name and the
# simulated GPUs; kubeletDir and stateDir are the defaults the DaemonSet mounts;
# the agent's metrics on loopback of the node's netns (the agent is hostNetwork)
{
  printf '{"domain": "railgate.io", "devRoot": "/etc/railgate/sim", "logFile": "/var/log/railgate-cni.log",\n'
  [ "$MODE" = devicePlugin ] || printf ' "mode": "%s",\n' "$MODE"
  printf ' "metrics": {"listen": "127.0.0.1:9402"},\n'
  printf ' "rails": [\n'
  sep=
  for k in "${RAILS[@]}" "${BENCH[@]}"; do
    if [ "$k" -lt 4 ]; then o=$(octet "$k") && numa=$((k / 2)); else o=250 && numa=0; fi
    printf '%s  {"index": %d, "numa": %d, "mtu": 9000, "gpu": {"simulated": "gpu%d", "minor": %d, "devices": ["/dev/railgate/gpu%d"]},\n' \
      "$sep" "$k" "$numa" "$k" "$k" "$k"
    printf '   "nic": {"name": "rail%d"}, "address": "10.%d.%d.11/24", "gateway": "10.%d.%d.1"}' \
      "$k" "$o" "$k" "$o" "$k"
    sep=$',\n'
  done
  printf '\n ], "tenants": [\n'
  printf '  {"name": "tenant-a", "namespaces": ["team-a"], "rails": [0, 1], "vrf": {"table": 100, "prefixes": ["10.100.0.0/16"]}},\n'
  printf '  {"name": "tenant-b", "namespaces": ["team-b"], "rails": [2, 3], "vrf": {"table": 200, "prefixes": ["10.200.0.0/16"]}}'
  if [ "${#BENCH[@]}" -gt 0 ]; then
    printf ',\n  {"name": "tenant-bench", "namespaces": ["bench"], "rails": [%s], "vrf": {"table": 300, "prefixes": ["10.250.0.0/16"]}}' \
      "$(IFS=,; echo "${BENCH[*]}")"
  fi
  printf '\n ]}\n'
} >"$T/nodes/$NODE"
"$RG_INSTALL" check-config "$T/nodes/$NODE" >/dev/null

# ---- containerd and the images ----
# Debian's 1.6 reads config version 2, containerd 2.4 its own version 4
# (it would migrate older ones, and warn): the same node either way, cgroupfs,
# restrict_oom_score_adj (a negative oom_score_adj fails with EIO on these
# VMs), no host config imported; 2.x's CRI resolves CDI names from the
# default spec dirs, which are the node's (tmpfs /run, the overlay on /etc)
render "$K8S_DIR/node/containerd-$CONTAINERD_MAJOR.toml" T="$T" SOCK="$SOCK" >"$T/containerd.toml"
start containerd "${IN_NODE[@]}" containerd --config "$T/containerd.toml"
wait_for 60 containerd ctr --address "$SOCK" version || die "containerd did not come up"
say "containerd: $(ctr --address "$SOCK" version 2>/dev/null | awk '/Server:/ { s = 1 } s && /Version:/ { print $2; exit }')"
bash "$K8S_DIR/image.sh" pause "$T/pause.tar"
bash "$K8S_DIR/image.sh" busybox "$T/busybox.tar"
cctl images import "$T/pause.tar" >/dev/null
cctl images import "$T/busybox.tar" >/dev/null
# railgate's own image as users get it (deploy/image.sh: the release build on
# Debian 12 with the runtime libraries), under the name deploy/ runs: with
# imagePullPolicy IfNotPresent kubelet never pulls it
image_start=$SECONDS
bash "$ROOT/deploy/image.sh" "$T/railgate.tar" "$IMAGE" 2>"$T/log/image.log" ||
  die "deploy/image.sh failed: $(tail -n 5 "$T/log/image.log")"
say "railgate image: $(du -m "$T/railgate.tar" | cut -f1) MB, built in $((SECONDS - image_start)) s"
cctl images import "$T/railgate.tar" >/dev/null
cctl images tag "$IMAGE" "$IMAGE_NEXT" >/dev/null
grep -qx "$IMAGE" <<<"$(cctl images ls -q)" || die "the railgate image is not in containerd after the import"
# (ctr's fifos must be where the shim looks: in the node's mounts)
check "railgate's image imports into containerd and its binaries run in it" \
  "${IN_NODE[@]}" ctr --address "$SOCK" -n k8s.io run --rm "$IMAGE" "rg-image-$$" /bin/sh -ec \
  'railgate-device-plugin --help >/dev/null && railgate-cni-install --help >/dev/null &&
   test -x /opt/railgate/host/railgate && test -f /opt/railgate/host/lib/libc.so.6'

# ---- kubelet ----
: >"$T/resolv.conf"
render "$K8S_DIR/node/kubelet.yaml" CGROUP="$CGROUP" SOCK="$SOCK" T="$T" PKI="$P" >"$T/kubelet.yaml"
start_kubelet() {
  start kubelet "${IN_NODE[@]}" "$BIN/kubelet" --config="$T/kubelet.yaml" --kubeconfig="$KUBECONFIG_FILE" \
    --root-dir=/var/lib/kubelet --cert-dir=/var/lib/kubelet/pki --hostname-override="$NODE" \
    --node-ip="$NODE_IP" -v=2
}
start_kubelet
wait_for 120 "node $NODE Ready" kctl wait --for=condition=Ready "node/$NODE" --timeout=1s ||
  die "node $NODE did not become Ready"

# What railgate may touch on the node, before it is installed: every name with
# its type and mode (kubelet's own checkpoint aside), and what the CNI configs
# say (their JSON with sorted keys: the installer rewrites a file with its
# own layout, keeping every key, value and order of plugins)
node_files() {
  # shellcheck disable=SC2016 # the node's shell expands them
  on_node_fs sh -c '
    find /opt /etc/cni /etc/railgate /var/lib/railgate /var/lib/kubelet/device-plugins \
      ! -name kubelet_internal_checkpoint -printf "%p %y %m\n" 2>/dev/null | sort
    for f in /etc/cni/net.d/*; do
      printf "%s " "$f"
      python3 -c "import json, sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))" <"$f"
    done'
}
node_files >"$T/node-files.before"

# ---- railgate, installed as deploy/README.md says ----
section "railgate installed from deploy/ (mode $MODE): the DaemonSet's init container and its agent"
install_start=$SECONDS
if [ "$MODE" = dra ]; then # deploy/dra/: the node configs, the DaemonSet, the DeviceClasses and RBAC
  manifests=(namespace.yaml rbac.yaml dra/configmap.yaml tenants.yaml admission.yaml dra/dra.yaml
    dra/daemonset.yaml)
else
  manifests=(namespace.yaml rbac.yaml configmap.yaml tenants.yaml admission.yaml daemonset.yaml)
fi
apply_args=()
for m in "${manifests[@]}"; do apply_args+=(-f "$ROOT/deploy/$m"); done
kctl apply "${apply_args[@]}" >/dev/null
if [ "${#BENCH[@]}" -gt 0 ]; then # tenant-bench's namespace (the policy reads its label) and class
  kctl create namespace bench >/dev/null
  kctl label namespace bench railgate.io/tenant=tenant-bench >/dev/null
  [ "$MODE" != dra ] || kctl apply -f "$K8S_DIR/dra/bench-class.yaml" >/dev/null
fi
if [ "$MODE" = dra ]; then
  # no kube-proxy here: the agent reaches the API server (for its claims and
  # slices) at the node's address, which the server's certificate names
  kctl -n railgate-system set env daemonset/railgate -c device-plugin \
    KUBERNETES_SERVICE_HOST="$NODE_IP" KUBERNETES_SERVICE_PORT=6443 >/dev/null
fi
# the node's own key in the ConfigMap, then the label that puts the agent there
patch=$(python3 -c 'import json, sys; print(json.dumps({"data": {sys.argv[1]: open(sys.argv[2]).read()}}))' \
  "$NODE" "$T/nodes/$NODE")
kctl -n railgate-system patch configmap railgate-nodes --type merge -p "$patch" >/dev/null
kctl label node "$NODE" railgate.io/node=true >/dev/null
agent_ready() { kctl -n railgate-system rollout status daemonset/railgate --timeout=1s; }
check "the DaemonSet rolls out on $NODE" wait_for 180 "daemonset/railgate" agent_ready

allocatable() { # allocatable TENANT
  kctl get node "$NODE" -o jsonpath="{.status.allocatable.railgate\\.io/$1}"
}
capacity() { kctl get node "$NODE" -o jsonpath="{.status.capacity.railgate\\.io/$1}"; }
offers() { [ "$(allocatable tenant-a)" = "$1" ] && [ "$(allocatable tenant-b)" = "$2" ]; }
[ "$MODE" = dra ] || wait_for 90 "railgate.io/tenant-a: 2 and tenant-b: 2 in allocatable" offers 2 2 || true
say "railgate installed and offered in $((SECONDS - install_start)) s; cluster in $T"

# Leave the cluster running (--keep): what tests/k8s/down.sh needs to stop it,
# a kubectl for it, and how to reach it
keep_cluster() {
  declare -p "${K8S_STATE_VARS[@]}" >"$T/cluster.env"
  printf '#!/bin/sh\n# kubectl for the cluster tests/k8s/e2e.sh --keep left running\nexec nsenter --net=/run/netns/%s %s --kubeconfig %s "$@"\n' \
    "$NS" "$BIN/kubectl" "$KUBECONFIG_FILE" >"$T/kubectl"
  chmod 0755 "$T/kubectl"
  echo "$T" >"$K8S_KEPT"
  KEPT=1
  cat <<EOF

The cluster keeps running (mode $MODE, railgate installed), in $T:
  kubeconfig       $KUBECONFIG_FILE (the API server listens in the node's netns)
  kubectl          $T/kubectl get pods -A     (nsenter into the node's netns, then kubectl)
  the node's netns /run/netns/$NS: ip netns exec $NS ip -br link    (rails rail0-rail$((3 + ${#BENCH[@]})))
  the node's files nsenter -t $HOLDER -m -n -- ls /var/lib/railgate /etc/cni/net.d
  logs             $T/log/ (kubelet, containerd, the control plane)
  stop it          bash tests/k8s/down.sh    (or: bash tests/k8s/down.sh $T)
EOF
  [ "${#BENCH[@]}" -eq 0 ] ||
    echo "  pod start bench  bash tests/k8s/bench.sh    (tenant-bench: rails rail4-rail$((3 + ${#BENCH[@]})))"
}

finish() { # the count, the cluster kept or not, the exit status
  printf '\n%d passed, %d failed (in %d s)\n' "$passed" "$failed" "$SECONDS"
  ! $KEEP || keep_cluster
  [ "$failed" -eq 0 ]
}

# ---- how the shared checks look ----
node_number() { echo 1; }
on_node() { # on_node NODE COMMAND...
  shift
  in_ns "$@" 2>/dev/null || true
}
sandbox_pid() { # sandbox_pid NAMESPACE NAME: the pid of the pod's running sandbox
  local id pid status c
  for id in $(cctl containers ls -q "labels.\"io.kubernetes.pod.namespace\"==$1,labels.\"io.kubernetes.pod.name\"==$2,labels.\"io.cri-containerd.kind\"==sandbox" 2>/dev/null); do
    while read -r c pid status; do
      [ "$c" = "$id" ] && [ "$status" = RUNNING ] && echo "$pid" && return 0
    done < <(cctl tasks ls 2>/dev/null | tail -n +2)
  done
  return 1
}
sandbox_ids() { # sandbox_ids NAMESPACE NAME: the ids of the pod's sandboxes in containerd
  cctl containers ls -q "labels.\"io.kubernetes.pod.namespace\"==$1,labels.\"io.kubernetes.pod.name\"==$2,labels.\"io.cri-containerd.kind\"==sandbox" 2>/dev/null
}
# cni_reported NAMESPACE NAME RAILS: the agent logged the CNI's report of the
# pod's ADD at info, with its sandbox id, its rails and where the time went
cni_reported() {
  local id
  for id in $(sandbox_ids "$1" "$2"); do
    kctl logs "${AGENT[@]}" --tail=-1 -c device-plugin 2>/dev/null |
      grep -F "CNI ADD of sandbox $id answered 0 in" |
      grep -qE "ms \($3 rails: agent [0-9.]+, moves [0-9.]+, configure [0-9.]+, state [0-9.]+ ms\)" && return 0
  done
  return 1
}
in_pod() { # in_pod NAMESPACE NAME COMMAND...: ip in the pod's netns, the rest in its container
  local ns=$1 name=$2 pid
  shift 2
  if [ "$1" = ip ]; then
    if pid=$(sandbox_pid "$ns" "$name"); then
      nsenter -t "$pid" -n "$@" 2>/dev/null || true
    fi
  else
    kctl exec -n "$ns" "$name" -- "$@" 2>/dev/null || true
  fi
}

# Records every update of the node's allocatable into FILE until stopped: watch_start FILE
watch_start() {
  "${IN_NS[@]}" "$BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" get node "$NODE" --watch \
    -o 'jsonpath={.status.allocatable.railgate\.io/tenant-a}/{.status.allocatable.railgate\.io/tenant-b}{"\n"}' \
    >"$1" 2>>"$T/log/watch.log" &
  PID[watch]=$!
}
never_below() { # never_below FILE: no sample lacks a resource or shows 0
  ! grep -qvE '^[1-9][0-9]*/[1-9][0-9]*$' "$1"
}
# one_dip FILE: no sample lacks a resource, the samples with a 0 (if any) are one
# run, and the last sample has both. A restarted kubelet reads its checkpoint and
# holds every plugin resource at 0 until that plugin's Register and first
# ListAndWatch answer land (devicemanager readCheckpoint); whether a node status
# update falls in that window is kubelet's timing, not the plugin's.
one_dip() {
  awk -F/ '!/^[0-9]+\/[0-9]+$/ { bad = 1 }
    { zero = ($1 == 0 || $2 == 0) }
    zero && seen_back { bad = 1 }
    zero { dipped = 1 }
    !zero && dipped { seen_back = 1 }
    { last_zero = zero }
    END { exit (bad || NR == 0 || last_zero) }' "$1"
}
pod_fingerprint() { # uid, container id, restarts, ready
  kctl get pod -n "$1" "$2" -o jsonpath='{.metadata.uid} {.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].ready}'
}

metric() { # metric SERIES: its value in the agent's /metrics, empty when it has none
  in_ns curl -sf --max-time 5 http://127.0.0.1:9402/metrics 2>/dev/null | awk -v s="$1" '$1 == s { print $2 }'
}
metric_is() { [ "$(metric "$1")" = "$2" ]; } # metric_is SERIES VALUE
node_fs() { # node_fs NODE COMMAND...: with the node's files
  shift
  on_node_fs "$@"
}
restore_binding() { kctl apply -f "$ROOT/deploy/admission.yaml" >/dev/null; }

# ==== the scenario ====
if [ "$MODE" = dra ]; then
  # shellcheck source=tests/k8s/dra.sh
  . "$K8S_DIR/dra.sh"
  finish
  exit
fi
section "the device plugin registers both tenant resources with kubelet"
for t in tenant-a tenant-b; do
  check "$NODE capacity railgate.io/$t: 2" equals "$(capacity $t)" 2
  check "$NODE allocatable railgate.io/$t: 2" equals "$(allocatable $t)" 2
done
check "kubelet's PodResources socket is there for the node agent" test -S "$KUBELET_DIR/pod-resources/kubelet.sock"
check "the node agent's socket is on the node for the CNI, root's and 0600" \
  equals "$(on_node_fs stat -c '%F %a %U' /var/lib/railgate/agent.sock 2>&1)" "socket 600 root"
for t in tenant-a tenant-b; do
  check "metrics: railgate.io/$t registered once, reason start" wait_for 30 "the agent's metrics" \
    metric_is "railgate_registrations_total{resource=\"railgate.io/$t\",reason=\"start\"}" 1
  check "metrics: $t has 2 healthy units, 0 unhealthy" \
    equals "$(metric "railgate_units{tenant=\"$t\",health=\"healthy\"}")/$(metric "railgate_units{tenant=\"$t\",health=\"unhealthy\"}")" 2/0
done

wait_service_accounts
check_intruder "$NODE"

section "a team-a pod with two units runs with exactly its rails"
allocs=$(metric 'railgate_allocate_requests_total{resource="railgate.io/tenant-a",code="OK"}')
pod_yaml team-a a1 "$NODE" railgate.io/tenant-a 2 | kctl apply -f - >/dev/null
check "team-a/a1 Ready" kctl wait --for=condition=Ready -n team-a pod/a1 --timeout=180s
check "metrics: one more Allocate of railgate.io/tenant-a answered OK (${allocs:-none} before)" \
  metric_is 'railgate_allocate_requests_total{resource="railgate.io/tenant-a",code="OK"}' $((${allocs:-0} + 1))
check "metrics: the Allocate latency histogram counts it too" \
  metric_is 'railgate_allocate_duration_seconds_count{resource="railgate.io/tenant-a"}' $((${allocs:-0} + 1))
check_pod team-a a1 tenant-a "$NODE" 100 0 1
check "the agent logged a1's CNI ADD: its sandbox id, 2 rails and the phases" \
  wait_for 30 "the report" cni_reported team-a a1 2
check "allocatable unchanged while in use (railgate.io/tenant-a: 2)" equals "$(allocatable tenant-a)" 2
a1_before=$(pod_fingerprint team-a a1)

# Registrations in kubelet's log, which holds every kubelet run
connected() { grep -c 'Connected to new client' "$T/log/kubelet.log" 2>/dev/null || true; }
registered() { [ "$(connected)" -ge "$1" ]; } # registered N: N accepted in all
registrations() { # registrations TENANT: Register calls kubelet got for its resource
  grep 'Got registration request' "$T/log/kubelet.log" 2>/dev/null |
    grep -c "resourceName=\"railgate.io/$1\"" || true
}
agent_pod() { kctl get pod "${AGENT[@]}" -o jsonpath='{.items[*].metadata.name}'; }
keep_agent_log() { # the agent's device plugin log into $T/log before its pod goes (kubelet drops it)
  local p
  p=$(agent_pod) || return 0
  [ -z "$p" ] || kctl -n railgate-system logs "$p" -c device-plugin >"$T/log/agent-$p.log" 2>&1 || true
}
plugin_container() { # the device plugin container's id and restart count
  kctl get pod "${AGENT[@]}" \
    -o jsonpath='{.items[0].status.containerStatuses[?(@.name=="device-plugin")].containerID} {.items[0].status.containerStatuses[?(@.name=="device-plugin")].restartCount}'
}
plugin_pid() { # the device plugin's pid, from containerd's tasks
  local id
  id=$(plugin_container)
  id=${id%% *}
  id=${id#containerd://}
  [ -n "$id" ] && cctl tasks ls 2>/dev/null | awk -v id="$id" '$1 == id && $3 == "RUNNING" { print $2 }'
}
# once_more TENANT... BEFORE...: after a status period, kubelet got exactly one
# more Register per resource than before (a second one is a double registration)
reg_before() { echo "$(registrations tenant-a) $(registrations tenant-b)"; }
reg_once_more() { # reg_once_more "A B" (reg_before's)
  local a b
  read -r a b <<<"$1"
  check "one more Register of railgate.io/tenant-a ($a before, $(registrations tenant-a) now)" \
    equals "$(registrations tenant-a)" $((a + 1))
  check "one more Register of railgate.io/tenant-b ($b before, $(registrations tenant-b) now)" \
    equals "$(registrations tenant-b)" $((b + 1))
}
# rereg_begin NAME: watch allocatable into $T/watch-NAME; note the Registers so far
rereg_begin() {
  WATCH=$T/watch-$1
  watch_start "$WATCH"
  n_before=$(connected)
  regs=$(reg_before)
}
# rereg_end SAMPLES-CHECK: kubelet took both Registers again (one more each),
# allocatable is back at 2/2 and its samples over one more node status period
# (nodeStatusUpdateFrequency, 10 s: a drop shows there) pass SAMPLES-CHECK
# (never_below, or one_dip after a kubelet restart)
rereg_end() {
  check "kubelet accepted both registrations again" wait_for 60 "re-registration" registered $((n_before + 2))
  wait_for 60 "allocatable 2/2" offers 2 2 || true
  sleep 12
  stop watch
  check "allocatable back to railgate.io/tenant-a: 2, tenant-b: 2" offers 2 2
  if [ "$1" = one_dip ]; then
    check "allocatable never missing, at most one dip to 0 before the Register ($(uniq "$WATCH" | tr '\n' ' '))" \
      one_dip "$WATCH"
  else
    check "allocatable never 0 or missing ($(sort -u "$WATCH" | tr '\n' ' '))" never_below "$WATCH"
  fi
  reg_once_more "$regs"
}
check "the first plugin start registered each resource once" equals "$(reg_before)" "1 1"

section "kubelet restarts: the plugin re-registers once, allocatable back (0 only until the Register lands), a1 untouched"
rereg_begin kubelet
plugin_before=$(plugin_container)
stop kubelet
start_kubelet
wait_for 60 "node Ready" kctl wait --for=condition=Ready "node/$NODE" --timeout=1s || true
rereg_end one_dip
check "the agent's device plugin container kept running (same id, no restart)" \
  equals "$(plugin_container)" "$plugin_before"
check "team-a/a1 untouched: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-a a1)" "$a1_before"
check "team-a/a1 still holds rail0 and rail1" \
  equals "$(in_pod team-a a1 ip -o link show | grep -cE ' rail[01][:@]')" 2

section "the agent pod is deleted: its next one re-registers, allocatable never drops to 0, a1 untouched"
rereg_begin plugin
old_agent=$(agent_pod)
keep_agent_log
kctl -n railgate-system delete pod "$old_agent" --wait=true --timeout=120s >/dev/null
new_agent() { local p; p=$(agent_pod) && [ -n "$p" ] && [ "$p" != "$old_agent" ] && agent_ready; }
check "the DaemonSet replaces $old_agent" wait_for 120 "a new agent pod" new_agent
rereg_end never_below
check "team-a/a1 untouched: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-a a1)" "$a1_before"

section "SIGHUP: the device plugin rebinds and re-registers with the same kubelet"
rereg_begin hup
plugin_before=$(plugin_container)
pid=$(plugin_pid) || true
check "containerd knows the device plugin's pid (${pid:-none})" test -n "$pid"
[ -z "$pid" ] || kill -HUP "$pid"
rereg_end never_below
check "the plugin is still running: same container, no restart" equals "$(plugin_container)" "$plugin_before"
check "team-a/a1 untouched: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-a a1)" "$a1_before"

section "a rail NIC going down shows in allocatable"
in_ns ip link set rail3 down
check "rail3 down: railgate.io/tenant-b allocatable 1" wait_for 60 "tenant-b: 1" offers 2 1
check "railgate.io/tenant-b capacity still 2" equals "$(capacity tenant-b)" 2
check "metrics: tenant-b has 1 unhealthy unit" \
  metric_is 'railgate_units{tenant="tenant-b",health="unhealthy"}' 1
in_ns ip link set rail3 up
check "rail3 up again: railgate.io/tenant-b allocatable 2" wait_for 60 "tenant-b: 2" offers 2 2

section "a rail NIC in a pod losing its link shows in the pod's allocatedResourcesStatus"
# kubelet (ResourceHealthStatus, on by default since 1.36) puts each allocated
# device's health from ListAndWatch into the container's status; it lists them
# from a map, in no order: sorted here. (kubectl describe prints none of it.)
ars() { # ars NAMESPACE NAME: "resourceID=health " per allocated device, sorted
  kctl get pod -n "$1" "$2" \
    -o jsonpath='{range .status.containerStatuses[*].allocatedResourcesStatus[*]}{range .resources[*]}{.resourceID}={.health}{"\n"}{end}{end}' |
    sort | tr '\n' ' '
}
ars_is() { [ "$(ars "$1" "$2")" = "$3" ]; } # ars_is NAMESPACE NAME WANT
ars_save() { # ars_save NAME: the pod's status as kubectl shows it, for the README
  {
    echo "# kubectl get pod -n team-a a1 -o jsonpath=... (sorted): $(ars team-a a1)"
    kctl get pod -n team-a a1 -o yaml | awk '/^status:/ { s = 1 } s'
  } >"$T/log/ars-dp-$1.yaml" 2>&1
}
agent_logged() { # agent_logged TEXT UNIT: the device plugin logged TEXT for UNIT
  kctl logs "${AGENT[@]}" --tail=-1 -c device-plugin 2>/dev/null | grep -F "$1" | grep -qF "\"unit\":\"$2\""
}
check "team-a/a1 shows its rails Healthy" wait_for 60 "a1's allocatedResourcesStatus" \
  ars_is team-a a1 "rail0=Healthy rail1=Healthy "
check "under its resource name, railgate.io/tenant-a" equals \
  "$(kctl get pod -n team-a a1 -o jsonpath='{.status.containerStatuses[0].allocatedResourcesStatus[0].name}')" \
  railgate.io/tenant-a
ars_save healthy
ip -n "$FABRIC" link set fab0 down
check "fab0 down: rail0 in a1 has no carrier" contains "$(in_pod team-a a1 ip -o link show dev rail0)" NO-CARRIER
check "a1: rail0 Unhealthy, rail1 Healthy" wait_for 30 "rail0 Unhealthy in a1's status" \
  ars_is team-a a1 "rail0=Unhealthy rail1=Healthy "
say "a1's allocatedResourcesStatus: $(ars team-a a1)"
ars_save unhealthy
check "the agent logged rail0 Unhealthy: NIC in its pod: no carrier" \
  agent_logged "Unhealthy: NIC in its pod: no carrier" rail0
check "railgate.io/tenant-a allocatable 1 (an in-use unit unhealthy), tenant-b 2" \
  wait_for 60 "tenant-a: 1" offers 1 2
check "railgate.io/tenant-a capacity still 2" equals "$(capacity tenant-a)" 2
check "metrics: tenant-a has 1 unhealthy unit" wait_for 30 "the metric" \
  metric_is 'railgate_units{tenant="tenant-a",health="unhealthy"}' 1
check "team-a/a1 untouched: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-a a1)" "$a1_before"
ip -n "$FABRIC" link set fab0 up
check "fab0 up: a1's rails Healthy again" wait_for 30 "rail0 Healthy in a1's status" \
  ars_is team-a a1 "rail0=Healthy rail1=Healthy "
check "railgate.io/tenant-a allocatable 2 again" wait_for 60 "tenant-a: 2" offers 2 2
check "metrics: tenant-a has 0 unhealthy units" wait_for 30 "the metric" \
  metric_is 'railgate_units{tenant="tenant-a",health="unhealthy"}' 0
check "team-a/a1 untouched: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-a a1)" "$a1_before"

section "a rolling update to a second image tag: a1 keeps its rails, a new pod gets its own"
rereg_begin update
old_agent=$(agent_pod)
keep_agent_log
update_start=$SECONDS
kctl -n railgate-system set image daemonset/railgate install=railgate:0.1.0-next \
  device-plugin=railgate:0.1.0-next >/dev/null
check "the DaemonSet replaces $old_agent" wait_for 180 "the rolled agent" new_agent
check "the new agent runs railgate:0.1.0-next" equals \
  "$(kctl get pod "${AGENT[@]}" -o jsonpath='{.items[0].spec.containers[0].image} {.items[0].spec.initContainers[0].image}')" \
  "railgate:0.1.0-next railgate:0.1.0-next"
say "rolled out in $((SECONDS - update_start)) s"
rereg_end never_below
check "team-a/a1 untouched: same uid, container, 0 restarts, ready" equals "$(pod_fingerprint team-a a1)" "$a1_before"
check "team-a/a1 still holds rail0 and rail1" \
  equals "$(in_pod team-a a1 ip -o link show | grep -cE ' rail[01][:@]')" 2
pod_yaml team-b b1 "$NODE" railgate.io/tenant-b 2 | kctl apply -f - >/dev/null
check "team-b/b1 Ready" kctl wait --for=condition=Ready -n team-b pod/b1 --timeout=180s
check_pod team-b b1 tenant-b "$NODE" 200 2 3

section "the pods are deleted: every NIC comes home"
to_unhealthy() { # to_unhealthy: both tenants' transitions to unhealthy so far
  echo "$(metric 'railgate_unit_health_transitions_total{tenant="tenant-a",to="unhealthy"}')/$(metric 'railgate_unit_health_transitions_total{tenant="tenant-b",to="unhealthy"}')"
}
flaps_before=$(to_unhealthy)
kctl delete pod -n team-a a1 --wait=true --timeout=120s >/dev/null
kctl delete pod -n team-b b1 --wait=true --timeout=120s >/dev/null
check_home "$NODE"
# a NIC a DEL moves home arrives down until its settings are back: the CNI's
# doing, which health does not show while the attachment's lock is held
check "no unit turned unhealthy while its pod was deleted (transitions a/b: $flaps_before)" \
  equals "$(to_unhealthy)" "$flaps_before"
check "metrics: every unit healthy after the deletes" wait_for 30 "the metric" \
  metric_is 'railgate_units{tenant="tenant-a",health="unhealthy"}' 0

section "uninstall as deploy/README.md says: the node's files as they were before the install"
uninstall_start=$SECONDS
keep_agent_log
kctl delete -f "$ROOT/deploy/daemonset.yaml" --wait=true --timeout=120s >/dev/null
no_agent() { [ -z "$(agent_pod)" ]; }
check "the agent is gone" wait_for 120 "the agent's pod to go" no_agent
kctl apply -f "$ROOT/deploy/uninstall/daemonset.yaml" >/dev/null
uninstalled() { kctl -n railgate-system rollout status daemonset/railgate-uninstall --timeout=1s; }
check "the uninstall DaemonSet is Ready on $NODE" wait_for 180 "daemonset/railgate-uninstall" uninstalled
out=$(kctl -n railgate-system logs daemonset/railgate-uninstall -c uninstall 2>&1 || true)
check "it took railgate out of the conflist: $(grep -m1 'conflist' <<<"$out")" \
  contains "$out" "railgate removed from 1 conflist(s)"
check "it removed the state: $(grep -m1 'railgate/var/lib\|/var/lib/railgate' <<<"$out")" \
  contains "$out" "/host/var/lib/railgate: railgate's state removed"
node_files >"$T/node-files.uninstalled"
check "the node's files are as before the install ($(diff "$T/node-files.before" "$T/node-files.uninstalled" | grep '^[<>]' | head -n 4 | tr '\n' ' '))" \
  cmp -s "$T/node-files.before" "$T/node-files.uninstalled"
kctl delete -f "$ROOT/deploy/uninstall/daemonset.yaml" --wait=true --timeout=120s >/dev/null
kctl delete -f "$ROOT/deploy/admission.yaml" -f "$ROOT/deploy/configmap.yaml" \
  -f "$ROOT/deploy/rbac.yaml" -f "$ROOT/deploy/namespace.yaml" --wait=true --timeout=180s >/dev/null
say "uninstalled in $((SECONDS - uninstall_start)) s"

section "re-installed with helm install (taking over the tenant namespaces), then the chart's uninstall"
# metrics on the chart's open address (its default is the node's loopback,
# which renders no Service): the node entry leaves "metrics" to the chart
python3 - "$NODE" "$T/nodes/$NODE" >"$T/values.json" <<'EOF'
import json, sys
node = json.load(open(sys.argv[2]))
node["name"] = sys.argv[1]
node.pop("metrics", None)
print(json.dumps({"image": {"tag": "0.1.0-next"}, "nodes": [node],
                  "metrics": {"enabled": True, "host": "0.0.0.0"}}, indent=1))
EOF
helm_start=$SECONDS
check "helm install railgate" helm install railgate "$ROOT/deploy/helm/railgate" -n railgate-system \
  --create-namespace --take-ownership -f "$T/values.json" --wait --timeout 5m
check "the chart's agent is Ready on $NODE" wait_for 180 "daemonset/railgate" agent_ready
check "both tenants offered again" wait_for 90 "allocatable 2/2" offers 2 2
metrics_endpoint() { # the chart's headless Service lists the agent's metrics port
  [ "$(kctl -n railgate-system get endpoints railgate-metrics -o jsonpath='{.subsets[0].ports[0].port}')" = 9402 ]
}
check "the chart's Service railgate-metrics has the agent as its endpoint" \
  wait_for 60 "endpoints of railgate-metrics" metrics_endpoint
check "metrics: the chart's agent serves them (railgate_build_info)" \
  contains "$(in_ns curl -sf --max-time 5 http://127.0.0.1:9402/metrics)" 'railgate_build_info{version="'
say "helm install to both tenants offered: $((SECONDS - helm_start)) s"
pod_yaml team-a a2 "$NODE" railgate.io/tenant-a 2 | kctl apply -f - >/dev/null
check "team-a/a2 Ready" kctl wait --for=condition=Ready -n team-a pod/a2 --timeout=180s
check_pod team-a a2 tenant-a "$NODE" 100 0 1
kctl delete pod -n team-a a2 --wait=true --timeout=120s >/dev/null
check_home "$NODE"
check "helm upgrade --set uninstall.enabled=true" helm upgrade railgate "$ROOT/deploy/helm/railgate" \
  -n railgate-system --reuse-values --set uninstall.enabled=true --wait --timeout 5m
check "the uninstall DaemonSet is Ready on $NODE" wait_for 180 "daemonset/railgate-uninstall" uninstalled
check "helm uninstall railgate" helm uninstall railgate -n railgate-system --wait --timeout 5m
node_files >"$T/node-files.helm-uninstalled"
check "the node's files are as before the install ($(diff "$T/node-files.before" "$T/node-files.helm-uninstalled" | grep '^[<>]' | head -n 4 | tr '\n' ' '))" \
  cmp -s "$T/node-files.before" "$T/node-files.helm-uninstalled"
check "the tenant namespaces stay (tenantNamespaces.keep)" kctl get namespace team-a team-b

if $KEEP; then # the device-plugin scenario ends uninstalled: install it again for the user
  helm install railgate "$ROOT/deploy/helm/railgate" -n railgate-system --create-namespace \
    --take-ownership -f "$T/values.json" --wait --timeout 5m >/dev/null || say "helm install failed"
  wait_for 180 "daemonset/railgate" agent_ready || say "the agent is not Ready"
fi
finish
