#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds a Go command the kind path needs from the Go module proxy into a
# cache outside the repo, once per version, and prints its path on stdout:
#
#   bash kind/go-tool.sh kind      sigs.k8s.io/kind (the kind CLI)
#   bash kind/go-tool.sh crictl    sigs.k8s.io/cri-tools' crictl (kind's node image)
#
#   $RAILGATE_KIND_CACHE/<name>-<version>/bin/<name>   (default /var/cache/railgate-kind)
#
# Built with the module's own go.mod and go.sum (go install PKG@VERSION,
# checked against the checksum database), by scripts/lib/go.sh. Progress and
# the build log go to stderr.
set -euo pipefail

PROG=kind/go-tool.sh
SAY_FD=2
LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib" && pwd)
# shellcheck source=scripts/lib/log.sh
. "$LIB/log.sh"
# shellcheck source=scripts/lib/cache.sh
. "$LIB/cache.sh"
# shellcheck source=scripts/lib/go.sh
. "$LIB/go.sh"

case ${1:-} in
kind) PKG=sigs.k8s.io/kind VERSION=${RAILGATE_KIND_VERSION:-v0.33.0} ;;
crictl) PKG=sigs.k8s.io/cri-tools/cmd/crictl VERSION=${RAILGATE_CRICTL_VERSION:-v1.37.0} ;;
*)
  echo "usage: $PROG kind|crictl" >&2
  exit 2
  ;;
esac
NAME=$1
CACHE=${RAILGATE_KIND_CACHE:-/var/cache/railgate-kind}/$NAME-$VERSION

build() { # build OUTDIR
  (export GOBIN=$1 && go_cmd "$GO_CACHE" -buildvcs=false install -p "${RAILGATE_KIND_BUILD_JOBS:-2}" \
    -trimpath -ldflags "-s -w" "$PKG@$VERSION") && "$1/$NAME" --version
}
BIN=$(go_cached "$CACHE" "$PKG $VERSION" build "$NAME")
echo "$BIN/$NAME"
