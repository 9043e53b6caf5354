#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# railgate's runtime image as an OCI archive, built with no Docker and no
# registry; the same layout as deploy/Dockerfile's runtime stage (one recipe:
# deploy/runtime-packages, deploy/build.sh):
#
#   bash deploy/image.sh OUT.tar [NAME]     (as root; NAME default docker.io/library/railgate:<version>,
#                                            the name a pod spec's railgate:<version> means)
#
# Two layers: the base, Debian 12 minbase with deploy/runtime-packages
# (debootstrap from the Debian archive apt already uses, cached outside the
# repo keyed by the suite and the package list: RAILGATE_IMAGE_CACHE, default
# /var/cache/railgate-image), and railgate's own files from a release build
# of this tree (deploy/build.sh). Before writing, it checks that every binary
# in the image resolves its libraries inside the image (ldd in a chroot of the
# two layers) and that the CNI bundle the installer copies onto a node runs
# there with only its bundled libraries (the host, in a mount namespace with
# the bundle at /opt/railgate/lib). Import with `ctr images import OUT.tar`,
# `docker load -i OUT.tar` or `kind load image-archive OUT.tar`.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=deploy/image.sh
SUITE=bookworm
SAY_FD=2
# shellcheck source=scripts/lib/log.sh
. "$SRC/scripts/lib/log.sh"
# shellcheck source=scripts/lib/cache.sh
. "$SRC/scripts/lib/cache.sh"
# shellcheck source=scripts/lib/rootfs.sh
. "$SRC/scripts/lib/rootfs.sh"
# shellcheck source=scripts/lib/oci.sh
. "$SRC/scripts/lib/oci.sh"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then die "usage: image.sh OUT.tar [NAME]"; fi
[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap, chroot and mount namespaces)"
out=$(realpath -m "$1")
version=$(sed -n 's/^project(railgate VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
name=${2:-docker.io/library/railgate:$version}
need_cmds debootstrap patchelf unshare
mapfile -t packages < <(sed 's/#.*//; /^[[:space:]]*$/d' "$SRC/deploy/runtime-packages")

# ---- the base layer, cached ----
key=$(printf '%s\n' "$SUITE" "${packages[@]}" | sha256sum | cut -c1-12)
cache=${RAILGATE_IMAGE_CACHE:-/var/cache/railgate-image}/$SUITE-$key
base=$cache/rootfs
# what a slim image leaves out: package lists and caches, documentation
slim() {
  rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/cache/debconf/*-old "$1"/var/log/* \
    "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/usr/share/info/*
}
rootfs_base "$cache" "$SUITE" slim "${packages[@]}"

# ---- railgate's layer ----
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
own=$work/railgate
bash "$SRC/deploy/build.sh" "$SRC" "${RAILGATE_IMAGE_BUILD_DIR:-$SRC/build-image}" "$own" >&2

# ---- checks ----
# every ELF file of railgate's layer but the node-side bundle (checked below),
# as ldd sees it in a chroot of both layers
mkdir -p "$work/merged" "$work/upper" "$work/ovl"
elves=()
while IFS= read -r f; do
  file -b "$f" | grep -q '^ELF' && elves+=("${f#"$own"}")
done < <(find "$own" -path "$own/opt/railgate/host" -prune -o -type f -print)
[ "${#elves[@]}" -ge 3 ] || die "railgate's layer holds ${#elves[@]} binaries, expected at least 3"
# shellcheck disable=SC2016 # $0.. are the inner shell's
unshare -m sh -ec 'mount --make-rprivate /
  mount -t overlay overlay -o "lowerdir=$1:$2,upperdir=$3,workdir=$4" "$0"
  shift 4
  for f in "$@"; do
    if ! libs=$(chroot "$0" /usr/bin/ldd "$f" 2>&1) || grep "not found" <<EOT >&2; then
$libs
EOT
      echo "$f: ldd in the image: $libs" >&2
      exit 1
    fi
  done' "$work/merged" "$own" "$base" "$work/upper" "$work/ovl" "${elves[@]}" ||
  die "a binary does not resolve its libraries inside the image"
say "every binary resolves its libraries inside the image: ${elves[*]}"
# the libraries the agent dlopens in the mode that uses them (libcurl in DRA mode,
# libmicrohttpd with metrics on: lib/kube/kubecurl.c, agent/metrics-mhd.c), by the
# SONAMEs its build names: in the image, their own libraries resolved there too
build_cache=${RAILGATE_IMAGE_BUILD_DIR:-$SRC/build-image}/CMakeCache.txt
for var in RAILGATE_CURL_SONAME RAILGATE_MHD_SONAME; do
  so=$(sed -n "s/^$var:STRING=//p" "$build_cache")
  [ -n "$so" ] || die "$build_cache names no $var"
  # awk reads all of it: one that exits at the first match leaves ldconfig a
  # SIGPIPE, which pipefail makes this script's silent death
  path=$(chroot "$base" /sbin/ldconfig -p | awk -v so="$so" '$1 == so && !p { p = $NF } END { print p }')
  [ -n "$path" ] || die "the agent dlopens $so: the image has no such library"
  if ! libs=$(chroot "$base" /usr/bin/ldd "$path" 2>&1) || grep -q "not found" <<<"$libs"; then
    die "$so does not resolve its libraries inside the image: $libs"
  fi
  say "the agent's dlopened $so is in the image: $path"
done
# the CNI bundle on a node: only its own libraries, from where the installer puts them
# shellcheck disable=SC2016
ver=$(unshare -m sh -ec 'mount --make-rprivate /
  mount -t tmpfs tmpfs /opt
  mkdir -p /opt/railgate/lib
  mount --bind "$0/opt/railgate/host/lib" /opt/railgate/lib
  LD_LIBRARY_PATH= CNI_COMMAND=VERSION "$0/opt/railgate/host/railgate" </dev/null' "$own") ||
  die "the host bundle does not run with its own libraries"
grep -q '"supportedVersions"' <<<"$ver" || die "the host bundle's VERSION answered: $ver"
say "the host bundle runs with its $(find "$own/opt/railgate/host/lib" -type f | wc -l) libraries"

# ---- the archive ----
oci_archive "$name" "$out" \
  '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["railgate-device-plugin","--log-format","json"]}' \
  "$base" "$own"
say "$name written to $1 ($(du -h "$out" | cut -f1); base $(du -sh "$base" | cut -f1), railgate $(du -sh "$own" | cut -f1))"
