#!/usr/bin/env bash
# Builds the pinned upstream Kubernetes binaries (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kubectl, kubeadm,
# kube-proxy) and etcd from tests/k8s/go.mod into a cache outside the repo,
# once per pinned set (tests/k8s/e2e.sh runs them; kind/node-image.sh puts
# them in kind's node image):
#
#   $RAILGATE_K8S_CACHE/<k8s version>-etcd-<etcd version>-<hash>/bin
#
# The hash covers go.mod, go.sum and the mains, so a change of any pin builds
# anew and an unchanged set is reused. The Go module and build caches live in
# the same directory, so a fresh key is a cold build and its time
# (build-seconds) means the same on every machine. Prints the bin directory
# on stdout; progress and the build log go to stderr.
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=tests/k8s/build.sh
GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go) || {
  echo "$PROG: error: no Go toolchain (expected /usr/local/go/bin/go or go on PATH)" >&2
  exit 1
}

pin() { sed -n "s#^\t$1 \(v[^ ]*\)\$#\1#p" "$K8S_DIR/go.mod"; }
K8S_VERSION=$(pin k8s.io/kubernetes)
ETCD_VERSION=$(pin go.etcd.io/etcd/server/v3)
[[ -n $K8S_VERSION && -n $ETCD_VERSION ]] || {
  echo "$PROG: error: go.mod pins no k8s.io/kubernetes or etcd server version" >&2
  exit 1
}
HASH=$(cd "$K8S_DIR" && cat go.mod go.sum cmd/*/main.go | sha256sum | cut -c1-12)
CACHE=${RAILGATE_K8S_CACHE:-/var/cache/railgate-k8s}/$K8S_VERSION-etcd-$ETCD_VERSION-$HASH
BIN=$CACHE/bin
TOOLS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl kubeadm kube-proxy)

# shellcheck source=scripts/cache.sh
. "$K8S_DIR/../../scripts/cache.sh"
if ! cache_open "$CACHE"; then
  echo "$PROG: reusing $BIN (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION)" >&2
  echo "$BIN"
  exit 0
fi

echo "$PROG: building Kubernetes $K8S_VERSION and etcd $ETCD_VERSION into $BIN" \
  "(log: $CACHE/build.log; cold, this takes a long while on 2 cores)" >&2
V=${K8S_VERSION#v}
LDFLAGS="-s -w"
LDFLAGS+=" -X k8s.io/component-base/version.gitVersion=$K8S_VERSION"
LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=${V%%.*}"
LDFLAGS+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$V")"
LDFLAGS+=" -X k8s.io/component-base/version.gitTreeState=clean"
LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
rm -rf "$CACHE/bin.new"
start=$(date +%s)
if ! (cd "$K8S_DIR" &&
  env GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
    GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache" \
    nice -n 10 "$GO" build -p "${RAILGATE_K8S_BUILD_JOBS:-2}" -trimpath \
    -ldflags "$LDFLAGS" -o "$CACHE/bin.new/" ./cmd/...) >"$CACHE/build.log" 2>&1; then
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
