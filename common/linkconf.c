/* rtnetlink changes through libnl-route-3: links, addresses, routes, rules, VRF. */
#include "linkconf.h"

#include <ctype.h>

#include <pthread.h>

#include <net/if.h>
#include <arpa/inet.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <netlink/addr.h>
#include <netlink/attr.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/vrf.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <netlink/socket.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/socket.h>

#include "cidr.h"
#include "log.h"
#include "netlink.h"
#include "netns.h"
#include "strv.h"

/* A link is a rail NIC plus a handful of extras; anything far above this
 * is not a pod-side rail and must not grow our memory without bound. */
#define ADDR_LIST_MAX 1024
/* Table of the throwaway probe VRF: it only has to be non-zero (the kernel
 * refuses table 0) and unlikely to be one a tenant uses. */
#define VRF_PROBE_TABLE 0x7ffffff0u
/* The kernel reports errno values below 4096; anything else is garbage. */
#define KERNEL_ERRNO_MAX 4095

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_sock *, nl_socket_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_cache *, nl_cache_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_addr *, nl_addr_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_link *, rtnl_link_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_addr *, rtnl_addr_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_route *, rtnl_route_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_rule *, rtnl_rule_put);

/*
 * One short conversation with the kernel: a NETLINK_ROUTE socket in the
 * calling thread's namespace, and the errno of the kernel's last NLMSG_ERROR.
 * We keep that errno ourselves because libnl folds kernel errors into its
 * own coarser codes (ENETUNREACH, ENETDOWN and friends all become
 * NLE_FAILURE), and the CNI must tell the runtime what really went wrong.
 */
typedef struct Conn {
    struct nl_sock *sk;
    int kernel_errno;
} Conn;

static void conn_done(Conn *c) {
    nl_socket_free(c->sk);
    c->sk = NULL;
}

/* The kernel's reason for the last refused request, with its errno, for
 * linkconf_kernel_message(). Process-wide: requests run on netns_run()'s
 * short-lived threads, and the caller asks after joining them. */
static pthread_mutex_t ext_ack_lock = PTHREAD_MUTEX_INITIALIZER;
static char ext_ack_msg[256];
static int ext_ack_errno;

static void ext_ack_set(const char *msg, size_t len, int err) {
    pthread_mutex_lock(&ext_ack_lock);
    snprintf(ext_ack_msg, sizeof(ext_ack_msg), "%.*s", (int)len, msg);
    ext_ack_errno = err;
    pthread_mutex_unlock(&ext_ack_lock);
}

bool linkconf_kernel_message(int r, char *buf, size_t n) {
    bool found;

    pthread_mutex_lock(&ext_ack_lock);
    /* only the message of this very error: a tolerated failure before it
     * (a lookup answered ENODEV) must not lend it its text */
    found = ext_ack_msg[0] && r == -ext_ack_errno;
    if (found)
        snprintf(buf, n, "%s", ext_ack_msg);
    ext_ack_msg[0] = 0;
    ext_ack_errno = 0;
    pthread_mutex_unlock(&ext_ack_lock);
    return found;
}

/* The kernel's reason text, present when NETLINK_EXT_ACK is on. libnl hands
 * us the nlmsgerr, which sits right behind the NLMSG_ERROR header. */
static void keep_ext_ack(const struct nlmsgerr *e, int err) {
    const struct nlmsghdr *h = (const void *)((const uint8_t *)e - NLMSG_HDRLEN);
    size_t off = sizeof(*e);
    const struct nlattr *a;

    if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
        return;
    if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
        if (e->msg.nlmsg_len < NLMSG_HDRLEN)
            return;
        off += e->msg.nlmsg_len - NLMSG_HDRLEN;
    }
    off = NLMSG_HDRLEN + NLMSG_ALIGN(off);
    if (off >= h->nlmsg_len)
        return;
    a = nla_find((const struct nlattr *)((const uint8_t *)h + off), (int)(h->nlmsg_len - off),
                 NLMSGERR_ATTR_MSG);
    if (!a || nla_len(a) <= 0)
        return;
    size_t len = strnlen(nla_data(a), (size_t)nla_len(a));
    log_emit(LOG_LVL_DEBUG, NULL, NULL, -err, "rtnetlink: %.*s", (int)len,
             (const char *)nla_data(a));
    ext_ack_set(nla_data(a), len, err);
}

