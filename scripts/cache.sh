#!/usr/bin/env bash
# The build caches outside the repo (Kubernetes, helm, the image's base
# layer): one directory per key, built once under a lock, marked done, its
# cold build time kept. Sourced by tests/k8s/build.sh, scripts/helm.sh and
# deploy/image.sh.
#
#   if cache_open DIR; then ...build into DIR..., cache_close DIR START; fi
#
# cache_open: 1 when DIR is built already (done), else makes DIR, takes its
# lock on fd 9 (a second build of the same key waits for the first) and
# returns 0, or 1 when the first one finished it meanwhile. cache_close
# records the seconds since START (date +%s) in DIR/build-seconds and marks
# DIR done.

cache_open() {
  [ -f "$1/done" ] && return 1
  mkdir -p "$1"
  exec 9>"$1/lock"
  flock 9
  [ ! -f "$1/done" ]
}

cache_close() {
  echo $(($(date +%s) - $2)) >"$1/build-seconds"
  touch "$1/done"
}
