# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Manifests and config files kept as files in the tree, with ${NAME} holes.
# Sourced after log.sh, not run.
#
#   render FILE NAME=VALUE...   FILE on stdout with each ${NAME} replaced by
#                               VALUE; a hole left without a value is an error
#                               (nothing printed, die naming it)

render() {
  local file=$1 text kv
  shift
  text=$(<"$file") || die "render: cannot read $file"
  for kv; do
    text=${text//"\${${kv%%=*}}"/"${kv#*=}"}
  done
  if [[ $text =~ \$\{[A-Za-z_][A-Za-z_0-9]*\} ]]; then
    die "render $file: no value given for ${BASH_REMATCH[0]}"
  fi
  printf '%s\n' "$text"
}