static int on_kernel_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg) {
    Conn *c = arg;
    int err = e->error < 0 ? -e->error : e->error;

    c->kernel_errno = err > 0 && err <= KERNEL_ERRNO_MAX ? err : EIO;
    keep_ext_ack(e, c->kernel_errno);
    /* stop here; libnl returns its own code, conn_status() prefers ours */
    return NL_STOP;
}

/* c must stay where it is until conn_done(): the error callback points at it. */
static int conn_open(Conn *c) {
    _cleanup_(nl_socket_freep) struct nl_sock *sk = nl_socket_alloc();
    int one = 1, r;

    if (!sk)
        return -ENOMEM;
    /* nl_connect() opens the fd with SOCK_CLOEXEC */
    r = nl_connect(sk, NETLINK_ROUTE);
    r = r ?: nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_kernel_error, c);
    if (r < 0)
        return netlink_errno(r);
    /* best effort: kernels before 4.12 have no extended ack, and the debug
     * text is all we would lose */
    (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    c->sk = TAKE_PTR(sk);
    c->kernel_errno = 0;
    return 0;
}

/* Result of one libnl call: 0, the kernel's own errno, or libnl's code
 * translated. Clears the kernel errno for the next request. */
static int conn_status(Conn *c, int nlerr) {
    int k = c->kernel_errno;

    c->kernel_errno = 0;
    if (nlerr >= 0)
        return 0;
    return k > 0 ? -k : netlink_errno(nlerr);
}

/* What the kernel's dev_valid_name() accepts, so that a name it would refuse
 * is refused before anything moves. */
static bool ifname_valid(const char *name) {
    if (!name || !name[0] || strlen(name) >= IF_NAMESIZE || streq(name, ".") || streq(name, ".."))
        return false;
    for (const char *p = name; *p; p++)
        if (*p == '/' || *p == ':' || isspace((unsigned char)*p))
            return false;
    return true;
}

static int link_lookup(Conn *c, const char *name, struct rtnl_link **ret) {
    struct rtnl_link *link = NULL;
    int r;

    r = conn_status(c, rtnl_link_get_kernel(c->sk, 0, name, &link));
    if (r < 0)
        /* some kernels answer an unknown name with ENOENT */
        return r == -ENOENT ? -ENODEV : r;
    if (!link)
        return -ENODEV;
    *ret = link;
    return 0;
}

static int link_ifindex(Conn *c, const char *name, int *ret) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL;
    int r;

    r = link_lookup(c, name, &link);
    if (r < 0)
        return r;
    if (rtnl_link_get_ifindex(link) <= 0)
        return -EBADMSG;
    *ret = rtnl_link_get_ifindex(link);
    return 0;
}

/* Apply changes to the link called name, in one RTM_NEWLINK request. */
static int link_apply(const char *name, struct rtnl_link *changes) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_link_putp) struct rtnl_link *orig = NULL;
    int r;

    r = conn_open(&c);
    if (r < 0)
        return r;
    r = link_lookup(&c, name, &orig);
    if (r < 0)
        return r;
    return conn_status(&c, rtnl_link_change(c.sk, orig, changes, 0));
}

static int changes_new(const char *name, struct rtnl_link **ret) {
    if (!ifname_valid(name))
        return -EINVAL;
    *ret = rtnl_link_alloc();
    return *ret ? 0 : -ENOMEM;
}

static int link_move_apply(const char *name, int netns_fd, const char *newname) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *changes = NULL;
    int r;

    r = changes_new(name, &changes);
    if (r < 0)
        return r;
    rtnl_link_set_ns_fd(changes, netns_fd);
    /* IFLA_IFNAME next to IFLA_NET_NS_FD: the kernel renames inside the
     * target, so the host never sees the new name nor a temporary one */
    if (newname)
        rtnl_link_set_name(changes, newname);
    return link_apply(name, changes);
}

