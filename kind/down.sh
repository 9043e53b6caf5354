#!/usr/bin/env bash
# Delete the kind cluster kind/up.sh made (its rails and device nodes live in
# the node containers and go with them).
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

need_docker
need_tools
if cluster_exists; then
  kind delete cluster --name "$CLUSTER"
  say "cluster $CLUSTER deleted"
else
  say "no cluster $CLUSTER: nothing to do"
fi
