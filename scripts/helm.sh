#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the pinned helm CLI from deploy/helm/tool/go.mod (helm.sh/helm/v3
# from the Go module proxy) into a cache outside the repo, once per pin
# (scripts/lib/go.sh):
#
#   $RAILGATE_HELM_CACHE/<helm version>-<hash>/bin/helm
#
# The hash covers go.mod, go.sum and tools.go, so a change of any pin builds
# anew and an unchanged set is reused. Prints the path of the helm binary on
# stdout; progress and the build log go to stderr.
#
#   helm=$(bash scripts/helm.sh) && "$helm" lint deploy/helm/railgate
set -euo pipefail

PROG=scripts/helm.sh
SAY_FD=2
LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")/lib" && pwd)
TOOL_DIR=$(cd "$LIB/../../deploy/helm/tool" && pwd)
# shellcheck source=scripts/lib/log.sh
. "$LIB/log.sh"
# shellcheck source=scripts/lib/cache.sh
. "$LIB/cache.sh"
# shellcheck source=scripts/lib/go.sh
. "$LIB/go.sh"

HELM_VERSION=$(go_pin "$TOOL_DIR/go.mod" helm.sh/helm/v3)
CLIENT_GO_VERSION=$(go_pin "$TOOL_DIR/go.mod" k8s.io/client-go)
[[ -n $HELM_VERSION && -n $CLIENT_GO_VERSION ]] ||
  die "$TOOL_DIR/go.mod pins no helm.sh/helm/v3 or k8s.io/client-go version"
HASH=$(cd "$TOOL_DIR" && cat go.mod go.sum tools.go | sha256sum | cut -c1-12)
CACHE=${RAILGATE_HELM_CACHE:-/var/cache/railgate-helm}/$HELM_VERSION-$HASH

build() { # build OUTDIR
  # what helm's Makefile sets: its version, and the Kubernetes version that
  # `helm template` and `helm lint` assume without a cluster (client-go v0.X.Y
  # is Kubernetes 1.X)
  local k8s_minor ldflags pkg
  k8s_minor=$(cut -d. -f2 <<<"$CLIENT_GO_VERSION")
  ldflags="-s -w"
  ldflags+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
  done
  go_cmd "$TOOL_DIR" "-mod=readonly -buildvcs=false" build -p "${RAILGATE_HELM_BUILD_JOBS:-2}" -trimpath \
    -ldflags "$ldflags" -o "$1/helm" helm.sh/helm/v3/cmd/helm && "$1/helm" version --short
}
BIN=$(go_cached "$CACHE" "helm $HELM_VERSION" build helm)
echo "$BIN/helm"