/* Run in the target namespace: 0 when name is free there. */
static int name_free_here(void *name) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL;
    int r;

    r = conn_open(&c);
    r = r ?: link_lookup(&c, name, &link);
    if (r == -ENODEV)
        return 0;
    return r < 0 ? r : -EEXIST;
}

int link_move_to_netns_as(const char *name, int netns_fd, const char *newname) {
    int r;

    if (!ifname_valid(name))
        return -EINVAL;
    if (netns_fd < 0)
        return -EBADF;
    /* rtnl_link_set_name() would silently truncate a long name */
    if (newname && !ifname_valid(newname))
        return -EINVAL;
    if (!newname || streq_ptr(name, newname))
        return link_move_apply(name, netns_fd, NULL);
    /* a taken name fails before anything changes, in the common case */
    r = netns_run(netns_fd, name_free_here, (void *)newname);
    if (r < 0)
        return r;
    return link_move_apply(name, netns_fd, newname);
}

int link_move_to_netns(const char *name, int netns_fd) {
    return link_move_to_netns_as(name, netns_fd, NULL);
}

int link_rename(const char *name, const char *newname) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *changes = NULL;
    int r;

    if (!ifname_valid(newname))
        return -EINVAL;
    r = changes_new(name, &changes);
    if (r < 0)
        return r;
    rtnl_link_set_name(changes, newname);
    return link_apply(name, changes);
}

int link_set_mtu(const char *name, unsigned mtu) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *changes = NULL;
    int r;

    /* the kernel checks the device's own bounds; 0 is never one */
    if (mtu == 0)
        return -EINVAL;
    r = changes_new(name, &changes);
    if (r < 0)
        return r;
    rtnl_link_set_mtu(changes, mtu);
    return link_apply(name, changes);
}

int link_set_up(const char *name, bool up) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *changes = NULL;
    int r;

    r = changes_new(name, &changes);
    if (r < 0)
        return r;
    if (up)
        rtnl_link_set_flags(changes, IFF_UP);
    else
        rtnl_link_unset_flags(changes, IFF_UP);
    return link_apply(name, changes);
}

int link_set_alias(const char *name, const char *alias) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *changes = NULL;
    int r;

    /* IFALIASZ counts the terminating NUL */
    if (!alias || strlen(alias) >= 256)
        return -EINVAL;
    r = changes_new(name, &changes);
    if (r < 0)
        return r;
    rtnl_link_set_ifalias(changes, alias);
    return link_apply(name, changes);
}

int link_setup(const char *name, unsigned mtu, const char *alias) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *changes = NULL;
    int r;

    if (!alias || strlen(alias) >= 256)
        return -EINVAL;
    r = changes_new(name, &changes);
    if (r < 0)
        return r;
    if (mtu)
        rtnl_link_set_mtu(changes, mtu);
    rtnl_link_set_ifalias(changes, alias);
    rtnl_link_set_flags(changes, IFF_UP);
    return link_apply(name, changes);
}

int link_set_master(const char *ifname, const char *master) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_link_putp) struct rtnl_link *orig = NULL, *changes = NULL;
    int master_index = 0, r;

    if (master && master[0] && !ifname_valid(master))
        return -EINVAL;
    r = changes_new(ifname, &changes);
    r = r ?: conn_open(&c);
    r = r ?: link_lookup(&c, ifname, &orig);
    if (r < 0)
        return r;
    /* IFLA_MASTER 0 releases the link from its master */
    if (master && master[0]) {
        r = link_ifindex(&c, master, &master_index);
        if (r < 0)
            return r;
    }
    rtnl_link_set_master(changes, master_index);
    return conn_status(&c, rtnl_link_change(c.sk, orig, changes, 0));
}

typedef struct MacSearch {
    const uint8_t *mac;
    char current[IF_NAMESIZE];   /* first link whose address is mac */
    char permanent[IF_NAMESIZE]; /* first link whose permanent address is */
} MacSearch;

