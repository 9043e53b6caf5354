#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: lint, then unit + integration tests in a normal build
# and again under AddressSanitizer + UndefinedBehaviorSanitizer, the normal
# build's integration tests on Debian's 6.1 and 6.12 kernels under QEMU
# (tests/vm/ci.sh: dummy rails, VRF devices, SR-IOV VFs; its first run
# fetches the kernels and QEMU, about a minute), the fuzz targets, railgate
# on a real one-node Kubernetes cluster (tests/k8s; its
# first run builds Kubernetes from the Go module proxy, about 25 minutes on 2
# cores, then reuses the build) and on a kind cluster with two workers (kind/;
# its first run builds kind, crictl and the node image, about 10 minutes more).
# Root runs the root-only tests (network namespaces); other users see them
# skipped.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/deps.sh
. "$src/scripts/deps.sh"
railgate_deps

jobs=$(nproc)
cd "$src"

echo "== lint: clang-format, shellcheck"
mapfile -t c_files < <(git ls-files '*.c' '*.h' 2>/dev/null || find lib agent deviceplugin dra cni installer tests -name '*.[ch]')
clang-format --dry-run -Werror "${c_files[@]}"
mapfile -t sh_files < <(git ls-files '*.sh' .ci/run 2>/dev/null)
shellcheck "${sh_files[@]}"
echo "== lint: an SPDX line at the top of every source file (LICENSE: Apache-2.0)"
mapfile -t src_files < <(git ls-files '*.c' '*.h' '*.sh' '*.py' '*.proto' '*.go' '*.mjs' \
  'CMakeLists.txt' '*/CMakeLists.txt' '*.cmake' .ci/run deploy/Dockerfile kind/node/entrypoint)
for f in "${src_files[@]}"; do
  head -3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || {
    echo "$f: no SPDX-License-Identifier line in its first three lines" >&2
    exit 1
  }
done
echo "== helm: the chart lints, and deploy/*.yaml are its rendering (helm built once from the Go module proxy)"
helm=$(bash "$src/scripts/helm.sh")
"$helm" lint --strict "$src/deploy/helm/railgate"
"$helm" lint --strict "$src/deploy/helm/railgate" --set mode=dra
# the kind e2e's values: they pass the chart's schema and render
"$helm" lint --strict "$src/deploy/helm/railgate" -f "$src/kind/values.yaml"
"$helm" template railgate "$src/deploy/helm/railgate" -f "$src/kind/values.yaml" >/dev/null
# the metrics values, every one on (the tests/k8s e2e installs the chart with metrics on)
"$helm" lint --strict "$src/deploy/helm/railgate" --set metrics.enabled=true,metrics.host=:: \
  --set metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.labels.release=prometheus
HELM=$helm bash "$src/deploy/render.sh" --check

# run_suite DIR [-DOPTION ...] [ctest arguments: -L LABEL ...]
run_suite() {
  local dir=$1; shift
  local defs=() sel=()
  for a in "$@"; do
    case $a in -D*) defs+=("$a") ;; *) sel+=("$a") ;; esac
  done
  echo "== build $dir (${defs[*]})"
  cmake -S "$src" -B "$dir" "${defs[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
  echo "== test $dir ${sel[*]}"
  (cd "$dir" && ctest --output-on-failure --timeout 600 "${sel[@]}")
}

# The release build is what ships; the sanitizer build compiles in the
# failpoints, so the crash-consistency trials run there (the release run says
# them skipped); the shared-gRPC build keeps RAILGATE_STATIC_GRPC=OFF working.
run_suite "$src/build" -DCMAKE_BUILD_TYPE=Release
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite "$src/build-asan" -DCMAKE_BUILD_TYPE=Debug -DRAILGATE_SANITIZE=ON -DRAILGATE_FAILPOINTS=ON
run_suite "$src/build-shared-grpc" -DCMAKE_BUILD_TYPE=Release -DRAILGATE_STATIC_GRPC=OFF -L unit
echo "== vm: the release build's tests on Debian's 6.1 and 6.12 kernels under QEMU (dummy rails, VRF devices, SR-IOV), then the sanitizer build's CNI races and crash trials on dummy rails"
rc=0
bash "$src/tests/vm/ci.sh" "$src/build" "$src/build-asan" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
# The corpus regressions (ctest fuzz-regress/*) gate above; a timed run finds
# new inputs or not by chance, so a crash it finds reports and does not gate.
# Targets that do not build (or no clang) are no chance: they gate.
echo "== fuzz: every libFuzzer target for 20 s (a crash reports, does not gate; longer runs: tests/fuzz/README.md)"
rc=0
bash "$src/scripts/fuzz.sh" 20 || rc=$?
case $rc in
  0) ;;
  1) echo "fuzz: a target found a crash: see the artifacts above and add the input to tests/fuzz/regressions" ;;
  *) echo "fuzz: the fuzz build or its tools failed (exit $rc): see above" >&2; exit "$rc" ;;
esac
echo "== k8s e2e: a real one-node cluster, upstream Kubernetes built from the Go module proxy"
rc=0
bash "$src/tests/k8s/e2e.sh" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
echo "== k8s e2e on containerd 2.x (built from the Go module proxy; CDI, which DRA mode needs)"
rc=0
RAILGATE_K8S_CONTAINERD=2 bash "$src/tests/k8s/e2e.sh" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
echo "== k8s e2e in DRA mode (containerd 2.x): slices, the scheduler's claims for railgate.io/<tenant>, NodePrepare, networkData"
rc=0
RAILGATE_K8S_CONTAINERD=2 RAILGATE_K8S_MODE=dra bash "$src/tests/k8s/e2e.sh" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
echo "== kind e2e: 1 control plane + 2 workers on a locally built node image, the chart, packets over the rails"
# kind/e2e.sh starts a private Docker engine (Debian's docker.io) when none
# answers; 77 only where that cannot be (not root, docker.io not installed)
rc=0
bash "$src/kind/e2e.sh" || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "kind e2e: skipped (see above); tests/e2e ran its twin"
elif [ "$rc" -ne 0 ]; then
  exit "$rc"
fi
echo "== all test suites passed"
