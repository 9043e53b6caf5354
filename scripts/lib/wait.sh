# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Waits, with the one scale factor every test wait is multiplied by:
# RAILGATE_TEST_WAIT_SCALE (1 to 1000, default 1; tests/lib/waitscale.h reads
# the same variable for the C tests). Sourced after log.sh, not run.
#
#   wait_scale                           the factor
#   scaled SECONDS                       SECONDS times the factor (whole seconds)
#   wait_for SECONDS DESCRIPTION CMD...  run CMD every 0.25 s until it succeeds,
#                                        at most scaled SECONDS; says what it
#                                        waited for when it gives up (status 1)

wait_scale() {
  awk -v f="${RAILGATE_TEST_WAIT_SCALE:-1}" 'BEGIN { if (!(f >= 1 && f <= 1000)) f = 1; print f }'
}
scaled() { awk -v s="$1" -v f="$(wait_scale)" 'BEGIN { printf "%d", s * f }'; }
wait_for() {
  local secs what=$2 i
  secs=$(scaled "$1")
  shift 2
  for ((i = 0; i < secs * 4; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  say "timed out after ${secs}s waiting for $what"
  return 1
}
