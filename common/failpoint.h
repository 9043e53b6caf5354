/* Failpoints: named places where a test build can fail or die on purpose. */
#pragma once

/*
 * RAILGATE_FAILPOINT="<name>[@<n>][=fail|=kill]" makes the n-th (default
 * first) pass through failpoint(<name>) return -EFAULT (=fail, default) or
 * SIGKILL the process (=kill). Compiled in only with -DRAILGATE_FAILPOINTS=ON
 * (test builds); otherwise failpoint() is always 0.
 */
#ifdef RAILGATE_FAILPOINTS
int failpoint(const char *name);
#else
static inline int failpoint(const char *name) {
    (void)name;
    return 0;
}
#endif
/* The spec of the failpoint that fired last, for messages. */
const char *failpoint_name(void);
