#!/usr/bin/env bash
# Makes the two images tests/k8s/e2e.sh runs, as OCI image tarballs for
# `ctr images import`, since no image can be pulled on these machines:
#
#   image.sh pause OUT.tar      registry.k8s.io/pause:railgate, a static pause (pause.c)
#   image.sh busybox OUT.tar    railgate.test/busybox:e2e, Debian's busybox-static
#                               with its applets linked in /bin
#
# One uncompressed layer each; the image name rides in the index's annotations.
set -euo pipefail

K8S_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PAUSE_IMAGE=registry.k8s.io/pause:railgate
BUSYBOX_IMAGE=railgate.test/busybox:e2e

die() {
  echo "tests/k8s/image.sh: error: $*" >&2
  exit 1
}

blob() { # blob DIR FILE: move FILE into DIR/blobs/sha256, print its digest
  local d
  d=$(sha256sum "$2" | cut -d' ' -f1)
  mv "$2" "$1/blobs/sha256/$d"
  echo "sha256:$d"
}

size() { stat -c %s "$1/blobs/sha256/${2#sha256:}"; }

# oci_image NAME ROOTFS OUT ENTRYPOINT_JSON CMD_JSON
oci_image() {
  local name=$1 rootfs=$2 out=$3 entry=$4 cmd=$5 work layer config manifest
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now: work is local
  trap "rm -rf '$work'" RETURN
  mkdir -p "$work/oci/blobs/sha256"
  tar -C "$rootfs" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -cf "$work/layer.tar" .
  layer=$(blob "$work/oci" "$work/layer.tar")
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"Cmd":%s,"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
    "$entry" "$cmd" "$layer" >"$work/config.json"
  config=$(blob "$work/oci" "$work/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"%s","size":%s}]}' \
    "$config" "$(size "$work/oci" "$config")" "$layer" "$(size "$work/oci" "$layer")" >"$work/manifest.json"
  manifest=$(blob "$work/oci" "$work/manifest.json")
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest" "$(size "$work/oci" "$manifest")" "$name" "${name##*:}" >"$work/oci/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
  tar -C "$work/oci" --sort=name --owner=0 --group=0 --numeric-owner -cf "$out" .
}

[ $# -eq 2 ] || die "usage: image.sh pause|busybox OUT.tar"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
case $1 in
pause)
  gcc -static -O2 -Wall -Wextra -Werror -o "$root/pause" "$K8S_DIR/pause.c" ||
    die "gcc -static failed (libc6-dev has the static libc)"
  oci_image "$PAUSE_IMAGE" "$root" "$2" '["/pause"]' null
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
  oci_image "$BUSYBOX_IMAGE" "$root" "$2" null '["sh"]'
  ;;
*) die "unknown image $1" ;;
esac
