# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# A Debian base rootfs made with debootstrap from the archive apt already uses
# (a mirror's host is never written here; RAILGATE_DEBIAN_MIRROR overrides),
# cached outside the repo: the image's base layer (deploy/image.sh) and kind's
# node base (kind/node-image.sh). Sourced after log.sh and cache.sh, not run.
#
#   rootfs_base CACHE SUITE SLIM PACKAGE...
#       CACHE/rootfs: SUITE's minbase with PACKAGEs, built once under the
#       cache's lock (debootstrap's log in CACHE/debootstrap.log); SLIM ROOT
#       runs before it is kept, to drop what the rootfs does not need

rootfs_base() {
  local cache=$1 suite=$2 slim=$3 mirror include start
  shift 3
  if ! cache_open "$cache"; then
    say "reusing $cache/rootfs"
    return 0
  fi
  mirror=${RAILGATE_DEBIAN_MIRROR:-$(apt-get --print-uris download base-files 2>/dev/null |
    sed -n "s#^'\([^']*\)/pool/.*#\1#p" | head -n 1)}
  [ -n "$mirror" ] || die "no Debian archive found in apt's sources (apt-get update?); set RAILGATE_DEBIAN_MIRROR"
  say "building $cache/rootfs ($suite minbase + $*); cold, several minutes"
  start=$(date +%s)
  rm -rf "$cache/rootfs.new"
  include=$(
    IFS=,
    echo "$*"
  )
  if ! debootstrap --variant=minbase --include="$include" "$suite" "$cache/rootfs.new" "$mirror" \
    >"$cache/debootstrap.log" 2>&1; then
    tail -n 20 "$cache/debootstrap.log" >&2
    die "debootstrap failed; the log is $cache/debootstrap.log"
  fi
  "$slim" "$cache/rootfs.new"
  rm -rf "$cache/rootfs"
  mv "$cache/rootfs.new" "$cache/rootfs"
  cache_close "$cache" "$start"
  say "base rootfs built in $(cat "$cache/build-seconds")s"
}
