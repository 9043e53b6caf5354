#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes OCI image archives (an OCI image layout in a tar) from directory
# trees, with no Docker and no registry: importable with `ctr images import`,
# `docker load` (20.10 and later) and `kind load image-archive`. Sourced by
# tests/k8s/image.sh and deploy/image.sh.
#
#   oci_archive NAME OUT CONFIG_JSON TREE...
#
# NAME: the image reference (registry.k8s.io/pause:railgate); OUT: the .tar to
# write; CONFIG_JSON: the image config's "config" object ({"Entrypoint":
# [...], "Env": [...]}); each TREE a directory that becomes one uncompressed
# layer, in order (files are owned by root, mtimes zeroed: the same trees give
# the same digests).

_oci_blob() { # _oci_blob DIR FILE: move FILE into DIR/blobs/sha256, print its digest
  local d
  d=$(sha256sum "$2" | cut -d' ' -f1)
  mv "$2" "$1/blobs/sha256/$d"
  echo "sha256:$d"
}

_oci_size() { stat -c %s "$1/blobs/sha256/${2#sha256:}"; }

oci_archive() {
  local name=$1 out=$2 cfg=$3 work layer config manifest diff_ids="" layers="" paths="" tree
  shift 3
  work=$(mktemp -d)
  mkdir -p "$work/oci/blobs/sha256"
  for tree in "$@"; do
    tar -C "$tree" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
      -cf "$work/layer.tar" . || {
      rm -rf "$work"
      return 1
    }
    layer=$(_oci_blob "$work/oci" "$work/layer.tar")
    diff_ids+="${diff_ids:+,}\"$layer\""
    paths+="${paths:+,}\"blobs/sha256/${layer#sha256:}\""
    layers+="${layers:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"$layer\",\"size\":$(_oci_size "$work/oci" "$layer")}"
  done
  printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":[%s]}}' \
    "$cfg" "$diff_ids" >"$work/config.json"
  config=$(_oci_blob "$work/oci" "$work/config.json")
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[%s]}' \
    "$config" "$(_oci_size "$work/oci" "$config")" "$layers" >"$work/manifest.json"
  manifest=$(_oci_blob "$work/oci" "$work/manifest.json")
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest" "$(_oci_size "$work/oci" "$manifest")" "$name" "${name##*:}" >"$work/oci/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$work/oci/oci-layout"
  # docker load reads a manifest.json of its own format beside the OCI layout
  printf '[{"Config":"blobs/sha256/%s","RepoTags":["%s"],"Layers":[%s]}]' "${config#sha256:}" \
    "$name" "$paths" >"$work/oci/manifest.json"
  tar -C "$work/oci" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$out" .
  rm -rf "$work"
}
