/* SPDX-License-Identifier: Apache-2.0 */
/* Listen addresses: parsed from what an operator wrote, then bound. */
#include "listen.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "fileio.h"

static int parse_port(const char *s, in_port_t *ret) {
    unsigned long v = 0;

    if (!*s || strlen(s) > 5)
        return -EINVAL;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v < 1 || v > 65535 || (s[0] == '0'))
        return -EINVAL;
    *ret = htons((in_port_t)v);
    return 0;
}

static int parse_unix(const char *path, ListenAddress *a) {
    size_t n = strlen(path);

    if (path[0] != '/' || n >= sizeof(a->u.un.sun_path) || path[n - 1] == '/')
        return -EINVAL;
    a->u.un.sun_family = AF_UNIX;
    memcpy(a->u.un.sun_path, path, n + 1);
    a->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    return 0;
}

static int parse_inet(const char *s, ListenAddress *a) {
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon = strrchr(s, ':');
    size_t n = colon ? (size_t)(colon - s) : 0;
    int r;

    if (!colon || n == 0 || n >= sizeof(host))
        return -EINVAL;
    memcpy(host, s, n);
    host[n] = 0;
    if (host[0] == '[') {
        if (n < 3 || host[n - 1] != ']')
            return -EINVAL;
        host[n - 1] = 0;
        a->u.in6.sin6_family = AF_INET6;
        a->len = sizeof(a->u.in6);
        r = parse_port(colon + 1, &a->u.in6.sin6_port);
        return r < 0 ? r : inet_pton(AF_INET6, host + 1, &a->u.in6.sin6_addr) == 1 ? 0 : -EINVAL;
    }
    a->u.in4.sin_family = AF_INET;
    a->len = sizeof(a->u.in4);
    r = parse_port(colon + 1, &a->u.in4.sin_port);
    return r < 0 ? r : inet_pton(AF_INET, host, &a->u.in4.sin_addr) == 1 ? 0 : -EINVAL;
}

int listen_address_parse(const char *s, ListenAddress *ret) {
    ListenAddress a = {0};
    int r;

    if (!s)
        return -EINVAL;
    if (strncmp(s, LISTEN_UNIX_PREFIX, strlen(LISTEN_UNIX_PREFIX)) == 0)
        r = parse_unix(s + strlen(LISTEN_UNIX_PREFIX), &a);
    else
        r = parse_inet(s, &a);
    if (r < 0)
        return r;
    *ret = a;
    return 0;
}

bool listen_address_valid(const char *s) {
    ListenAddress a;

    return listen_address_parse(s, &a) == 0;
}

const char *listen_address_path(const ListenAddress *a) {
    return a->u.sa.sa_family == AF_UNIX ? a->u.un.sun_path : NULL;
}

/* What is at a unix socket's path: 0 nothing (or a stale socket, removed). */
static int unix_path_clear(const ListenAddress *a) {
    const char *path = a->u.un.sun_path;
    _cleanup_close_ int fd = -EBADF;
    struct stat st;

    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISSOCK(st.st_mode))
        return -EEXIST;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, &a->u.sa, a->len) == 0 || errno == EAGAIN)
        return -EADDRINUSE;
    if (errno != ECONNREFUSED)
        return -errno;
    return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

static int unix_prepare(const ListenAddress *a) {
    char dir[sizeof(a->u.un.sun_path)];
    char *slash;

    snprintf(dir, sizeof(dir), "%s", a->u.un.sun_path);
    slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        int r = fileio_mkdir_p(dir, 0755);
        if (r < 0)
            return r;
    }
    return unix_path_clear(a);
}

/* A connect() before listen() is refused, so the mode and group are in
 * place before anybody gets in. */
static int unix_restrict(const ListenAddress *a, const ListenOptions *o) {
    const char *path = a->u.un.sun_path;

    if (chmod(path, o->mode) < 0)
        return -errno;
    if (o->gid != (gid_t)-1 && lchown(path, (uid_t)-1, o->gid) < 0)
        return -errno;
    return 0;
}

static int inet_options(int fd, const ListenAddress *a) {
    int one = 1, zero = 0;

    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
        return -errno;
    if (a->u.sa.sa_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&a->u.in6.sin6_addr) &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)
        return -errno;
    return 0;
}

int listen_address_bind(const ListenAddress *a, const ListenOptions *o, int *ret_fd) {
    bool is_unix = a->u.sa.sa_family == AF_UNIX;
    _cleanup_close_ int fd = -EBADF;
    int r;

    r = is_unix ? unix_prepare(a) : 0;
    if (r < 0)
        return r;
    fd = socket(a->u.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    r = is_unix ? 0 : inet_options(fd, a);
    if (r < 0)
        return r;
    if (bind(fd, &a->u.sa, a->len) < 0)
        return -errno;
    r = is_unix ? unix_restrict(a, o) : 0;
    if (r >= 0 && listen(fd, o->backlog) < 0)
        r = -errno;
    if (r < 0) {
        if (is_unix)
            (void)unlink(a->u.un.sun_path);
        return r;
    }
    *ret_fd = TAKE_FD(fd);
    return 0;
}
