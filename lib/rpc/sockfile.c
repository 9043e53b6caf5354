/* SPDX-License-Identifier: Apache-2.0 */
/* Unix socket files named afresh at each start, and the sweep of those nobody serves. */
#include "sockfile.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "macro.h"

int sockfile_name(const char *prefix, const char *suffix, char *buf, size_t n) {
    uint32_t rnd;

    if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
        return -errno ?: -EIO;
    if ((size_t)snprintf(buf, n, "%s%08x%s", prefix, rnd, suffix) >= n)
        return -ENAMETOOLONG;
    return 0;
}

bool sockfile_answers(const char *path) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd, r;

    if (strlen(path) >= sizeof(sa.sun_path))
        return true; /* cannot tell: leave it */
    memcpy(sa.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return true;
    r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    r = r < 0 && (errno == ECONNREFUSED || errno == ENOENT) ? 0 : 1;
    close(fd);
    return r;
}

static bool ours(const char *name, const char *prefix, const char *suffix, const char *legacy) {
    size_t len = strlen(name), np = strlen(prefix), ns = strlen(suffix);

    if (legacy && streq(name, legacy))
        return true;
    if (len != np + 8 + ns || strncmp(name, prefix, np) != 0 || !streq(name + np + 8, suffix))
        return false;
    for (size_t i = np; i < np + 8; i++)
        if (!strchr("0123456789abcdef", name[i]))
            return false;
    return true;
}

int sockfile_sweep(const char *dir, const char *prefix, const char *suffix, const char *legacy,
                   void (*removed)(const char *path, void *userdata), void *userdata) {
    DIR *d = opendir(dir);
    char path[PATH_MAX];
    struct dirent *de;
    int n = 0;

    if (!d)
        return errno == ENOENT ? 0 : -errno;
    while ((de = readdir(d))) {
        if (de->d_type != DT_SOCK || !ours(de->d_name, prefix, suffix, legacy) ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path) ||
            sockfile_answers(path))
            continue;
        if (unlink(path) == 0) {
            n++;
            if (removed)
                removed(path, userdata);
        }
    }
    closedir(d);
    return n;
}
