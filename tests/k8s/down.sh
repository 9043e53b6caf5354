#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops the local cluster that `tests/k8s/e2e.sh --keep` left running:
#
#   bash tests/k8s/down.sh [DIR]       (as root)
#
# DIR is the cluster's temporary directory (e2e.sh prints it); by default the
# one e2e.sh named last in /tmp/railgate-k8s.kept. Everything is stopped by
# the PIDs recorded in DIR/cluster.env, each only while its command line
# still names DIR (a PID reused since is left alone), then the pods'
# processes through containerd and kubelet's cgroups, as the e2e's own
# cleanup does (tests/k8s/lib.sh); its network namespaces and cgroups go,
# kubelet's sysctls are put back, and DIR is removed.
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=tests/k8s/down.sh
# shellcheck source=scripts/lib/log.sh
. "$K8S_DIR/../../scripts/lib/log.sh"

[ "$(id -u)" -eq 0 ] || die "needs root, as tests/k8s/e2e.sh did"
# shellcheck source=tests/k8s/lib.sh
. "$K8S_DIR/lib.sh"
[ $# -le 1 ] || die "usage: $PROG [DIR]"
DIR=${1:-$(cat "$K8S_KEPT" 2>/dev/null || true)}
[ -n "$DIR" ] || die "no cluster kept: $K8S_KEPT names none (give its dir)"
DIR=${DIR%/}
case $DIR in
/tmp/railgate-k8s.*) ;;
*) die "$DIR is not a dir of tests/k8s/e2e.sh (/tmp/railgate-k8s.*)" ;;
esac
[ -f "$DIR/cluster.env" ] || die "$DIR/cluster.env is missing: not a cluster e2e.sh --keep left"

declare -A PID=() SYSCTL_WAS=()
# shellcheck disable=SC1091 # written by e2e.sh --keep (declare -p of K8S_STATE_VARS)
. "$DIR/cluster.env"
[ "$T" = "$DIR" ] || die "$DIR/cluster.env is of another dir ($T)"

# only our processes: a recorded PID whose command line no longer names the dir is not
for name in "${!PID[@]}"; do
  if ! { tr '\0' ' ' <"/proc/${PID[$name]}/cmdline"; } 2>/dev/null | grep -q -- "$T/"; then
    unset "PID[$name]"
  fi
done
# the holder of the node's mounts runs `sleep infinity` in the node's netns
if [ -n "$HOLDER" ] &&
  [ "$(stat -L -c %i "/proc/$HOLDER/ns/net" 2>/dev/null)" != "$(stat -L -c %i "/run/netns/$NS" 2>/dev/null)" ]; then
  HOLDER=
fi
say "stopping the cluster in $T: ${!PID[*]}${HOLDER:+ holder}"
set +e # as e2e.sh's cleanup: every step is tried
k8s_teardown
rm -rf "$T"
if [ "$(cat "$K8S_KEPT" 2>/dev/null || true)" = "$T" ]; then
  rm -f "$K8S_KEPT"
fi
say "stopped; $T removed"
