#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the pinned helm CLI from deploy/helm/tool/go.mod (helm.sh/helm/v3
# from the Go module proxy) into a cache outside the repo, once per pin:
#
#   $RAILGATE_HELM_CACHE/<helm version>-<hash>/bin/helm
#
# The hash covers go.mod, go.sum and tools.go, so a change of any pin builds
# anew and an unchanged set is reused. The Go module and build caches live in
# the same directory, so a fresh key is a cold build and its time
# (build-seconds) means the same on every machine. Prints the path of the
# helm binary on stdout; progress and the build log go to stderr.
#
#   helm=$(bash scripts/helm.sh) && "$helm" lint deploy/helm/railgate
set -euo pipefail

TOOL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../deploy/helm/tool" && pwd)
PROG=scripts/helm.sh
GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go) || {
  echo "$PROG: error: no Go toolchain (expected /usr/local/go/bin/go or go on PATH)" >&2
  exit 1
}

pin() { sed -n "s#^\(require \|\t\)$1 \(v[^ ]*\)\( // indirect\)\{0,1\}\$#\2#p" "$TOOL_DIR/go.mod"; }
HELM_VERSION=$(pin helm.sh/helm/v3)
CLIENT_GO_VERSION=$(pin k8s.io/client-go)
[[ -n $HELM_VERSION && -n $CLIENT_GO_VERSION ]] || {
  echo "$PROG: error: $TOOL_DIR/go.mod pins no helm.sh/helm/v3 or k8s.io/client-go version" >&2
  exit 1
}
HASH=$(cd "$TOOL_DIR" && cat go.mod go.sum tools.go | sha256sum | cut -c1-12)
CACHE=${RAILGATE_HELM_CACHE:-/var/cache/railgate-helm}/$HELM_VERSION-$HASH
BIN=$CACHE/bin
HELM=$BIN/helm

# shellcheck source=scripts/cache.sh
. "$TOOL_DIR/../../../scripts/cache.sh"
if ! cache_open "$CACHE"; then
  echo "$PROG: reusing $HELM (helm $HELM_VERSION)" >&2
  echo "$HELM"
  exit 0
fi

echo "$PROG: building helm $HELM_VERSION into $HELM (log: $CACHE/build.log)" >&2
# what helm's Makefile sets: its version, and the Kubernetes version that
# `helm template` and `helm lint` assume without a cluster (client-go v0.X.Y
# is Kubernetes 1.X)
K8S_MINOR=$(cut -d. -f2 <<<"$CLIENT_GO_VERSION")
LDFLAGS="-s -w"
LDFLAGS+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
LDFLAGS+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
  LDFLAGS+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$K8S_MINOR"
done
rm -rf "$CACHE/bin.new"
start=$(date +%s)
if ! (cd "$TOOL_DIR" &&
  env GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
    GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache" \
    nice -n 10 "$GO" build -p "${RAILGATE_HELM_BUILD_JOBS:-2}" -trimpath \
    -ldflags "$LDFLAGS" -o "$CACHE/bin.new/helm" helm.sh/helm/v3/cmd/helm) >"$CACHE/build.log" 2>&1; then
  tail -n 40 "$CACHE/build.log" >&2
  echo "$PROG: error: the build failed; the whole log is $CACHE/build.log" >&2
  exit 1
fi
"$CACHE/bin.new/helm" version --short >/dev/null || {
  echo "$PROG: error: the helm just built does not run" >&2
  exit 1
}
rm -rf "$BIN"
mv "$CACHE/bin.new" "$BIN"
cache_close "$CACHE" "$start"
echo "$PROG: built in $(cat "$CACHE/build-seconds")s" >&2
echo "$HELM"