static bool attr_is_mac(const struct nlattr *a, const uint8_t mac[6]) {
    return a && nla_len(a) == 6 && memcmp(nla_data(a), mac, 6) == 0;
}

static void name_take(char dst[IF_NAMESIZE], const struct nlattr *name) {
    if (!dst[0])
        nla_strlcpy(dst, name, IF_NAMESIZE);
}

static int on_link_mac(struct nl_msg *msg, void *arg) {
    struct nlmsghdr *h = nlmsg_hdr(msg);
    struct nlattr *tb[IFLA_MAX + 1];
    MacSearch *s = arg;

    if (h->nlmsg_type != RTM_NEWLINK ||
        nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
        return NL_SKIP;
    /* a name that does not fit is not one the kernel sends; skip it */
    if (!tb[IFLA_IFNAME] || nla_len(tb[IFLA_IFNAME]) < 2 || nla_len(tb[IFLA_IFNAME]) > IF_NAMESIZE)
        return NL_SKIP;
    if (attr_is_mac(tb[IFLA_ADDRESS], s->mac))
        name_take(s->current, tb[IFLA_IFNAME]);
    if (attr_is_mac(tb[IFLA_PERM_ADDRESS], s->mac))
        name_take(s->permanent, tb[IFLA_IFNAME]);
    return NL_OK;
}

/* A dump of our own rather than the link cache: libnl's rtnl_link does not
 * keep IFLA_PERM_ADDRESS, and a VF whose MAC the pod changed is still found
 * by the address it was inventoried with. */
static int link_dump_mac(MacSearch *s) {
    _cleanup_(conn_done) Conn c = {0};
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    int r;

    r = conn_open(&c);
    r = r ?: conn_status(&c, nl_socket_modify_cb(c.sk, NL_CB_VALID, NL_CB_CUSTOM, on_link_mac, s));
    r = r ?: conn_status(&c, nl_send_simple(c.sk, RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi)));
    r = r ?: conn_status(&c, nl_recvmsgs_default(c.sk));
    return r;
}

int link_find_by_mac(const uint8_t mac[6], char *ret_name, size_t n) {
    MacSearch s = {.mac = mac};
    const char *found;
    int r;

    if (!mac || !ret_name)
        return -EINVAL;
    r = link_dump_mac(&s);
    if (r < 0)
        return r;
    /* the live address wins: that is the link traffic for mac reaches */
    found = s.current[0] ? s.current : s.permanent;
    if (!found[0])
        return -ENODEV;
    if (strlen(found) >= n)
        return -ENOSPC;
    memcpy(ret_name, found, strlen(found) + 1);
    return 0;
}

static size_t family_len(int family) {
    return family == AF_INET ? 4 : 16;
}

/* s parsed strictly (inet_pton, no libnl "default"/"any" shorthands). */
static int cidr_get(const char *s, bool allow_bare, Cidr *ret) {
    if (!s)
        return -EINVAL;
    return cidr_parse(s, allow_bare, ret);
}

static int nl_addr_from(const Cidr *c, unsigned prefix, struct nl_addr **ret) {
    struct nl_addr *a = nl_addr_build(c->family, c->addr.bytes, family_len(c->family));

    if (!a)
        return -ENOMEM;
    nl_addr_set_prefixlen(a, (int)prefix);
    *ret = a;
    return 0;
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

static int addr_build(int ifindex, const Cidr *c, struct rtnl_addr **ret) {
    _cleanup_(rtnl_addr_putp) struct rtnl_addr *a = rtnl_addr_alloc();
    _cleanup_(nl_addr_putp) struct nl_addr *local = NULL;
    int r;

    if (!a)
        return -ENOMEM;
    r = nl_addr_from(c, c->prefix, &local);
    if (r < 0)
        return r;
    rtnl_addr_set_ifindex(a, ifindex);
    r = rtnl_addr_set_local(a, local);
    if (r < 0)
        return netlink_errno(r);
    *ret = TAKE_PTR(a);
    return 0;
}

int addr_add(const char *ifname, const char *cidr) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_addr_putp) struct rtnl_addr *a = NULL;
    int ifindex, r;
    Cidr want;

    if (!ifname_valid(ifname))
        return -EINVAL;
    r = cidr_get(cidr, false, &want);
    r = r ?: conn_open(&c);
    r = r ?: link_ifindex(&c, ifname, &ifindex);
    r = r ?: addr_build(ifindex, &want, &a);
    if (r < 0)
        return r;
    /* EXCL: an address already there is the caller's to judge (-EEXIST) */
    return conn_status(&c, rtnl_addr_add(c.sk, a, NLM_F_EXCL));
}

