/* SPDX-License-Identifier: Apache-2.0 */
/* Addresses: add, list (one dump of the link's per connection until something changes), prune. */
#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/route/addr.h>
#include <stdio.h>
#include <sys/socket.h>

#include "cidr.h"
#include "netlink-private.h"
#include "strv.h"

/* A link is a rail NIC plus a handful of extras; anything far above this is
 * not a pod-side rail and must not grow our memory without bound. */
#define ADDR_LIST_MAX 1024

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_addr *, nl_addr_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_addr *, rtnl_addr_put);

void addr_cache_drop(Netlink *nl) {
    nl_cache_free(nl->addrs);
    nl->addrs = NULL;
}

typedef struct AddrDump {
    struct nl_cache *cache;
    int err;
} AddrDump;

static void addr_parsed(struct nl_object *o, void *arg) {
    AddrDump *d = arg;
    int r = nl_cache_add(d->cache, o);

    if (r < 0 && d->err >= 0)
        d->err = netlink_errno(r);
}

static int on_addr(struct nl_msg *m, void *arg) {
    AddrDump *d = arg;
    int r = nl_msg_parse(m, addr_parsed, d);

    if (r < 0 && r != -NLE_MSGTYPE_NOSUPPORT && d->err >= 0)
        d->err = netlink_errno(r);
    return NL_OK;
}

static void addr_dump_reset(void *arg) {
    AddrDump *d = arg;

    nl_cache_clear(d->cache);
    d->err = 0;
}

/* Strict checking of this socket's GET requests (NETLINK_GET_STRICT_CHK,
 * 4.20): the kernel then honours the filter in a dump's header. A dump
 * takes it from the socket when it starts, so it is on for the send only. */
static int strict_check(Netlink *nl, int on) {
    return setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &on,
                      sizeof(on)) < 0
               ? -errno
               : 0;
}

/*
 * The addresses of ifindex into d->cache: a dump of that link's only
 * (RTM_GETADDR with ifa_index, strict checking), so that a read does not
 * grow with the links of the namespace (a pod's veth and its address on
 * the host each). A kernel without strict checking, or that refuses the
 * filter, gets the whole namespace's dump (*ret_ifindex 0: the cache holds
 * every link's). A link that is gone has none.
 */
static int addr_dump(Netlink *nl, int ifindex, AddrDump *d, int *ret_ifindex) {
    struct ifaddrmsg hdr = {.ifa_family = AF_UNSPEC, .ifa_index = (unsigned)ifindex};
    int r = strict_check(nl, 1);

    if (r >= 0) {
        r = netlink_dump(nl, RTM_GETADDR, &hdr, sizeof(hdr), on_addr, addr_dump_reset, d);
        (void)strict_check(nl, 0);
        if (r == -ENODEV) {
            addr_dump_reset(d);
            r = 0;
        }
        *ret_ifindex = ifindex;
    }
    if (r == -ENOPROTOOPT || r == -EINVAL || r == -EOPNOTSUPP) {
        addr_dump_reset(d);
        hdr.ifa_index = 0;
        r = netlink_dump(nl, RTM_GETADDR, &hdr, sizeof(hdr), on_addr, addr_dump_reset, d);
        *ret_ifindex = 0;
    }
    return r < 0 ? r : d->err;
}

/* The addresses of ifindex (or of every link: see addr_dump()) as of the
 * last change this process made. */
static int addr_cache(Netlink *nl, int ifindex, struct nl_cache **ret) {
    unsigned long g = netlink_generation();
    int r;

    if (!nl->addrs || nl->addrs_generation != g ||
        (nl->addrs_ifindex && nl->addrs_ifindex != ifindex)) {
        AddrDump d = {0};
        int got = 0;
        addr_cache_drop(nl);
        r = nl_cache_alloc_name("route/addr", &d.cache);
        if (r < 0)
            return netlink_errno(r);
        r = netlink_ready(nl);
        r = r ?: addr_dump(nl, ifindex, &d, &got);
        if (r < 0) {
            nl_cache_free(d.cache);
            return r;
        }
        nl->addrs = d.cache;
        nl->addrs_ifindex = got;
        nl->addrs_generation = g;
    }
    *ret = nl->addrs;
    return 0;
}

int addr_read_count(const Netlink *nl) {
    return nl->addrs ? nl_cache_nitems(nl->addrs) : 0;
}

int netlink_nl_addr(const Cidr *c, unsigned prefix, struct nl_addr **ret) {
    struct nl_addr *a = nl_addr_build(c->family, c->addr.bytes, c->family == AF_INET ? 4 : 16);

    if (!a)
        return -ENOMEM;
    nl_addr_set_prefixlen(a, (int)prefix);
    *ret = a;
    return 0;
}

