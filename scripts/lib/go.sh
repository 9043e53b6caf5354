# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The pinned Go tool builds (Kubernetes, containerd, kind, crictl, helm):
# built from the Go module proxy into a cache directory outside the repo, once
# per key, under cache.sh's lock. The Go module and build caches live in the
# same directory, so a fresh key is a cold build and its time (build-seconds)
# means the same on every machine. Sourced after log.sh and cache.sh, not run;
# the scripts that use it print a path on stdout, so set SAY_FD=2.
#
#   go_find                          GO: /usr/local/go/bin/go, else go on PATH
#   go_pin GOMOD MODULE              the version GOMOD requires of MODULE
#   go_cached CACHE TITLE BUILD TOOL...
#       prints CACHE/bin once it holds every TOOL: reused when built before,
#       else BUILD OUTDIR runs (its output in CACHE/build.log), each TOOL must
#       be an executable in OUTDIR, and OUTDIR becomes CACHE/bin
#   go_cmd DIR GOFLAGS GO-ARGUMENT...
#       "$GO" GO-ARGUMENTS in DIR with GOFLAGS and the cache's module and build
#       caches (GO_CACHE, set by go_cached), no cgo, no toolchain download, at
#       low priority

go_find() {
  GO=${GO:-/usr/local/go/bin/go}
  [[ -x $GO ]] || GO=$(command -v go) || die "no Go toolchain (expected /usr/local/go/bin/go or go on PATH)"
}

go_pin() {
  sed -n "s#^\(require \|\t\)$2 \(v[^ ]*\)\( // indirect\)\{0,1\}\$#\2#p" "$1"
}

go_cmd() {
  local dir=$1 flags=$2
  shift 2
  (cd "$dir" && env GOTOOLCHAIN=local GOFLAGS="$flags" CGO_ENABLED=0 GOMODCACHE="$GO_CACHE/go/mod" \
    GOCACHE="$GO_CACHE/go/cache" nice -n 10 "$GO" "$@")
}

go_cached() {
  local cache=$1 title=$2 build=$3 start t
  shift 3
  if ! cache_open "$cache"; then
    say "reusing $cache/bin ($title)"
    echo "$cache/bin"
    return 0
  fi
  go_find
  say "building $title into $cache/bin (log: $cache/build.log; cold, this can take a long while on 2 cores)"
  rm -rf "$cache/bin.new"
  : >"$cache/build.log"
  start=$(date +%s)
  if ! GO_CACHE=$cache "$build" "$cache/bin.new" >>"$cache/build.log" 2>&1; then
    tail -n 40 "$cache/build.log" >&2
    die "the build failed; the whole log is $cache/build.log"
  fi
  for t; do
    [[ -x $cache/bin.new/$t ]] || die "the build of $title made no $t"
  done
  rm -rf "${cache:?}/bin"
  mv "$cache/bin.new" "$cache/bin"
  cache_close "$cache" "$start"
  say "built in $(cat "$cache/build-seconds")s"
  echo "$cache/bin"
}
