/* SPDX-License-Identifier: Apache-2.0 */
/* Routes, source rules and VRF devices; the node's own NICs. */
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/vrf.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <stdio.h>

#include "cidr.h"
#include "netlink-private.h"

/* Table of the throwaway probe VRF: it only has to be non-zero (the kernel
 * refuses table 0) and unlikely to be one a tenant uses. */
#define VRF_PROBE_TABLE 0x7ffffff0u

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_cache *, nl_cache_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_addr *, nl_addr_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_link *, rtnl_link_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_route *, rtnl_route_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_rule *, rtnl_rule_put);

static size_t family_len(int family) {
    return family == AF_INET ? 4 : 16;
}

/* s parsed strictly (inet_pton, no libnl "default"/"any" shorthands). */
static int cidr_get(const char *s, bool allow_bare, Cidr *ret) {
    if (!s)
        return -EINVAL;
    return cidr_parse(s, allow_bare, ret);
}

static bool prefix_equal(const uint8_t *a, size_t alen, const uint8_t *b, unsigned prefix) {
    size_t whole = prefix / 8;
    unsigned rest = prefix % 8;

    if (alen * 8 < prefix || memcmp(a, b, whole) != 0)
        return false;
    return rest == 0 || ((a[whole] ^ b[whole]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Does a kernel prefix (NULL: "all") equal want/prefix? The kernel leaves
 * RTA_DST out of a default route, so libnl's address is then empty. */
static bool prefix_matches(struct nl_addr *got, const Cidr *want) {
    if (!got)
        return want->prefix == 0;
    if (nl_addr_get_family(got) != want->family ||
        (unsigned)nl_addr_get_prefixlen(got) != want->prefix)
        return false;
    return prefix_equal(nl_addr_get_binary_addr(got), nl_addr_get_len(got), want->addr.bytes,
                        want->prefix);
}

static bool addr_equal(struct nl_addr *got, const Cidr *want) {
    return got && nl_addr_get_family(got) == want->family &&
           nl_addr_get_len(got) == family_len(want->family) &&
           memcmp(nl_addr_get_binary_addr(got), want->addr.bytes, family_len(want->family)) == 0;
}

/* A RouteSpec, validated and parsed once for building and for comparing. */
typedef struct RouteWant {
    Cidr dst, gw, src;
    bool has_gw, has_src;
    uint32_t table;
    uint8_t scope;
} RouteWant;

static int route_want(const RouteSpec *r, RouteWant *ret) {
    RouteWant w = {.table = r && r->table ? r->table : RT_TABLE_MAIN};
    int k;

    if (!r || (r->scope != RT_SCOPE_UNIVERSE && r->scope != RT_SCOPE_LINK))
        return -EINVAL;
    w.scope = r->scope;
    w.has_gw = r->gw != NULL;
    w.has_src = r->src != NULL;
    k = cidr_get(r->dst, false, &w.dst);
    /* a gateway is one address, so a prefix on it is a caller's mistake */
    k = k ?: (w.has_gw && strchr(r->gw, '/') ? -EINVAL : 0);
    k = k ?: (w.has_gw ? cidr_get(r->gw, true, &w.gw) : 0);
    k = k ?: (w.has_src ? cidr_get(r->src, true, &w.src) : 0);
    if (k < 0)
        return k;
    if ((w.has_gw && w.gw.family != w.dst.family) || (w.has_src && w.src.family != w.dst.family))
        return -EINVAL;
    *ret = w;
    return 0;
}

static int route_build(const RouteWant *w, int ifindex, struct rtnl_route **ret) {
    _cleanup_(rtnl_route_putp) struct rtnl_route *rt = rtnl_route_alloc();
    _cleanup_(nl_addr_putp) struct nl_addr *dst = NULL, *gw = NULL, *src = NULL;
    struct rtnl_nexthop *nh;
    int r;

    if (!rt)
        return -ENOMEM;
    r = netlink_nl_addr(&w->dst, w->dst.prefix, &dst);
    r = r ?: netlink_errno(rtnl_route_set_dst(rt, dst));
    if (r < 0)
        return r;
    /* tables above 255 go out as RTA_TABLE; scope is always explicit, so
     * libnl's guess (link for every on-link route) never overrides ours */
    rtnl_route_set_table(rt, w->table);
    rtnl_route_set_scope(rt, w->scope);
    rtnl_route_set_type(rt, RTN_UNICAST);
    nh = rtnl_route_nh_alloc();
    if (!nh)
        return -ENOMEM;
    rtnl_route_nh_set_ifindex(nh, ifindex);
    rtnl_route_add_nexthop(rt, nh); /* rt owns nh from here */
    if (w->has_gw) {
        r = netlink_nl_addr(&w->gw, NETLINK_HOST_PREFIX(&w->gw), &gw);
        if (r < 0)
            return r;
        rtnl_route_nh_set_gateway(nh, gw);
    }
    if (w->has_src) {
        r = netlink_nl_addr(&w->src, NETLINK_HOST_PREFIX(&w->src), &src);
        r = r ?: netlink_errno(rtnl_route_set_pref_src(rt, src));
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(rt);
    return 0;
}

int route_add_msg(int ifindex, const RouteSpec *spec, struct nl_msg **ret) {
    _cleanup_(rtnl_route_putp) struct rtnl_route *rt = NULL;
    RouteWant w;
    int r;

    if (ifindex <= 0)
        return -ENODEV;
    r = route_want(spec, &w);
    r = r ?: route_build(&w, ifindex, &rt);
    if (r < 0)
        return r;
    /* the message rtnl_route_add() would send */
    return netlink_errno(rtnl_route_build_add_request(rt, NLM_F_EXCL, ret));
}

int route_add(Netlink *nl, int ifindex, const RouteSpec *spec) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = route_add_msg(ifindex, spec, &m);

    return r ?: netlink_request(nl, m);
}

int route_add_batch(NetlinkBatch *b, int ifindex, const RouteSpec *spec, const char *what,
                    const void *tag) {
    struct nl_msg *m = NULL;
    int r = route_add_msg(ifindex, spec, &m);

    return r < 0 ? r : netlink_batch_add(b, m, what, tag);
}

static bool route_matches(struct rtnl_route *rt, const RouteWant *w, int ifindex) {
    if (rtnl_route_get_table(rt) != w->table || !prefix_matches(rtnl_route_get_dst(rt), &w->dst))
        return false;
    for (int i = 0; i < rtnl_route_get_nnexthops(rt); i++) {
        struct rtnl_nexthop *nh = rtnl_route_nexthop_n(rt, i);

        if (!nh || rtnl_route_nh_get_ifindex(nh) != ifindex)
            continue;
        if (!w->has_gw || addr_equal(rtnl_route_nh_get_gateway(nh), &w->gw))
            return true;
    }
    return false;
}

static int route_find(struct nl_cache *cache, const RouteWant *w, int ifindex) {
    for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o))
        if (route_matches((struct rtnl_route *)o, w, ifindex))
            return 0;
    return -ENOENT;
}

int route_exists(Netlink *nl, int ifindex, const RouteSpec *spec) {
    _cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;
    RouteWant w;
    int r;

    if (ifindex <= 0)
        return -ENODEV;
    r = route_want(spec, &w);
    r = r ?: netlink_ready(nl);
    r = r ?: netlink_read(nl, rtnl_route_alloc_cache(nl->sk, w.dst.family, 0, &cache));
    if (r < 0)
        return r;
    return route_find(cache, &w, ifindex);
}

static int rule_build(const Cidr *src, uint32_t table, uint32_t prio, struct rtnl_rule **ret) {
    _cleanup_(rtnl_rule_putp) struct rtnl_rule *rule = rtnl_rule_alloc();
    _cleanup_(nl_addr_putp) struct nl_addr *a = NULL;
    int r;

    if (!rule)
        return -ENOMEM;
    rtnl_rule_set_family(rule, src->family);
    rtnl_rule_set_table(rule, table);
    rtnl_rule_set_prio(rule, prio);
    rtnl_rule_set_action(rule, FR_ACT_TO_TBL);
    /* "from all" carries no FRA_SRC */
    if (src->prefix > 0) {
        r = netlink_nl_addr(src, src->prefix, &a);
        r = r ?: netlink_errno(rtnl_rule_set_src(rule, a));
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(rule);
    return 0;
}

/* The rule as railgate writes it, and nothing more selective. */
static bool rule_matches(struct rtnl_rule *rule, const Cidr *src, uint32_t table, uint32_t prio) {
    return rtnl_rule_get_family(rule) == src->family && rtnl_rule_get_table(rule) == table &&
           rtnl_rule_get_prio(rule) == prio && rtnl_rule_get_action(rule) == FR_ACT_TO_TBL &&
           !rtnl_rule_get_dst(rule) && !rtnl_rule_get_iif(rule) && !rtnl_rule_get_oif(rule) &&
           prefix_matches(rtnl_rule_get_src(rule), src);
}

static int rule_find(struct nl_cache *cache, const Cidr *src, uint32_t table, uint32_t prio) {
    for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o))
        if (rule_matches((struct rtnl_rule *)o, src, table, prio))
            return 0;
    return -ENOENT;
}

