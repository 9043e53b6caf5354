#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes the plain manifests of deploy/ from the Helm chart deploy/helm/railgate,
# the one source of both: `helm template` of the chart's default values in
# namespace railgate-system, one file per template, named like it
# (templates/daemonset.yaml is deploy/daemonset.yaml). Two values differ from
# the defaults, each for one file: namespace.create=true makes
# deploy/namespace.yaml (kubectl needs the namespace as an object; helm
# installs into one made by --create-namespace), and uninstall.enabled=true
# (the chart's uninstall mode) deploy/uninstall/daemonset.yaml. And mode=dra
# (the DRA driver instead of device plugins) renders the files it changes into
# deploy/dra/: the node configs, the DaemonSet, and dra.yaml (DeviceClasses,
# RBAC, the slices' admission policy), applied over deploy/*.yaml.
#
#   bash deploy/render.sh           write the files
#   bash deploy/render.sh --check   write nothing; exit 1 with a diff when a
#                                   file differs from the chart's rendering
#
# helm is $HELM, else the one scripts/helm.sh builds from the Go module proxy
# (once, then cached).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=deploy/render.sh
CHART=$ROOT/deploy/helm/railgate
NAMESPACE=railgate-system
HEADER="# Rendered from the Helm chart deploy/helm/railgate by deploy/render.sh:
# change the chart, then run deploy/render.sh (--check: do they agree)."

check=false
case ${1:-} in
  --check) check=true ;;
  "") ;;
  *)
    echo "usage: $PROG [--check]" >&2
    exit 2
    ;;
esac

HELM=${HELM:-$(bash "$ROOT/scripts/helm.sh")}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# render TEMPLATE OUT [HELM ARGS...]: one template's documents, without the
# "# Source:" lines helm adds, after the header
render() {
  local template=$1 out=$2
  shift 2
  mkdir -p "$(dirname "$out")"
  {
    echo "$HEADER"
    "$HELM" template railgate "$CHART" --namespace "$NAMESPACE" \
      --set namespace.create=true --show-only "templates/$template" "$@" |
      sed -e '1{/^---$/d}' -e '/^# Source: railgate\/templates\//d'
  } >"$out"
}

files=()
for t in "$CHART"/templates/*.yaml; do
  name=$(basename "$t")
  [ "$name" != dra.yaml ] || continue # mode dra only: deploy/dra/
  render "$name" "$TMP/$name"
  files+=("$name")
done
for t in "$CHART"/templates/uninstall/*.yaml; do
  name=uninstall/$(basename "$t")
  render "$name" "$TMP/$name" --set uninstall.enabled=true
  files+=("$name")
done

for name in configmap.yaml daemonset.yaml dra.yaml; do
  render "$name" "$TMP/dra/$name" --set mode=dra
  files+=("dra/$name")
done

differ=0
for f in "${files[@]}"; do
  if $check; then
    if ! diff -u --label "deploy/$f" --label "deploy/$f (from the chart)" \
      "$ROOT/deploy/$f" "$TMP/$f" 2>&1; then
      differ=1
    fi
  elif ! cmp -s "$TMP/$f" "$ROOT/deploy/$f"; then
    mkdir -p "$(dirname "$ROOT/deploy/$f")"
    cp "$TMP/$f" "$ROOT/deploy/$f.new"
    mv "$ROOT/deploy/$f.new" "$ROOT/deploy/$f"
    echo "$PROG: wrote deploy/$f" >&2
  fi
done
# every manifest of deploy/ is the chart's
for f in "$ROOT"/deploy/*.yaml "$ROOT"/deploy/uninstall/*.yaml "$ROOT"/deploy/dra/*.yaml; do
  rel=${f#"$ROOT/deploy/"}
  [[ -e $f && " ${files[*]} " != *" $rel "* ]] || continue
  echo "$PROG: deploy/$rel is no template of the chart (add it to deploy/helm/railgate/templates/)" >&2
  differ=1
done
if $check && ((differ)); then
  echo "$PROG: deploy/ differs from the chart: run bash deploy/render.sh (after changing the chart, not the files)" >&2
fi
exit "$differ"
