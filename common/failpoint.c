/* Failpoints for crash and rollback tests, driven by RAILGATE_FAILPOINT. */
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
int failpoint(const char *name) {
    static unsigned hits;
    const char *spec = getenv("RAILGATE_FAILPOINT");
    char want[64] = "", action[16] = "fail";
    unsigned n = 1;

    if (!spec || sscanf(spec, "%63[^@=]", want) != 1 || strcmp(want, name) != 0)
        return 0;
    const char *at = strchr(spec, '@'), *eq = strchr(spec, '=');
    if (at)
        n = (unsigned)strtoul(at + 1, NULL, 10);
    if (eq)
        snprintf(action, sizeof(action), "%s", eq + 1);
    if (++hits != n)
        return 0;
    snprintf(fired, sizeof(fired), "%s", spec);
    if (strcmp(action, "kill") == 0)
        raise(SIGKILL);
    return -EFAULT;
}
#endif