static int rule_parse(const char *src_cidr, uint32_t table, Cidr *ret) {
    /* table 0 (RT_TABLE_UNSPEC) is no table a rule can point at */
    if (table == RT_TABLE_UNSPEC)
        return -EINVAL;
    return cidr_get(src_cidr, false, ret);
}

/* Adds (NLM_F_EXCL: without it the kernel happily stacks identical rules)
 * or deletes the rule railgate writes: the message rtnl_rule_add() or
 * rtnl_rule_delete() would send. */
int rule_msg(const char *src_cidr, uint32_t table, uint32_t prio, bool add, struct nl_msg **ret) {
    _cleanup_(rtnl_rule_putp) struct rtnl_rule *rule = NULL;
    Cidr src;
    int r;

    r = rule_parse(src_cidr, table, &src);
    r = r ?: rule_build(&src, table, prio, &rule);
    if (r < 0)
        return r;
    return netlink_errno(add ? rtnl_rule_build_add_request(rule, NLM_F_EXCL, ret)
                             : rtnl_rule_build_delete_request(rule, 0, ret));
}

static int rule_change(Netlink *nl, const char *src_cidr, uint32_t table, uint32_t prio, bool add) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = rule_msg(src_cidr, table, prio, add, &m);

    return r ?: netlink_request(nl, m);
}