int addr_add_msg(int ifindex, const char *cidr, struct nl_msg **ret) {
    _cleanup_(rtnl_addr_putp) struct rtnl_addr *a = rtnl_addr_alloc();
    _cleanup_(nl_addr_putp) struct nl_addr *local = NULL;
    Cidr c;
    int r;

    if (!a)
        return -ENOMEM;
    if (ifindex <= 0)
        return -ENODEV;
    /* strict (inet_pton): no libnl "default"/"any" shorthands */
    r = cidr ? cidr_parse(cidr, false, &c) : -EINVAL;
    if (r < 0)
        return r;
    r = netlink_nl_addr(&c, c.prefix, &local);
    if (r < 0)
        return r;
    rtnl_addr_set_ifindex(a, ifindex);
    r = rtnl_addr_set_local(a, local);
    /* EXCL: an address already there is the caller's to judge (-EEXIST);
     * the message rtnl_addr_add() would send */
    r = r ?: rtnl_addr_build_add_request(a, NLM_F_EXCL, ret);
    return netlink_errno(r);
}

int addr_add(Netlink *nl, int ifindex, const char *cidr) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = addr_add_msg(ifindex, cidr, &m);

    return r ?: netlink_request(nl, m);
}

int addr_add_batch(NetlinkBatch *b, int ifindex, const char *cidr, const char *what,
                   const void *tag) {
    struct nl_msg *m = NULL;
    int r = addr_add_msg(ifindex, cidr, &m);

    return r < 0 ? r : netlink_batch_add(b, m, what, tag);
}

/* "addr/prefix" of a global IPv4/IPv6 address of ifindex, or false. */
static bool addr_format(struct rtnl_addr *a, int ifindex, char *buf, size_t n) {
    struct nl_addr *local = rtnl_addr_get_local(a);
    char ip[INET6_ADDRSTRLEN];
    int family = rtnl_addr_get_family(a);

    if (rtnl_addr_get_ifindex(a) != ifindex || rtnl_addr_get_scope(a) != RT_SCOPE_UNIVERSE ||
        !local || (family != AF_INET && family != AF_INET6) ||
        nl_addr_get_len(local) != (family == AF_INET ? 4u : 16u) ||
        !inet_ntop(family, nl_addr_get_binary_addr(local), ip, sizeof(ip)))
        return false;
    snprintf(buf, n, "%s/%d", ip, rtnl_addr_get_prefixlen(a));
    return true;
}

int addr_list(Netlink *nl, int ifindex, char ***ret) {
    _cleanup_(strv_freep) char **l = NULL;
    struct nl_cache *cache;
    char buf[INET6_ADDRSTRLEN + 8];
    int r;

    if (!ret)
        return -EINVAL;
    if (ifindex <= 0)
        return -ENODEV;
    r = addr_cache(nl, ifindex, &cache);
    if (r < 0)
        return r;
    for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
        if (!addr_format((struct rtnl_addr *)o, ifindex, buf, sizeof(buf)))
            continue;
        if (strv_length(l) >= ADDR_LIST_MAX)
            return -E2BIG;
        r = strv_push(&l, buf);
        if (r < 0)
            return r;
    }
    /* an empty vector, not NULL, so that callers can always iterate */
    if (!l && !(l = calloc(1, sizeof(char *))))
        return -ENOMEM;
    *ret = TAKE_PTR(l);
    return 0;
}

int addr_prune(Netlink *nl, int ifindex, char *const *keep) {
    struct nl_cache *cache;
    struct rtnl_addr **del = NULL;
    char buf[INET6_ADDRSTRLEN + 8];
    size_t n = 0;
    int r;

    r = addr_cache(nl, ifindex, &cache);
    if (r < 0)
        return r;
    for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
        if (!addr_format((struct rtnl_addr *)o, ifindex, buf, sizeof(buf)) ||
            strv_contains(keep, buf) || n >= ADDR_LIST_MAX)
            continue;
        struct rtnl_addr **m = realloc(del, (n + 1) * sizeof(*m));
        if (!m) {
            r = -ENOMEM;
            break;
        }
        del = m;
        nl_object_get(o);
        del[n++] = (struct rtnl_addr *)o;
    }
    /* the cache goes with the first delete: keep our references */
    for (size_t i = 0; i < n; i++) {
        int k = netlink_ready(nl);
        k = k ?: netlink_call(nl, rtnl_addr_delete(nl->sk, del[i], 0));
        if (k < 0 && k != -EADDRNOTAVAIL && r >= 0)
            r = k;
        rtnl_addr_put(del[i]);
    }
    free(del);
    return r;
}
