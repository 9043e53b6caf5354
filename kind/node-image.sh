#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds kind's node image locally, with no registry, and caches it:
#
#   bash kind/node-image.sh          (as root) prints the path of the node's rootfs tar
#
# then `docker import` it (kind/docker.sh node_image_load does) and give kind
# the image: `kind create cluster --image railgate.local/kind-node:<tag>`
# (the tag is in the tar's directory, file image).
#
# What is in it, the layout kind expects of a node (kind's images/base):
#   - a systemd rootfs: debootstrap of Debian 12 from the archive apt already
#     uses, with Debian's containerd, runc, CNI plugins (in /opt/cni/bin),
#     iptables and iproute2; kind/node/ has its units (containerd, kubelet
#     with kubeadm's drop-in), containerd's config and the entrypoint;
#   - crictl from the Go module proxy (kind/go-tool.sh crictl);
#   - kubeadm, kubelet and kubectl as tests/k8s/build.sh builds them (one
#     cache with tests/k8s), /kind/version;
#   - the images kubeadm asks for (kube-apiserver, kube-controller-manager,
#     kube-scheduler, kube-proxy with Debian's iptables, etcd, pause),
#     single-layer OCI archives of the same builds imported into the node's
#     containerd, pinned. CoreDNS is not built: kind/kind-config.yaml skips
#     kubeadm's addon/coredns phase.
#
# Two caches under RAILGATE_KIND_CACHE (default /var/cache/railgate-kind):
# node-base-<suite>-<key> (the debootstrap, keyed by suite and packages; the
# slow part) and node-<k8s version>-<key> (the tar, keyed by the base, the
# Kubernetes build, crictl and kind/node/ with this script). Progress goes to
# stderr.
set -euo pipefail

KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$KIND_DIR")
PROG=kind/node-image.sh
SUITE=bookworm
NODE_PACKAGES=(
  systemd systemd-sysv
  containerd runc containernetworking-plugins
  iptables iproute2 iputils-ping conntrack ethtool kmod procps ca-certificates
)
CACHE_ROOT=${RAILGATE_KIND_CACHE:-/var/cache/railgate-kind}
SAY_FD=2
# shellcheck source=scripts/lib/log.sh
. "$ROOT/scripts/lib/log.sh"
# shellcheck source=scripts/lib/cache.sh
. "$ROOT/scripts/lib/cache.sh"
# shellcheck source=scripts/lib/rootfs.sh
. "$ROOT/scripts/lib/rootfs.sh"
# shellcheck source=scripts/lib/oci.sh
. "$ROOT/scripts/lib/oci.sh"

[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot, containerd)"
need_cmds debootstrap containerd ctr gcc

# ---- the base: a systemd rootfs with containerd, runc, the CNI plugins ----
base_key=$(printf '%s\n' "$SUITE" "${NODE_PACKAGES[@]}" | sha256sum | cut -c1-12)
base_cache=$CACHE_ROOT/node-base-$SUITE-$base_key
base=$base_cache/rootfs
slim() {
  rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb \
    "$1"/var/log/*.log "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/usr/share/info/*
}
rootfs_base "$base_cache" "$SUITE" slim "${NODE_PACKAGES[@]}"

# ---- the inputs of the node layer ----
k8s_bin=$(bash "$ROOT/tests/k8s/build.sh") || die "building Kubernetes failed (tests/k8s/build.sh)"
crictl=$(bash "$KIND_DIR/go-tool.sh" crictl) || die "building crictl failed (kind/go-tool.sh crictl)"
k8s_version=$("$k8s_bin/kubeadm" version -o short)
mapfile -t images < <("$k8s_bin/kubeadm" config images list --kubernetes-version "$k8s_version")
image_for() { # image_for NAME: kubeadm's reference for component NAME
  local i
  for i in "${images[@]}"; do
    case ${i##*/} in "$1":*) echo "$i" && return 0 ;; esac
  done
  die "kubeadm config images list names no $1 image: ${images[*]}"
}
pause_image=$(image_for pause)

