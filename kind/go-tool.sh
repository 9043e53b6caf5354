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
# checked against the checksum database). The Go module and build caches live
# in the same directory, so a fresh version is a cold build and its time
# (build-seconds) means the same on every machine. Progress and the build log
# go to stderr.
set -euo pipefail

PROG=kind/go-tool.sh
case ${1:-} in
kind) PKG=sigs.k8s.io/kind VERSION=${RAILGATE_KIND_VERSION:-v0.33.0} ;;
crictl) PKG=sigs.k8s.io/cri-tools/cmd/crictl VERSION=${RAILGATE_CRICTL_VERSION:-v1.37.0} ;;
*)
  echo "usage: $PROG kind|crictl" >&2
  exit 2
  ;;
esac
NAME=$1
GO=${GO:-/usr/local/go/bin/go}
[[ -x $GO ]] || GO=$(command -v go) || {
  echo "$PROG: error: no Go toolchain (expected /usr/local/go/bin/go or go on PATH)" >&2
  exit 1
}
CACHE=${RAILGATE_KIND_CACHE:-/var/cache/railgate-kind}/$NAME-$VERSION
BIN=$CACHE/bin
OUT=$BIN/$NAME

# shellcheck source=scripts/cache.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/cache.sh"
if ! cache_open "$CACHE"; then
  echo "$PROG: reusing $OUT ($PKG $VERSION)" >&2
  echo "$OUT"
  exit 0
fi

echo "$PROG: building $PKG $VERSION into $OUT (log: $CACHE/build.log)" >&2
rm -rf "$CACHE/bin.new"
start=$(date +%s)
if ! (cd "$CACHE" &&
  env GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN="$CACHE/bin.new" \
    GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/cache" \
    nice -n 10 "$GO" install -p "${RAILGATE_KIND_BUILD_JOBS:-2}" -trimpath -ldflags "-s -w" \
    "$PKG@$VERSION") >"$CACHE/build.log" 2>&1; then
  tail -n 40 "$CACHE/build.log" >&2
  echo "$PROG: error: the build failed; the whole log is $CACHE/build.log" >&2
  exit 1
fi
"$CACHE/bin.new/$NAME" --version >/dev/null || {
  echo "$PROG: error: the $NAME just built does not run" >&2
  exit 1
}
rm -rf "$BIN"
mv "$CACHE/bin.new" "$BIN"
cache_close "$CACHE" "$start"
echo "$PROG: built in $(cat "$CACHE/build-seconds")s" >&2
echo "$OUT"
