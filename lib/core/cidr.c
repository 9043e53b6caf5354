/* SPDX-License-Identifier: Apache-2.0 */
/* CIDR text handling with inet_pton/inet_ntop. */
#include "cidr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cidr_parse(const char *s, bool allow_bare, Cidr *ret) {
    char buf[64];
    const char *slash = strchr(s, '/');
    Cidr c = {0};
    size_t n = slash ? (size_t)(slash - s) : strlen(s);

    if (n == 0 || n >= sizeof(buf) || (!slash && !allow_bare))
        return -EINVAL;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (inet_pton(AF_INET, buf, &c.addr.v4) == 1)
        c.family = AF_INET;
    else if (inet_pton(AF_INET6, buf, &c.addr.v6) == 1)
        c.family = AF_INET6;
    else
        return -EINVAL;
    unsigned max = c.family == AF_INET ? 32 : 128;
    c.prefix = max;
    if (slash) {
        char *end;
        errno = 0;
        unsigned long p = strtoul(slash + 1, &end, 10);
        if (errno || *end || end == slash + 1 || p > max)
            return -EINVAL;
        c.prefix = (unsigned)p;
    }
    *ret = c;
    return 0;
}

int cidr_format_addr(const Cidr *c, char *buf, size_t n) {
    return inet_ntop(c->family, &c->addr, buf, (socklen_t)n) ? 0 : -ENOSPC;
}

static int format_with(const Cidr *c, unsigned prefix, char *buf, size_t n) {
    char a[INET6_ADDRSTRLEN];
    int r = cidr_format_addr(c, a, sizeof(a));

    if (r < 0)
        return r;
    if ((size_t)snprintf(buf, n, "%s/%u", a, prefix) >= n)
        return -ENOSPC;
    return 0;
}

int cidr_format_network(const Cidr *c, char *buf, size_t n) {
    Cidr m = *c;
    unsigned len = c->family == AF_INET ? 4 : 16;

    for (unsigned i = 0; i < len; i++) {
        unsigned bits = c->prefix > i * 8 ? c->prefix - i * 8 : 0;
        unsigned char mask = bits >= 8 ? 0xff : (unsigned char)(0xff << (8 - bits));
        m.addr.bytes[i] &= mask;
    }
    return format_with(&m, c->prefix, buf, n);
}

int cidr_format_host(const Cidr *c, char *buf, size_t n) {
    return format_with(c, c->family == AF_INET ? 32 : 128, buf, n);
}
