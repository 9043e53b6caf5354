#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Make the railgate CNI binary run on the host, whatever the host's distribution.
#
# The container runtime execs the CNI binary on the node itself, not in the
# image, and a node has no libgrpc or libnl of the right version. So the image
# carries, next to a copy of the binary, every shared library it loads (glibc
# and its loader included, so that they match each other), and the copy is
# patched to use them from where railgate-cni-install puts them on the host:
# its ELF interpreter becomes HOST_LIB_DIR/<loader> and its DT_RPATH (which,
# unlike DT_RUNPATH, also applies to the libraries' own dependencies)
# HOST_LIB_DIR. Run in the image build; needs ldd and patchelf.
#
# usage: host-bundle.sh CNI_BINARY OUT_DIR HOST_LIB_DIR
#   OUT_DIR/railgate   the patched binary
#   OUT_DIR/lib/       the libraries, to be copied to HOST_LIB_DIR on the node
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 CNI_BINARY OUT_DIR HOST_LIB_DIR" >&2
  exit 2
fi
bin=$1 out=$2 host_lib=$3
case "$host_lib" in
  /*) ;;
  *) echo "$0: HOST_LIB_DIR must be absolute: $host_lib" >&2; exit 2 ;;
esac
command -v patchelf >/dev/null || { echo "$0: patchelf is not installed" >&2; exit 1; }

mkdir -p "$out/lib"
interp=$(patchelf --print-interpreter "$bin")
# "libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x...)": the resolved path is field 3
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
if [ -z "$libs" ]; then
  echo "$0: ldd found no libraries for $bin" >&2
  exit 1
fi
for lib in $libs "$interp"; do
  cp -L "$lib" "$out/lib/"
done
cp "$bin" "$out/railgate"
patchelf --set-interpreter "$host_lib/$(basename "$interp")" \
  --force-rpath --set-rpath "$host_lib" "$out/railgate"
echo "$0: $out/railgate runs with $(find "$out/lib" -type f | wc -l) libraries from $host_lib"
