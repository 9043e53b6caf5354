# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The build caches outside the repo (the Go tools of go.sh, the base rootfs of
# rootfs.sh, the VM rung's kernels and QEMU): one directory per key, built
# once under a lock, marked done, its cold build time kept. Sourced, not run.
#
#   if cache_open DIR; then ...build into DIR..., cache_close DIR START; fi
#
# cache_open: 1 when DIR is built already (done), else makes DIR, takes its
# lock on fd 9 (a second build of the same key waits for the first) and
# returns 0, or 1 when the first one finished it meanwhile. cache_close
# records the seconds since START (date +%s) in DIR/build-seconds, marks
# DIR done and lets the lock go. The lock lives only as long as the build:
# fd 9 is closed again, so neither the rest of the caller nor a child it
# starts (tests/vm/run.sh's QEMU) holds it and keeps a second run waiting.

cache_open() {
  [ -f "$1/done" ] && return 1
  mkdir -p "$1"
  exec 9>"$1/lock"
  flock 9
  if [ -f "$1/done" ]; then
    exec 9>&-
    return 1
  fi
}

cache_close() {
  echo $(($(date +%s) - $2)) >"$1/build-seconds"
  touch "$1/done"
  exec 9>&-
}
