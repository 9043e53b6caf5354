/* SPDX-License-Identifier: Apache-2.0 */
/* Failpoints for crash, rollback and race tests, driven by RAILGATE_FAILPOINT. */
#include "failpoint.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char fired[128];

const char *failpoint_name(void) {
    return fired;
}

#ifdef RAILGATE_FAILPOINTS
#define FAILPOINT_SPECS 8

int failpoint(const char *name) {
    static unsigned hits[FAILPOINT_SPECS]; /* passes per spec of the list */
    const char *spec = getenv("RAILGATE_FAILPOINT");

    for (unsigned i = 0; spec && *spec && i < FAILPOINT_SPECS; i++) {
        char one[128] = "", want[64] = "", action[16] = "fail";
        size_t len = strcspn(spec, ",");
        unsigned n = 1; /* 0: every pass */

        snprintf(one, sizeof(one), "%.*s", (int)len, spec);
        spec += len + (spec[len] == ',');
        if (sscanf(one, "%63[^@=]", want) != 1 || strcmp(want, name) != 0)
            continue;
        const char *at = strchr(one, '@'), *eq = strchr(one, '=');
        if (at)
            n = at[1] == '*' ? 0 : (unsigned)strtoul(at + 1, NULL, 10);
        if (eq)
            snprintf(action, sizeof(action), "%s", eq + 1);
        if (++hits[i] != n && n != 0)
            continue;
        snprintf(fired, sizeof(fired), "%s", one);
        if (strcmp(action, "kill") == 0)
            raise(SIGKILL);
        if (strcmp(action, "pause") == 0) {
            raise(SIGSTOP); /* returns once a SIGCONT came */
            return 0;
        }
        return -EFAULT;
    }
    return 0;
}

bool failpoint_enabled(const char *name) {
    const char *spec = getenv("RAILGATE_FAILPOINT");
    size_t n = strlen(name);

    while (spec && *spec) {
        size_t len = strcspn(spec, ",");
        if (len >= n && strncmp(spec, name, n) == 0 && strchr("@=,", spec[n]))
            return true;
        spec += len + (spec[len] == ',');
    }
    return false;
}
#endif
