/* SPDX-License-Identifier: Apache-2.0 */
/* Failpoints: named places where a test build can fail, die or stop on purpose. */
#pragma once

#include <stdbool.h>

/*
 * RAILGATE_FAILPOINT="<spec>[,<spec>...]", each spec
 * "<name>[@<n>|@*][=fail|=kill|=pause]", makes the n-th (default first)
 * pass through failpoint(<name>), or every pass (@*: a state held for as
 * long as the run lasts), return -EFAULT (=fail, default), SIGKILL the
 * process (=kill), or stop it with SIGSTOP and return 0 once continued
 * (=pause: a test holds a race open there, acts, then sends SIGCONT).
 * Compiled in only with -DRAILGATE_FAILPOINTS=ON (test builds); otherwise
 * failpoint() is always 0.
 */
#ifdef RAILGATE_FAILPOINTS
int failpoint(const char *name);
/* A switch rather than a place: does the spec name name (any action)? Counts
 * no pass and fires nothing. */
bool failpoint_enabled(const char *name);
#else
static inline int failpoint(const char *name) {
    (void)name;
    return 0;
}
static inline bool failpoint_enabled(const char *name) {
    (void)name;
    return false;
}
#endif
/* The spec of the failpoint that fired last, for messages. */
const char *failpoint_name(void);
