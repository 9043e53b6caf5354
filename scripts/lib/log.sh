# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Logging and exits for every script. Sourced, not run. The sourcing script
# sets PROG (how it names itself); SAY_FD=2 where its stdout is its answer (a
# path, an archive), DIE_STATUS where 1 means something else to its callers.
#
#   say MESSAGE...    "PROG: MESSAGE" on fd SAY_FD (default 1)
#   die MESSAGE...    "PROG: error: MESSAGE" on stderr, exit DIE_STATUS (default 1)
#   skip MESSAGE...   "PROG: skipped: MESSAGE" on stderr, exit 77 (ctest's SKIP_RETURN_CODE)
#   need_root WHY     skip unless root
#   need_cmds CMD...  die naming the first CMD not on PATH

say() { printf '%s: %s\n' "${PROG:-${0##*/}}" "$*" >&"${SAY_FD:-1}"; }
die() {
  printf '%s: error: %s\n' "${PROG:-${0##*/}}" "$*" >&2
  exit "${DIE_STATUS:-1}"
}
skip() {
  printf '%s: skipped: %s\n' "${PROG:-${0##*/}}" "$*" >&2
  exit 77
}
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root ($*)"; }
need_cmds() {
  local c
  for c; do
    command -v "$c" >/dev/null 2>&1 || die "$c is missing (bash scripts/deps.sh installs what railgate needs)"
  done
}