key=$(
  {
    echo "$base_key" "$k8s_bin" "$crictl" "${images[*]}"
    cat "$0" "$KIND_DIR"/node/* "$ROOT/tests/k8s/pause.c" "$ROOT/tests/k8s/image.sh" "$ROOT/scripts/lib/oci.sh"
  } | sha256sum | cut -c1-12
)
cache=$CACHE_ROOT/node-$k8s_version-$key
tar_out=$cache/node.tar
if ! cache_open "$cache"; then
  say "reusing $tar_out ($(cat "$cache/image"))"
  echo "$tar_out"
  exit 0
fi

say "building the node image (Kubernetes $k8s_version) into $tar_out"
start=$(date +%s)
work=$cache/work
containerd_pid=
cleanup() {
  if [ -n "$containerd_pid" ]; then
    kill "$containerd_pid" 2>/dev/null || true
    wait "$containerd_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$work" "$tar_out.new"
mkdir -p "$work"
node=$work/rootfs
cp -a "$base" "$node"

# ---- systemd: only what a node needs, nothing that fails in a container ----
rm -f "$node"/etc/systemd/system/*.wants/* "$node"/lib/systemd/system/multi-user.target.wants/* \
  "$node"/lib/systemd/system/local-fs.target.wants/* "$node"/lib/systemd/system/sockets.target.wants/*udev* \
  "$node"/lib/systemd/system/sockets.target.wants/*initctl* "$node"/lib/systemd/system/basic.target.wants/* \
  "$node"/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service
# writing a negative oom_score_adj fails on some hosts (EIO): a unit asking for
# one never starts
grep -rlZ '^OOMScoreAdjust=' "$node"/lib/systemd/system "$node"/usr/lib/systemd/system 2>/dev/null |
  xargs -0 -r sed -i '/^OOMScoreAdjust=/d'
echo "ReadKMsg=no" >>"$node/etc/systemd/journald.conf"
ln -sf /lib/systemd/system/multi-user.target "$node/etc/systemd/system/default.target"
ln -sf /dev/null "$node/etc/systemd/system/systemd-binfmt.service"
install -m 0644 "$KIND_DIR/node/containerd.service" "$KIND_DIR/node/kubelet.service" \
  "$KIND_DIR/node/kubelet.slice" "$node/etc/systemd/system/"
install -D -m 0644 "$KIND_DIR/node/10-kubeadm.conf" "$node/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"
mkdir -p "$node/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/containerd.service "$node/etc/systemd/system/multi-user.target.wants/"
ln -sf /etc/systemd/system/kubelet.service "$node/etc/systemd/system/multi-user.target.wants/"
install -m 0644 "$KIND_DIR/node/kubelet.default" "$node/etc/default/kubelet"
install -D -m 0755 "$KIND_DIR/node/entrypoint" "$node/usr/local/bin/entrypoint"

# ---- containerd, crictl, CNI plugins, Kubernetes ----
mkdir -p "$node/etc/containerd"
sed "s#@PAUSE@#$pause_image#" "$KIND_DIR/node/containerd.toml" >"$node/etc/containerd/config.toml"
echo "runtime-endpoint: unix:///run/containerd/containerd.sock" >"$node/etc/crictl.yaml"
install -m 0755 "$crictl" "$node/usr/local/bin/crictl"
mkdir -p "$node/opt/cni/bin" "$node/etc/cni/net.d"
cp -l "$node"/usr/lib/cni/* "$node/opt/cni/bin/"
for t in kubeadm kubelet kubectl; do
  install -m 0755 "$k8s_bin/$t" "$node/usr/bin/$t"
done
mkdir -p "$node/kind" "$node/etc/kubernetes/manifests"
echo "$k8s_version" >"$node/kind/version"

# ---- the control-plane images, preloaded and pinned ----
# kube-proxy's image also holds Debian's iptables from the node's base, with
# the libraries and extensions it loads: nft by default, as on the node
iptables_tree() { # iptables_tree TREE
  local tree=$1 lib real v s multi=/usr/sbin/xtables-nft-multi legacy=/usr/sbin/xtables-legacy-multi
  local xt=/usr/lib/x86_64-linux-gnu/xtables
  mkdir -p "$tree/usr/sbin" "$tree/usr/lib/x86_64-linux-gnu" "$tree/usr/lib64"
  for v in bin sbin lib lib64; do ln -s "usr/$v" "$tree/$v"; done # Debian 12 merges /usr
  mkdir -p "$tree/usr/bin"
  cp "$base$multi" "$base$legacy" "$tree/usr/sbin/"
  cp -a "$base$xt" "$tree$xt"
  while read -r lib; do
    # the file itself where the base keeps it, and the name ldd used for it
    real=$(chroot "$base" readlink -f "$lib")
    [ -e "$tree$real" ] || install -D -m 0755 "$base$real" "$tree$real"
    [ -e "$tree$lib" ] || [ -L "$tree$lib" ] || ln -s "$real" "$tree$lib"
  done < <(chroot "$base" ldd "$multi" "$legacy" "$xt"/*.so |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/lib64\// { print $1 }' | sort -u)
  for v in iptables ip6tables; do
    for s in "" -save -restore; do
      ln -s xtables-nft-multi "$tree/usr/sbin/$v-nft$s"
      ln -s xtables-legacy-multi "$tree/usr/sbin/$v-legacy$s"
      ln -s "$v-nft$s" "$tree/usr/sbin/$v$s"
    done
  done
  chroot "$tree" /usr/sbin/iptables --version >/dev/null || die "iptables does not run in kube-proxy's image"
}
mkdir -p "$work/images"
bash "$ROOT/tests/k8s/image.sh" pause "$work/images/pause.tar" "$pause_image"
for t in kube-apiserver kube-controller-manager kube-scheduler etcd kube-proxy; do
  tree=$work/tree-$t
  mkdir -p "$tree/usr/local/bin" "$tree/etc" "$tree/var/lib" "$tree/run"
  install -d -m 1777 "$tree/tmp"
  install -m 0755 "$k8s_bin/$t" "$tree/usr/local/bin/$t"
  [ "$t" != kube-proxy ] || iptables_tree "$tree"
  oci_archive "$(image_for "$t")" "$work/images/$t.tar" \
    '{"Env":["PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"]}' "$tree"
  rm -rf "$tree"
done
# Debian's containerd on the host (the node's own version) writes into the
# node's /var/lib/containerd; the CRI plugin there finds the images at start
mkdir -p "$work/state" "$work/opt"
cat >"$work/containerd.toml" <<EOF
version = 2
root = "$node/var/lib/containerd"
state = "$work/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$work/containerd.sock"
[ttrpc]
  address = "$work/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$work/opt"
EOF
containerd --config "$work/containerd.toml" >"$work/containerd.log" 2>&1 &
containerd_pid=$!
for _ in $(seq 120); do
  ctr --address "$work/containerd.sock" version >/dev/null 2>&1 && break
  kill -0 "$containerd_pid" 2>/dev/null || break
  sleep 0.25
done
ctr --address "$work/containerd.sock" version >/dev/null 2>&1 ||
  die "the image-import containerd did not come up: $(tail -n 5 "$work/containerd.log")"
for a in "$work"/images/*.tar; do
  ctr --address "$work/containerd.sock" -n k8s.io images import --no-unpack "$a" >/dev/null ||
    die "ctr images import $a failed"
done
loaded=$(ctr --address "$work/containerd.sock" -n k8s.io images ls -q)
for t in pause kube-apiserver kube-controller-manager kube-scheduler etcd kube-proxy; do
  grep -qxF "$(image_for "$t")" <<<"$loaded" || die "$(image_for "$t") is not in the node's containerd"
  # pinned: kubelet's image garbage collection leaves it (ctr 1.6 has no import --label)
  ctr --address "$work/containerd.sock" -n k8s.io images label "$(image_for "$t")" \
    io.cri-containerd.pinned=pinned >/dev/null || die "cannot pin $(image_for "$t")"
done
kill "$containerd_pid"
wait "$containerd_pid" 2>/dev/null || true
containerd_pid=
rm -rf "$node/var/lib/containerd/tmpmounts"

# ---- the tar docker imports ----
tar -C "$node" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
  --exclude='./run/*' --exclude='./tmp/*' -cf "$tar_out.new" .
mv "$tar_out.new" "$tar_out"
echo "railgate.local/kind-node:$k8s_version-$key" >"$cache/image"
cache_close "$cache" "$start"
# an older node image (another key) is 800 MB that nothing uses any more
for old in "$CACHE_ROOT"/node-v*; do
  [ "$old" = "$cache" ] || [ ! -f "$old/done" ] || rm -rf "$old"
done
say "node image built in $(cat "$cache/build-seconds")s: $tar_out ($(du -h "$tar_out" | cut -f1)), $(cat "$cache/image")"
echo "$tar_out"
