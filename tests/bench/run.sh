#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run the benchmarks (root: they create veth rails in a private network namespace).
# Usage: tests/bench/run.sh [BUILD_DIR] [--before CNI]   (default: build-bench, a release
# build; --before: an earlier railgate CNI binary, measured in the same cycles)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-bench
before=()
while [ $# -gt 0 ]; do
  case $1 in
    --before) before=(--before "$2"); shift 2 ;;
    *) build=$1; shift ;;
  esac
done
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
"$build/tests/bench/bench-deviceplugin"
"$build/tests/bench/bench-podresources"
"$build/tests/bench/bench-cni" 200 "${before[@]}"
# do moves overlap? serial, one sendmsg, 8 threads
"$build/tests/bench/bench-cni" --overlap 40
# what one ADD/DEL asks of the kernel, counted (needs strace)
if command -v strace >/dev/null; then
  "$build/tests/bench/bench-cni" --syscalls
  if [ ${#before[@]} -gt 0 ]; then "$build/tests/bench/bench-cni" --syscalls "${before[1]}"; fi
fi
