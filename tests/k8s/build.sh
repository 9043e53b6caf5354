#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds pinned upstream Go programs for the local cluster into a cache
# outside the repo, once per pinned set, and prints their bin directory on
# stdout (progress and the build log go to stderr):
#
#   build.sh [kubernetes]   kube-apiserver, kube-controller-manager,
#                           kube-scheduler, kubelet, kubectl, kubeadm,
#                           kube-proxy and etcd from tests/k8s/go.mod
#                           (tests/k8s/e2e.sh runs them; kind/node-image.sh
#                           puts them in kind's node image)
#       $RAILGATE_K8S_CACHE/<k8s version>-etcd-<etcd version>-<hash>/bin
#   build.sh containerd     containerd, containerd-shim-runc-v2 and ctr from
#                           tests/k8s/containerd/go.mod (tests/k8s/e2e.sh with
#                           RAILGATE_K8S_CONTAINERD=2: containerd 2.x has CDI,
#                           which DRA mode needs and Debian's 1.6 lacks)
#       $RAILGATE_K8S_CACHE/containerd-<version>-<hash>/bin
#
# The hash covers the go.mod, go.sum and Go sources of the set, so a change of
# any pin builds anew and an unchanged set is reused; each key is built once
# under its own lock (scripts/cache.sh), a second build of it waits. The Go
# module and build caches live in the same directory, so a fresh key is a
# cold build and its time (build-seconds) means the same on every machine.
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=tests/k8s/build.sh
WHAT=${1:-kubernetes}
GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go) || {
  echo "$PROG: error: no Go toolchain (expected /usr/local/go/bin/go or go on PATH)" >&2
  exit 1
}
# shellcheck source=scripts/cache.sh
. "$K8S_DIR/../../scripts/cache.sh"

pin() { # pin DIR MODULE: the version DIR/go.mod requires
  sed -n "s#^\(require \|\t\)$2 \(v[^ ]*\)\( // indirect\)\{0,1\}\$#\2#p" "$1/go.mod"
}

# go_build DIR JOBS-VARIABLE OUT TAGS LDFLAGS PACKAGE...: a static, trimmed
# build with the cache's own module and build caches, at low priority
go_build() {
  local dir=$1 jobs=$2 out=$3 tags=$4 ldflags=$5
  shift 5
  (cd "$dir" &&
    env GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
      GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache" \
      nice -n 10 "$GO" build -p "$jobs" -trimpath -tags "$tags" \
      -ldflags "$ldflags" -o "$out/" "$@") >>"$CACHE/build.log" 2>&1
}

case $WHAT in
kubernetes)
  SRC=$K8S_DIR
  K8S_VERSION=$(pin "$SRC" k8s.io/kubernetes)
  ETCD_VERSION=$(pin "$SRC" go.etcd.io/etcd/server/v3)
  [[ -n $K8S_VERSION && -n $ETCD_VERSION ]] || {
    echo "$PROG: error: go.mod pins no k8s.io/kubernetes or etcd server version" >&2
    exit 1
  }
  HASH=$(cd "$SRC" && cat go.mod go.sum cmd/*/main.go | sha256sum | cut -c1-12)
  KEY=$K8S_VERSION-etcd-$ETCD_VERSION-$HASH
  TITLE="Kubernetes $K8S_VERSION and etcd $ETCD_VERSION"
  TOOLS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kubeadm kube-proxy)
  ;;
containerd)
  SRC=$K8S_DIR/containerd
  CONTAINERD_VERSION=$(pin "$SRC" github.com/containerd/containerd/v2)
  [[ -n $CONTAINERD_VERSION ]] || {
    echo "$PROG: error: $SRC/go.mod pins no github.com/containerd/containerd/v2 version" >&2
    exit 1
  }
  HASH=$(cd "$SRC" && cat go.mod go.sum tools.go | sha256sum | cut -c1-12)
  KEY=containerd-$CONTAINERD_VERSION-$HASH
  TITLE="containerd $CONTAINERD_VERSION"
  TOOLS=(containerd containerd-shim-runc-v2 ctr)
  ;;
*)
  echo "$PROG: error: unknown set '$WHAT' (kubernetes or containerd)" >&2
  exit 2
  ;;
esac
CACHE=${RAILGATE_K8S_CACHE:-/var/cache/railgate-k8s}/$KEY
BIN=$CACHE/bin

if ! cache_open "$CACHE"; then
  echo "$PROG: reusing $BIN ($TITLE)" >&2
  echo "$BIN"
  exit 0
fi

echo "$PROG: building $TITLE into $BIN" \
  "(log: $CACHE/build.log; cold, this takes a long while on 2 cores)" >&2
rm -rf "$CACHE/bin.new"
: >"$CACHE/build.log"
start=$(date +%s)
ok=true
case $WHAT in
kubernetes)
  V=${K8S_VERSION#v}
  LDFLAGS="-s -w"
  LDFLAGS+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
  LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=${V%%.*}"
  LDFLAGS+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$V")"
  LDFLAGS+=" -X k8s.io/component-base/version.gitTreeState=clean"
  LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  go_build "$SRC" "${RAILGATE_K8S_BUILD_JOBS:-2}" "$CACHE/bin.new" "" "$LDFLAGS" ./cmd/... || ok=false
  ;;
containerd)
  # what containerd's Makefile sets: its version and package, no CLI docs;
  # the shim without gRPC (it speaks ttrpc). Without cgo the btrfs
  # snapshotter is left out (the node uses overlayfs).
  PKG=github.com/containerd/containerd/v2
  LDFLAGS="-s -w -X $PKG/version.Version=$CONTAINERD_VERSION -X $PKG/version.Package=$PKG"
  jobs=${RAILGATE_K8S_BUILD_JOBS:-2}
  go_build "$SRC" "$jobs" "$CACHE/bin.new" urfave_cli_no_docs "$LDFLAGS" \
    "$PKG/cmd/containerd" "$PKG/cmd/ctr" &&
    go_build "$SRC" "$jobs" "$CACHE/bin.new" "urfave_cli_no_docs no_grpc" "$LDFLAGS" \
      "$PKG/cmd/containerd-shim-runc-v2" || ok=false
  ;;
esac
if ! $ok; then
  tail -n 40 "$CACHE/build.log" >&2
  echo "$PROG: error: the build failed; the whole log is $CACHE/build.log" >&2
  exit 1
fi
for t in "${TOOLS[@]}"; do
  [[ -x $CACHE/bin.new/$t ]] || {
    echo "$PROG: error: the build made no $t" >&2
    exit 1
  }
done
rm -rf "$BIN"
mv "$CACHE/bin.new" "$BIN"
cache_close "$CACHE" "$start"
echo "$PROG: built in $(cat "$CACHE/build-seconds")s" >&2
echo "$BIN"
