#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install the Debian 12 packages railgate builds, tests and demos with (root).
# Sourced by demo.sh and test.sh; does nothing when everything is there.
set -euo pipefail

railgate_packages=(
  gcc make cmake pkg-config
  libgrpc-dev protobuf-c-compiler libprotobuf-c-dev
  libnl-3-dev libnl-route-3-dev libnl-genl-3-dev libhwloc-dev libjansson-dev libmicrohttpd-dev
  libcurl4-openssl-dev
  libcmocka-dev
  python3-yaml nodejs
  iproute2 iputils-ping util-linux procps ethtool
  containernetworking-plugins
  containerd runc busybox-static openssl curl file
  docker.io
  debootstrap patchelf
  cpio kmod libaio1 libcapstone4 libfdt1 libfuse3-3 libibverbs1 libpmem1
  librdmacm1 libslirp0 liburing2 libvdeplug2
  clang-format shellcheck valgrind
  clang libclang-rt-14-dev
)

railgate_deps() {
  local missing=()
  for p in "${railgate_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "railgate: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
    return 1
  fi
  echo "railgate: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  railgate_deps
fi
