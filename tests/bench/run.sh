#!/usr/bin/env bash
# Run the benchmarks (root: they create veth rails in a private network namespace).
# Usage: tests/bench/run.sh [BUILD_DIR]   (default: build-bench, a release build)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build-bench}
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
"$build/tests/bench/bench-deviceplugin"
"$build/tests/bench/bench-podresources"
"$build/tests/bench/bench-cni"
# what one ADD/DEL asks of the kernel, counted (needs strace)
if command -v strace >/dev/null; then "$build/tests/bench/bench-cni" --syscalls; fi