/* Append "addr/prefix" for a global address of ifindex; skip the rest. */
static int addr_collect(struct rtnl_addr *a, int ifindex, char ***l) {
    struct nl_addr *local = rtnl_addr_get_local(a);
    char buf[INET6_ADDRSTRLEN];
    int family = rtnl_addr_get_family(a);

    if (rtnl_addr_get_ifindex(a) != ifindex || rtnl_addr_get_scope(a) != RT_SCOPE_UNIVERSE)
        return 0;
    if (!local || (family != AF_INET && family != AF_INET6) ||
        nl_addr_get_len(local) != family_len(family))
        return 0;
    if (strv_length(*l) >= ADDR_LIST_MAX)
        return -E2BIG;
    if (!inet_ntop(family, nl_addr_get_binary_addr(local), buf, sizeof(buf)))
        return -errno;
    return strv_pushf(l, "%s/%u", buf, rtnl_addr_get_prefixlen(a));
}

static int addr_walk(struct nl_cache *cache, int ifindex, char ***l) {
    for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
        int r = addr_collect((struct rtnl_addr *)o, ifindex, l);

        if (r < 0)
            return r;
    }
    return 0;
}

int addr_list(const char *ifname, char ***ret) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;
    _cleanup_(strv_freep) char **l = NULL;
    int ifindex, r;

    if (!ifname_valid(ifname) || !ret)
        return -EINVAL;
    r = conn_open(&c);
    r = r ?: link_ifindex(&c, ifname, &ifindex);
    r = r ?: conn_status(&c, rtnl_addr_alloc_cache(c.sk, &cache));
    r = r ?: addr_walk(cache, ifindex, &l);
    if (r < 0)
        return r;
    /* an empty vector, not NULL, so that callers can always iterate */
    if (!l && !(l = calloc(1, sizeof(char *))))
        return -ENOMEM;
    *ret = TAKE_PTR(l);
    return 0;
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

static int route_set_gateway(struct rtnl_nexthop *nh, const RouteWant *w) {
    _cleanup_(nl_addr_putp) struct nl_addr *gw = NULL;
    int r;

    if (!w->has_gw)
        return 0;
    r = nl_addr_from(&w->gw, w->gw.family == AF_INET ? 32 : 128, &gw);
    if (r < 0)
        return r;
    rtnl_route_nh_set_gateway(nh, gw);
    return 0;
}

static int route_set_src(struct rtnl_route *rt, const RouteWant *w) {
    _cleanup_(nl_addr_putp) struct nl_addr *src = NULL;
    int r;

    if (!w->has_src)
        return 0;
    r = nl_addr_from(&w->src, w->src.family == AF_INET ? 32 : 128, &src);
    if (r < 0)
        return r;
    return netlink_errno(rtnl_route_set_pref_src(rt, src));
}

static int route_build(const RouteWant *w, int ifindex, struct rtnl_route **ret) {
    _cleanup_(rtnl_route_putp) struct rtnl_route *rt = rtnl_route_alloc();
    _cleanup_(nl_addr_putp) struct nl_addr *dst = NULL;
    struct rtnl_nexthop *nh;
    int r;

    if (!rt)
        return -ENOMEM;
    r = nl_addr_from(&w->dst, w->dst.prefix, &dst);
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
    r = route_set_gateway(nh, w);
    r = r ?: route_set_src(rt, w);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(rt);
    return 0;
}

