#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CNI links no gRPC and no C++ runtime: its direct dependencies are
# jansson, libnl (route, genl), protobuf-c and libc (and a sanitizer's runtime in such a
# build), and no gRPC core, gpr or abseil code is linked into it. This checks the
# artifact; the build graph already refuses such a link at configure
# (railgate_forbid_links in cmake/railgate.cmake, proved by tests/cmake-guard).
#   tests/cni-no-grpc.sh build/cni/railgate
set -euo pipefail
bin=${1:?usage: cni-no-grpc.sh CNI-BINARY}
fail=0
allowed='^(libprotobuf-c|libnl-3|libnl-route-3|libnl-genl-3|libjansson|libc|ld-linux-x86-64|libasan|libubsan|libm|libdl|libpthread|librt|libgcc_s)\.so'
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$bin needs: $(echo "$needed" | tr '\n' ' ')"
while read -r lib; do
  [[ -z $lib || $lib =~ $allowed ]] && continue
  echo "cni-no-grpc: $bin needs $lib" >&2
  fail=1
done <<<"$needed"
syms=$(nm "$bin" 2>&1) || { echo "cni-no-grpc: nm $bin: $syms" >&2; exit 1; }
n=$(grep -cE ' [A-Za-z] (grpc_|gpr_|_ZN4absl|absl_)' <<<"$syms" || true)
if [[ $n -ne 0 ]]; then
  echo "cni-no-grpc: $bin has $n gRPC/gpr/abseil symbols, e.g.:" >&2
  grep -E ' [A-Za-z] (grpc_|gpr_|_ZN4absl|absl_)' <<<"$syms" | head -5 >&2 || true
  fail=1
fi
exit "$fail"
