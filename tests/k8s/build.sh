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
# under its own lock, a second build of it waits (scripts/lib/go.sh and
# cache.sh: a fresh key is a cold build, its time kept in build-seconds).
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=tests/k8s/build.sh
SAY_FD=2
LIB=$K8S_DIR/../../scripts/lib
# shellcheck source=scripts/lib/log.sh
. "$LIB/log.sh"
# shellcheck source=scripts/lib/cache.sh
. "$LIB/cache.sh"
# shellcheck source=scripts/lib/go.sh
. "$LIB/go.sh"
WHAT=${1:-kubernetes}
JOBS=${RAILGATE_K8S_BUILD_JOBS:-2}

# go_build DIR OUT TAGS LDFLAGS PACKAGE...: a static, trimmed build
go_build() {
  local dir=$1 out=$2 tags=$3 ldflags=$4
  shift 4
  go_cmd "$dir" "-mod=readonly -buildvcs=false" build -p "$JOBS" -trimpath -tags "$tags" \
    -ldflags "$ldflags" -o "$out/" "$@"
}

case $WHAT in
kubernetes)
  SRC=$K8S_DIR
  K8S_VERSION=$(go_pin "$SRC/go.mod" k8s.io/kubernetes)
  ETCD_VERSION=$(go_pin "$SRC/go.mod" go.etcd.io/etcd/server/v3)
  [[ -n $K8S_VERSION && -n $ETCD_VERSION ]] || die "go.mod pins no k8s.io/kubernetes or etcd server version"
  HASH=$(cd "$SRC" && cat go.mod go.sum cmd/*/main.go | sha256sum | cut -c1-12)
  KEY=$K8S_VERSION-etcd-$ETCD_VERSION-$HASH
  TITLE="Kubernetes $K8S_VERSION and etcd $ETCD_VERSION"
  TOOLS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kubeadm kube-proxy)
  build() { # build OUTDIR
    local v=${K8S_VERSION#v} ldflags="-s -w"
    ldflags+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
    ldflags+=" -X k8s.io/component-base/version.gitMajor=${v%%.*}"
    ldflags+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$v")"
    ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
    ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
    go_build "$SRC" "$1" "" "$ldflags" ./cmd/...
  }
  ;;
containerd)
  SRC=$K8S_DIR/containerd
  CONTAINERD_VERSION=$(go_pin "$SRC/go.mod" github.com/containerd/containerd/v2)
  [[ -n $CONTAINERD_VERSION ]] || die "$SRC/go.mod pins no github.com/containerd/containerd/v2 version"
  HASH=$(cd "$SRC" && cat go.mod go.sum tools.go | sha256sum | cut -c1-12)
  KEY=containerd-$CONTAINERD_VERSION-$HASH
  TITLE="containerd $CONTAINERD_VERSION"
  TOOLS=(containerd containerd-shim-runc-v2 ctr)
  build() { # build OUTDIR
    # what containerd's Makefile sets: its version and package, no CLI docs;
    # the shim without gRPC (it speaks ttrpc). Without cgo the btrfs
    # snapshotter is left out (the node uses overlayfs).
    local pkg=github.com/containerd/containerd/v2 ldflags
    ldflags="-s -w -X $pkg/version.Version=$CONTAINERD_VERSION -X $pkg/version.Package=$pkg"
    go_build "$SRC" "$1" urfave_cli_no_docs "$ldflags" "$pkg/cmd/containerd" "$pkg/cmd/ctr" &&
      go_build "$SRC" "$1" "urfave_cli_no_docs no_grpc" "$ldflags" "$pkg/cmd/containerd-shim-runc-v2"
  }
  ;;
*)
  echo "$PROG: error: unknown set '$WHAT' (kubernetes or containerd)" >&2
  exit 2
  ;;
esac
go_cached "${RAILGATE_K8S_CACHE:-/var/cache/railgate-k8s}/$KEY" "$TITLE" build "${TOOLS[@]}"
