# shellcheck shell=bash
# shellcheck disable=SC2034 # the names below are for the scripts that source this
# Shared by kind/up.sh, kind/e2e.sh and kind/down.sh: names, and the checks
# that a Docker engine, kind and kubectl are there. Sourced, not run.

PROG="kind/$(basename "$0")"

KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$KIND_DIR")
CLUSTER=railgate # kind-config.yaml and configmap.yaml use this name
CONTEXT=kind-$CLUSTER
IMAGE=railgate:0.1.0              # the tag deploy/daemonset.yaml runs
POD_IMAGE=railgate-e2e-pod:0.1.0  # the e2e pods: sleep and iproute2
WORKERS=("$CLUSTER-worker" "$CLUSTER-worker2")
RAILS=(0 1 2 3)

# shellcheck source=checks.sh
. "$KIND_DIR/checks.sh"

say() { printf '%s: %s\n' "$PROG" "$*"; }
die() {
  printf '%s: error: %s\n' "$PROG" "$*" >&2
  exit 1
}

# Exit 77 (skipped) where there is no Docker engine to run kind on.
need_docker() {
  if ! command -v docker >/dev/null 2>&1; then
    printf '%s: skipped: docker is not installed; the kind path needs a Docker engine\n' "$PROG" >&2
    exit 77
  fi
  if ! docker info >/dev/null 2>&1; then
    printf '%s: skipped: no Docker engine answers (docker info failed); the kind path needs one\n' \
      "$PROG" >&2
    exit 77
  fi
}

need_tools() {
  local t
  for t in kind kubectl; do
    command -v "$t" >/dev/null 2>&1 || die "$t is not installed (https://kind.sigs.k8s.io)"
  done
}

cluster_exists() {
  kind get clusters 2>/dev/null | grep -qx "$CLUSTER"
}

kctl() {
  kubectl --context "$CONTEXT" "$@"
}

# n of a worker: 1 for railgate-worker, 2 for railgate-worker2
node_number() {
  local i
  for i in "${!WORKERS[@]}"; do
    if [ "${WORKERS[$i]}" = "$1" ]; then
      echo $((i + 1))
      return 0
    fi
  done
  return 1
}
