#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What railgate's image holds of its own, built from the source tree SRC into
# OUT, the same way in deploy/Dockerfile's builder stage and in
# deploy/image.sh (one recipe for both):
#
#   OUT/usr/local/bin/         railgate-device-plugin, railgate-cni-install
#   OUT/usr/local/lib/cni/     the railgate CNI binary as the image runs it
#   OUT/opt/railgate/host/     the CNI binary as the node runs it, with every
#                              library it loads (deploy/host-bundle.sh)
#
# usage: build.sh SRC BUILD_DIR OUT    (a release build, stripped; no tests)
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: $0 SRC BUILD_DIR OUT" >&2
  exit 2
fi
src=$1 build=$2 out=$3
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRAILGATE_TESTS=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr/local >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
rm -rf "$out"
DESTDIR=$out cmake --install "$build" --strip >/dev/null
bash "$src/deploy/host-bundle.sh" "$out/usr/local/lib/cni/railgate" "$out/opt/railgate/host" \
  /opt/railgate/lib
