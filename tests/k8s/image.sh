#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes the two images tests/k8s/e2e.sh runs, as OCI image tarballs for
# `ctr images import`, since no image can be pulled on these machines:
#
#   image.sh pause OUT.tar [NAME]    registry.k8s.io/pause:railgate, a static pause (pause.c)
#   image.sh busybox OUT.tar [NAME]  railgate.test/busybox:e2e, Debian's busybox-static
#                                    with its applets linked in /bin
#
# NAME names the image otherwise (kind/node-image.sh: the pause kubeadm expects).
# One uncompressed layer each; the image name rides in the index's annotations.
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PAUSE_IMAGE=registry.k8s.io/pause:railgate
BUSYBOX_IMAGE=railgate.test/busybox:e2e

PROG=tests/k8s/image.sh
# shellcheck source=scripts/lib/log.sh
. "$K8S_DIR/../../scripts/lib/log.sh"
# shellcheck source=scripts/lib/oci.sh
. "$K8S_DIR/../../scripts/lib/oci.sh"

[ $# -eq 2 ] || [ $# -eq 3 ] || die "usage: image.sh pause|busybox OUT.tar [NAME]"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
case $1 in
pause)
  gcc -static -O2 -Wall -Wextra -Werror -o "$root/pause" "$K8S_DIR/pause.c" ||
    die "gcc -static failed (libc6-dev has the static libc)"
  oci_archive "${3:-$PAUSE_IMAGE}" "$2" '{"Entrypoint":["/pause"],"Env":["PATH=/bin"]}' "$root"
  ;;
busybox)
  [ -x /bin/busybox ] || die "/bin/busybox is missing: apt-get install busybox-static"
  file -L /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
    ldd /bin/busybox 2>&1 | grep -q 'not a dynamic' || die "/bin/busybox is not static (busybox-static)"
  mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/proc" "$root/sys" "$root/dev"
  cp /bin/busybox "$root/bin/busybox"
  for a in $(/bin/busybox --list); do
    [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
  done
  oci_archive "${3:-$BUSYBOX_IMAGE}" "$2" '{"Cmd":["sh"],"Env":["PATH=/bin"]}' "$root"
  ;;
*) die "unknown image $1" ;;
esac
