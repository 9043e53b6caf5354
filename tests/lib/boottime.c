/* SPDX-License-Identifier: Apache-2.0 */
/* Files dated before this boot began (boottime.h). */
#include "boottime.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

time_t boot_began_s(void) {
    struct timespec now, up;

    clock_gettime(CLOCK_REALTIME, &now);
    clock_gettime(CLOCK_BOOTTIME, &up);
    return now.tv_sec - up.tv_sec;
}

int backdate(const char *path, time_t seconds, int flags) {
    time_t t = boot_began_s() - seconds;
    struct timespec ts[2] = {{.tv_sec = t}, {.tv_sec = t}};

    return utimensat(AT_FDCWD, path, ts, flags) < 0 ? -errno : 0;
}