int rule_add(Netlink *nl, const char *src_cidr, uint32_t table, uint32_t prio) {
    return rule_change(nl, src_cidr, table, prio, true);
}

int rule_add_batch(NetlinkBatch *b, const char *src_cidr, uint32_t table, uint32_t prio,
                   const char *what, const void *tag) {
    struct nl_msg *m = NULL;
    int r = rule_msg(src_cidr, table, prio, true, &m);

    return r < 0 ? r : netlink_batch_add(b, m, what, tag);
}

int rule_exists(Netlink *nl, const char *src_cidr, uint32_t table, uint32_t prio) {
    _cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;
    Cidr src;
    int r;

    r = rule_parse(src_cidr, table, &src);
    r = r ?: netlink_ready(nl);
    r = r ?: netlink_read(nl, rtnl_rule_alloc_cache(nl->sk, src.family, &cache));
    if (r < 0)
        return r;
    return rule_find(cache, &src, table, prio);
}

int rule_del(Netlink *nl, const char *src_cidr, uint32_t table, uint32_t prio) {
    return rule_change(nl, src_cidr, table, prio, false);
}

static int vrf_create(Netlink *nl, const char *name, uint32_t table, bool up) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *link = rtnl_link_vrf_alloc();
    int r;

    if (!link)
        return -ENOMEM;
    rtnl_link_set_name(link, name);
    r = rtnl_link_vrf_set_tableid(link, table);
    if (r < 0)
        return netlink_errno(r);
    if (up)
        rtnl_link_set_flags(link, IFF_UP);
    /* a kernel without the vrf driver answers "Unknown device type" with
     * EOPNOTSUPP, which is exactly what we report */
    r = netlink_ready(nl);
    return r ?: netlink_call(nl, rtnl_link_add(nl->sk, link, NLM_F_CREATE | NLM_F_EXCL));
}

static int delete_by_name(Netlink *nl, const char *name) {
    Link l;
    int r = link_get_by_name(nl, name, &l);

    return r < 0 ? r : link_delete(nl, l.ifindex);
}

int vrf_supported(Netlink *nl) {
    char name[IF_NAMESIZE];
    int r;

    /* per thread, so concurrent probes never collide */
    snprintf(name, sizeof(name), "rgvrfp%d", (int)gettid());
    r = vrf_create(nl, name, VRF_PROBE_TABLE, false);
    if (r == -EEXIST) {
        /* left behind by a probe that died on a thread id now reused */
        (void)delete_by_name(nl, name);
        r = vrf_create(nl, name, VRF_PROBE_TABLE, false);
    }
    if (r < 0)
        return r;
    return delete_by_name(nl, name);
}

