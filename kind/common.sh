# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# shellcheck disable=SC2034 # the names below are for the scripts that source this
# Shared by kind/up.sh, kind/e2e.sh and kind/down.sh: names, the tools (kind,
# kubectl, helm: built from the Go module proxy and cached unless KIND,
# KUBECTL, HELM name them), the Docker engine, the fabric's namespaces.
# Sourced, not run.

PROG="kind/$(basename "$0")"

KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$KIND_DIR")
CLUSTER=railgate # kind-config.yaml and values.yaml use this name
CONTEXT=kind-$CLUSTER
RELEASE=railgate # the Helm release, in namespace railgate-system
IMAGE=docker.io/library/railgate:0.1.0 # what the chart's railgate:<appVersion> means
POD_IMAGE=railgate.test/busybox:e2e    # the e2e pods: tests/k8s/image.sh busybox (sleep, ip, ping)
WORKERS=("$CLUSTER-worker" "$CLUSTER-worker2")
RAILS=(0 1 2 3)
# The fabric on the Docker host (kind/up.sh): leaf k holds port n<n>r<k>, the
# peer of worker n's rail k, and one link per tenant to the spine
FABRIC=rgkind # namespaces $FABRIC-leaf0..3, $FABRIC-spine
# veth (the default: rails lead into the fabric, packets flow) or dummy (where
# the kernel has the driver; the rails lead nowhere and reachability is not
# checked)
RAIL_KIND=${RAILGATE_KIND_RAILS:-veth}

# shellcheck source=scripts/lib/log.sh
. "$ROOT/scripts/lib/log.sh"
# shellcheck source=scripts/lib/wait.sh
. "$ROOT/scripts/lib/wait.sh"
# shellcheck source=scripts/lib/template.sh
. "$ROOT/scripts/lib/template.sh"
# shellcheck source=tests/cluster/checks.sh
. "$ROOT/tests/cluster/checks.sh"
# shellcheck source=docker.sh
. "$KIND_DIR/docker.sh"
DOCKER_NETNS=${RAILGATE_DOCKER_NETNS:-} # a private engine's namespace, from kind/e2e.sh

# Exit 77 (skipped) where there is no Docker engine to run kind on.
need_docker() {
  if ! command -v docker >/dev/null 2>&1; then
    printf '%s: skipped: docker is not installed; the kind path needs a Docker engine\n' "$PROG" >&2
    exit 77
  fi
  if ! docker info >/dev/null 2>&1; then
    printf '%s: skipped: no Docker engine answers (docker info failed); kind/e2e.sh starts one of its own\n' \
      "$PROG" >&2
    exit 77
  fi
}

# KIND, KUBECTL and HELM: the given ones, else built and cached (kind/go-tool.sh,
# tests/k8s/build.sh, scripts/helm.sh); K8S_BIN the Kubernetes build
need_tools() {
  if [ -z "${KIND:-}" ]; then
    KIND=$(bash "$KIND_DIR/go-tool.sh" kind) || die "building kind failed"
  fi
  if [ -z "${KUBECTL:-}" ]; then
    K8S_BIN=$(bash "$ROOT/tests/k8s/build.sh") || die "building Kubernetes failed"
    KUBECTL=$K8S_BIN/kubectl
  fi
  if [ -z "${HELM:-}" ]; then
    HELM=$(bash "$ROOT/scripts/helm.sh") || die "building helm failed"
  fi
  export KIND KUBECTL HELM
}

# kind, kubectl and helm run where the engine publishes the API server's port
kindc() { in_docker_net "$KIND" "$@"; }
kctl() { in_docker_net "$KUBECTL" --context "$CONTEXT" "$@"; }
helmc() { in_docker_net "$HELM" --kube-context "$CONTEXT" "$@"; }

cluster_exists() {
  kindc get clusters 2>/dev/null | grep -qx "$CLUSTER"
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

# the fabric's namespaces, for kind/down.sh
fabric_namespaces() {
  ip netns list 2>/dev/null | awk -v p="$FABRIC-" 'index($1, p) == 1 { print $1 }'
}
