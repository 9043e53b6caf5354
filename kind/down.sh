#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Delete the kind cluster kind/up.sh made (its rails and device nodes live in
# the node containers and go with them) and the fabric's namespaces.
set -euo pipefail
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

need_docker
need_tools
if cluster_exists; then
  kindc delete cluster --name "$CLUSTER"
  say "cluster $CLUSTER deleted"
else
  say "no cluster $CLUSTER: nothing to do"
fi
for ns in $(fabric_namespaces); do
  ip netns delete "$ns"
  say "fabric namespace $ns deleted"
done
