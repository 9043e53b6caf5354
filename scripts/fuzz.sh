#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan in
# build-fuzz/, and run each for a bounded time on a temp copy of its corpus.
#
#   scripts/fuzz.sh [--merge] [SECONDS] [TARGET...]
#
# SECONDS per target (default 30); TARGETs default to every
# tests/fuzz/fuzz-<target>.c. The repository is not written to unless
# --merge is given: then the inputs that add coverage go into
# tests/fuzz/corpus/<target>/. Exits 1 if any target crashed, leaked, hit
# undefined behaviour or a failed check (and prints the reproducer), 2 for a
# bad argument or a missing clang/libFuzzer, 3 if the targets do not build.
# Installs nothing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
build=$root/build-fuzz

merge=0
seconds=30
targets=()
for arg in "$@"; do
  case "$arg" in
    --merge) merge=1 ;;
    -h | --help)
      sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *[!0-9]*) targets+=("$arg") ;;
    *) seconds=$arg ;;
  esac
done
if [ "${#targets[@]}" -eq 0 ]; then
  for f in tests/fuzz/fuzz-*.c; do
    t=${f#tests/fuzz/fuzz-}
    targets+=("${t%.c}")
  done
fi
for t in "${targets[@]}"; do
  if [ ! -f "tests/fuzz/fuzz-$t.c" ]; then
    echo "fuzz: no target $t (tests/fuzz/fuzz-$t.c)" >&2
    exit 2
  fi
done

if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz: clang is missing; install it with: apt-get install clang libclang-rt-14-dev" >&2
  exit 2
fi
# libFuzzer and the sanitizer runtimes are a separate package on Debian
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
  cat "$probe/err" >&2
  echo "fuzz: clang cannot link libFuzzer; install it with: apt-get install libclang-rt-14-dev" >&2
  exit 2
fi

echo "fuzz: building ${build#"$root"/} (clang, libFuzzer, ASan, UBSan)"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DRAILGATE_FUZZ=ON -DRAILGATE_TESTS=ON >/dev/null
build_targets=()
for t in "${targets[@]}"; do
  build_targets+=(--target "fuzz-$t")
done
cmake --build "$build" -j"$(nproc)" "${build_targets[@]}" >"$probe/build.log" 2>&1 || {
  tail -n 60 "$probe/build.log" >&2
  echo "fuzz: build failed" >&2
  exit 3
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
summary=()
start=$SECONDS
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  corpus=$work/corpus
  artifacts=$build/fuzz-artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  # seeds and the reproducers of fixed bugs; dot-files (.gitkeep) are not inputs
  find "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" -maxdepth 1 -type f ! -name '.*' \
    -exec cp -t "$corpus" {} + 2>/dev/null || true
  log=$build/fuzz-artifacts/$t.log
  echo "fuzz: $t for ${seconds}s (log ${log#"$root"/})"
  opts=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
    -artifact_prefix="$artifacts/")
  if [ -f "tests/fuzz/$t.dict" ]; then
    opts+=(-dict="tests/fuzz/$t.dict")
  fi
  rc=0
  "$build/tests/fuzz/fuzz-$t" "${opts[@]}" "$corpus" >"$log" 2>&1 || rc=$?
  stats=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -n 1 | sed -E 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+/runs \1 /') || true
  rate=$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$log")
  summary+=("$t: ${stats:-no stats}; ${rate:-?} exec/s")
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    grep -E 'ERROR: |SUMMARY: |fuzz check failed' "$log" | head -n 5 >&2 || true
    repro=$(sed -n "s/.*Test unit written to //p" "$log" | tail -n 1)
    echo "fuzz: $t FAILED (exit $rc); reproducer: ${repro:-none written, see $log}" >&2
    echo "fuzz:   rerun: $build/tests/fuzz/fuzz-$t ${repro:-<input>}" >&2
    echo "fuzz:   once fixed, commit it as tests/fuzz/regressions/$t/<name>" >&2
  elif [ "$merge" -eq 1 ]; then
    mkdir -p "tests/fuzz/corpus/$t"
    "$build/tests/fuzz/fuzz-$t" -merge=1 "tests/fuzz/corpus/$t" "$corpus" >>"$log" 2>&1
    echo "fuzz: $t corpus merged into tests/fuzz/corpus/$t"
  fi
  rm -rf "$work"
done

echo "fuzz: summary ($((SECONDS - start))s)"
printf '  %s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (artifacts in ${build#"$root"/}/fuzz-artifacts/)" >&2
  exit 1
fi
echo "fuzz: no crash in ${#targets[@]} targets"