int vrf_add(Netlink *nl, const char *name, uint32_t table, int *ret_ifindex) {
    Link l;
    int r;

    if (!netlink_ifname_valid(name) || table == RT_TABLE_UNSPEC)
        return -EINVAL;
    r = vrf_create(nl, name, table, true);
    if (r < 0 || !ret_ifindex)
        return r;
    r = link_get_by_name(nl, name, &l);
    if (r < 0)
        return r;
    *ret_ifindex = l.ifindex;
    return 0;
}

/* Node NICs: what the node itself talks through. */

typedef struct NodeNicList {
    struct nl_cache *links;
    NodeNic *v;
    size_t n;
    int error;
} NodeNicList;

static void node_nic_add(NodeNicList *l, int ifindex, unsigned use) {
    char name[IF_NAMESIZE];

    if (l->error || ifindex <= 0 || !rtnl_link_i2name(l->links, ifindex, name, sizeof(name)))
        return;
    for (size_t i = 0; i < l->n; i++)
        if (streq(l->v[i].name, name)) {
            l->v[i].uses |= use;
            return;
        }
    NodeNic *m = realloc(l->v, (l->n + 1) * sizeof(*m));
    if (!m) {
        l->error = -ENOMEM;
        return;
    }
    l->v = m;
    memset(&m[l->n], 0, sizeof(*m));
    snprintf(m[l->n].name, sizeof(m[l->n].name), "%s", name);
    m[l->n++].uses = use;
}

static void on_route(struct nl_object *obj, void *arg) {
    struct rtnl_route *rt = (struct rtnl_route *)obj;
    struct nl_addr *dst = rtnl_route_get_dst(rt);

    if (rtnl_route_get_table(rt) != RT_TABLE_MAIN || rtnl_route_get_type(rt) != RTN_UNICAST ||
        (dst && nl_addr_get_prefixlen(dst) != 0))
        return;
    for (int i = 0; i < rtnl_route_get_nnexthops(rt); i++)
        node_nic_add(arg, rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(rt, i)),
                     NODE_NIC_DEFAULT_ROUTE);
}

static void on_addr(struct nl_object *obj, void *arg) {
    struct rtnl_addr *a = (struct rtnl_addr *)obj;

    if (rtnl_addr_get_scope(a) == RT_SCOPE_UNIVERSE)
        node_nic_add(arg, rtnl_addr_get_ifindex(a), NODE_NIC_ADDRESS);
}

int node_nics_list(NodeNic **ret, size_t *ret_n) {
    _cleanup_(netlink_closep) Netlink *nl = NULL;
    _cleanup_(nl_cache_freep) struct nl_cache *links = NULL, *routes = NULL, *addrs = NULL;
    NodeNicList l = {0};
    int r;

    if (!ret || !ret_n)
        return -EINVAL;
    r = netlink_open(-1, &nl);
    if (r < 0)
        return r;
    r = netlink_ready(nl);
    r = r ?: netlink_read(nl, rtnl_link_alloc_cache(nl->sk, AF_UNSPEC, &links));
    r = r ?: netlink_ready(nl);
    r = r ?: netlink_read(nl, rtnl_route_alloc_cache(nl->sk, AF_UNSPEC, 0, &routes));
    r = r ?: netlink_ready(nl);
    r = r ?: netlink_read(nl, rtnl_addr_alloc_cache(nl->sk, &addrs));
    if (r < 0)
        return r;
    l.links = links;
    nl_cache_foreach(routes, on_route, &l);
    nl_cache_foreach(addrs, on_addr, &l);
    if (l.error) {
        free(l.v);
        return l.error;
    }
    *ret = l.v;
    *ret_n = l.n;
    return 0;
}

const char *node_nic_use_str(unsigned uses) {
    if ((uses & NODE_NIC_DEFAULT_ROUTE) && (uses & NODE_NIC_ADDRESS))
        return "it carries the node's default route and a node address";
    if (uses & NODE_NIC_DEFAULT_ROUTE)
        return "it carries the node's default route";
    if (uses & NODE_NIC_ADDRESS)
        return "it carries a node address";
    return "the node uses it";
}