int route_add(const char *ifname, const RouteSpec *spec) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_route_putp) struct rtnl_route *rt = NULL;
    int ifindex, r;
    RouteWant w;

    if (!ifname_valid(ifname))
        return -EINVAL;
    r = route_want(spec, &w);
    r = r ?: conn_open(&c);
    r = r ?: link_ifindex(&c, ifname, &ifindex);
    r = r ?: route_build(&w, ifindex, &rt);
    if (r < 0)
        return r;
    return conn_status(&c, rtnl_route_add(c.sk, rt, NLM_F_EXCL));
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

int route_exists(const char *ifname, const RouteSpec *spec) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;
    int ifindex, r;
    RouteWant w;

    if (!ifname_valid(ifname))
        return -EINVAL;
    r = route_want(spec, &w);
    r = r ?: conn_open(&c);
    r = r ?: link_ifindex(&c, ifname, &ifindex);
    r = r ?: conn_status(&c, rtnl_route_alloc_cache(c.sk, w.dst.family, 0, &cache));
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
        r = nl_addr_from(src, src->prefix, &a);
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

int rule_add(const char *src_cidr, uint32_t table, uint32_t prio) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_rule_putp) struct rtnl_rule *rule = NULL;
    Cidr src;
    int r;

    r = rule_parse(src_cidr, table, &src);
    r = r ?: rule_build(&src, table, prio, &rule);
    r = r ?: conn_open(&c);
    if (r < 0)
        return r;
    /* without EXCL the kernel happily stacks identical rules */
    return conn_status(&c, rtnl_rule_add(c.sk, rule, NLM_F_EXCL));
}

int rule_exists(const char *src_cidr, uint32_t table, uint32_t prio) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(nl_cache_freep) struct nl_cache *cache = NULL;
    Cidr src;
    int r;

    r = rule_parse(src_cidr, table, &src);
    r = r ?: conn_open(&c);
    r = r ?: conn_status(&c, rtnl_rule_alloc_cache(c.sk, src.family, &cache));
    if (r < 0)
        return r;
    return rule_find(cache, &src, table, prio);
}

int rule_del(const char *src_cidr, uint32_t table, uint32_t prio) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_rule_putp) struct rtnl_rule *rule = NULL;
    Cidr src;
    int r;

    r = rule_parse(src_cidr, table, &src);
    r = r ?: rule_build(&src, table, prio, &rule);
    r = r ?: conn_open(&c);
    if (r < 0)
        return r;
    return conn_status(&c, rtnl_rule_delete(c.sk, rule, 0));
}

static int vrf_create(Conn *c, const char *name, uint32_t table, bool up) {
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
    return conn_status(c, rtnl_link_add(c->sk, link, NLM_F_CREATE | NLM_F_EXCL));
}

static int link_delete(Conn *c, const char *name) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *link = rtnl_link_alloc();

    if (!link)
        return -ENOMEM;
    rtnl_link_set_name(link, name);
    return conn_status(c, rtnl_link_delete(c->sk, link));
}

int vrf_supported(void) {
    _cleanup_(conn_done) Conn c = {0};
    char name[IF_NAMESIZE];
    int r;

    /* per thread, so concurrent probes (netns_run threads) never collide */
    snprintf(name, sizeof(name), "rgvrfp%d", (int)gettid());
    r = conn_open(&c);
    if (r < 0)
        return r;
    r = vrf_create(&c, name, VRF_PROBE_TABLE, false);
    if (r == -EEXIST) {
        /* left behind by a probe that died on a thread id now reused */
        (void)link_delete(&c, name);
        r = vrf_create(&c, name, VRF_PROBE_TABLE, false);
    }
    if (r < 0)
        return r;
    return link_delete(&c, name);
}

int vrf_add(const char *name, uint32_t table) {
    _cleanup_(conn_done) Conn c = {0};
    int r;

    if (!ifname_valid(name) || table == RT_TABLE_UNSPEC)
        return -EINVAL;
    r = conn_open(&c);
    if (r < 0)
        return r;
    return vrf_create(&c, name, table, true);
}
