/* SPDX-License-Identifier: Apache-2.0 */
/* Where a server listens ("unix:/path", "ip:port", "[ip6]:port"), and its socket bound there. */
#pragma once

#include <stdbool.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "macro.h"

#define LISTEN_UNIX_PREFIX "unix:"

typedef struct ListenAddress {
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
        struct sockaddr_un un;
    } u;
    socklen_t len;
} ListenAddress;

/*
 * "unix:" and an absolute path that fits a unix socket address; or an IPv4
 * address and a port ("127.0.0.1:9402", "0.0.0.0:9402"), or an IPv6 address
 * in brackets and a port ("[::1]:9402", "[::]:9402"). Ports 1 to 65535; no
 * host names (nothing to resolve at start). -EINVAL otherwise.
 */
int listen_address_parse(const char *s, ListenAddress *ret);
bool listen_address_valid(const char *s);

typedef struct ListenOptions {
    mode_t mode; /* unix socket: its file's mode */
    gid_t gid;   /* unix socket: its file's group, (gid_t)-1 to leave it */
    int backlog;
} ListenOptions;

/*
 * A listening stream socket (SOCK_CLOEXEC) at a. TCP: SO_REUSEADDR, and
 * "[::]" takes IPv4 too. Unix: its directory made (0755) if missing, a stale
 * socket there (nobody answers) replaced, the file given o->mode and o->gid
 * before anyone can connect; -EADDRINUSE when a server answers there,
 * -EEXIST when something other than a socket is there.
 */
int listen_address_bind(const ListenAddress *a, const ListenOptions *o, int *ret_fd);
/* The unix socket's path, or NULL for TCP. */
const char *listen_address_path(const ListenAddress *a);
