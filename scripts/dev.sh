#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The developer loop: build what changed (Debug, ASan+UBSan, failpoints
# compiled in) in build-dev and run the unit tests (no root, no network);
# ctest arguments choose others. Needs the packages of scripts/deps.sh
# (scripts/test.sh installs them; `. scripts/deps.sh && railgate_deps`).
#
#   bash scripts/dev.sh                                  # the unit tests
#   bash scripts/dev.sh -R netdev-sysfs                  # one of them
#   bash scripts/dev.sh -L integration -R hostile-pod    # as root: an integration test
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${RAILGATE_DEV_BUILD:-$src/build-dev}

if [ ! -f "$dir/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DRAILGATE_SANITIZE=ON \
    -DRAILGATE_FAILPOINTS=ON >/dev/null
fi
log=$dir/dev-build.log
if ! cmake --build "$dir" -j"$(nproc)" >"$log" 2>&1; then
  grep -E 'error|warning' -A3 "$log" | head -40 >&2
  echo "scripts/dev.sh: the build failed: $log" >&2
  exit 1
fi
[ $# -gt 0 ] || set -- -L unit
cd "$dir"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure -j"$(nproc)" "$@"
