/* rtnetlink through libnl-route-3: link lookups and the RTNLGRP_LINK event monitor. */
#include "netlink.h"

#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/object.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/socket.h>
#include <stdio.h>
#include <sys/socket.h>

/* Receive buffer of the event socket: room for a few thousand link messages
 * (a 20-rail node flapping, a burst of VF creation) before the kernel has to
 * drop events and report ENOBUFS. */
#define MONITOR_RCVBUF (1 << 20)
/* Datagrams read per dispatch, so an event storm cannot starve the caller's
 * other fds; a level-triggered poll reports the rest. */
#define MONITOR_BATCH 4096

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_sock *, nl_socket_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_link *, rtnl_link_put);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_cache *, nl_cache_free);

int netlink_errno(int nlerr) {
    static const int map[] = {
        [NLE_SUCCESS] = 0,
        [NLE_FAILURE] = EIO,
        [NLE_INTR] = EINTR,
        [NLE_BAD_SOCK] = EBADF,
        [NLE_AGAIN] = EAGAIN,
        [NLE_NOMEM] = ENOMEM,
        [NLE_EXIST] = EEXIST,
        [NLE_INVAL] = EINVAL,
        [NLE_RANGE] = ERANGE,
        [NLE_MSGSIZE] = EMSGSIZE,
        [NLE_OPNOTSUPP] = EOPNOTSUPP,
        [NLE_AF_NOSUPPORT] = EAFNOSUPPORT,
        [NLE_OBJ_NOTFOUND] = ENOENT,
        [NLE_NOATTR] = ENODATA,
        [NLE_MISSING_ATTR] = EINVAL,
        [NLE_AF_MISMATCH] = EAFNOSUPPORT,
        [NLE_SEQ_MISMATCH] = EILSEQ,
        [NLE_MSG_OVERFLOW] = EOVERFLOW,
        [NLE_MSG_TRUNC] = EMSGSIZE,
        [NLE_NOADDR] = EADDRNOTAVAIL,
        [NLE_SRCRT_NOSUPPORT] = EOPNOTSUPP,
        [NLE_MSG_TOOSHORT] = EBADMSG,
        [NLE_MSGTYPE_NOSUPPORT] = EOPNOTSUPP,
        [NLE_OBJ_MISMATCH] = EINVAL,
        [NLE_NOCACHE] = ENOENT,
        [NLE_BUSY] = EBUSY,
        [NLE_PROTO_MISMATCH] = EPROTONOSUPPORT,
        [NLE_NOACCESS] = EACCES,
        [NLE_PERM] = EPERM,
        [NLE_PKTLOC_FILE] = ENOENT,
        [NLE_PARSE_ERR] = EBADMSG,
        [NLE_NODEV] = ENODEV,
        [NLE_IMMUTABLE] = EPERM,
        [NLE_DUMP_INTR] = EAGAIN, /* dump changed under us: the caller retries */
        [NLE_ATTRSIZE] = EBADMSG,
    };
    int e = nlerr < 0 ? -nlerr : nlerr;

    if (e == 0)
        return 0;
    if ((size_t)e >= ELEMENTSOF(map) || map[e] == 0)
        return -EIO;
    return -map[e];
}

bool link_info_healthy(const LinkInfo *l) {
    if (!l || !(l->flags & IFF_UP))
        return false;
    /* The kernel sets IFF_RUNNING exactly when operstate is UP or UNKNOWN
     * (netif_oper_up); UNKNOWN is what drivers without carrier reporting
     * (lo, tun) show. LOWERLAYERDOWN (a veth whose peer is down), DOWN,
     * DORMANT, TESTING and NOTPRESENT are not healthy. */
    return (l->flags & IFF_RUNNING) || l->operstate == IF_OPER_UP ||
           l->operstate == IF_OPER_UNKNOWN;
}

static int link_info_fill(struct rtnl_link *link, LinkInfo *ret) {
    const char *name = rtnl_link_get_name(link), *alias = rtnl_link_get_ifalias(link);
    struct nl_addr *addr = rtnl_link_get_addr(link);
    int ifindex = rtnl_link_get_ifindex(link);
    LinkInfo l = {.ifindex = ifindex};

    /* both come from the kernel, but a message is input like any other */
    if (ifindex <= 0 || !name || strlen(name) >= sizeof(l.name))
        return -EBADMSG;
    memcpy(l.name, name, strlen(name) + 1);
    if (alias)
        snprintf(l.alias, sizeof(l.alias), "%s", alias);
    l.flags = rtnl_link_get_flags(link);
    l.operstate = rtnl_link_get_operstate(link);
    l.mtu = rtnl_link_get_mtu(link);
    if (addr && nl_addr_get_len(addr) == sizeof(l.mac)) {
        memcpy(l.mac, nl_addr_get_binary_addr(addr), sizeof(l.mac));
        l.has_mac = true;
    }
    *ret = l;
    return 0;
}

/* A NETLINK_ROUTE socket in the calling thread's namespace. */
static int route_socket(struct nl_sock **ret) {
    _cleanup_(nl_socket_freep) struct nl_sock *sk = nl_socket_alloc();
    int r;

    if (!sk)
        return -ENOMEM;
    /* nl_connect() opens the fd with SOCK_CLOEXEC */
    r = nl_connect(sk, NETLINK_ROUTE);
    if (r < 0)
        return netlink_errno(r);
    *ret = TAKE_PTR(sk);
    return 0;
}

static int link_get_on(struct nl_sock *sk, int ifindex, const char *name, LinkInfo *ret) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *link = NULL;
    int r;

    r = rtnl_link_get_kernel(sk, ifindex, name, &link);
    if (r < 0) {
        r = netlink_errno(r);
        /* a name lookup the kernel cannot match answers ENODEV, some older
         * kernels ENOENT; both mean "not here" */
        return r == -ENOENT ? -ENODEV : r;
    }
    if (!link)
        return -ENODEV;
    return link_info_fill(link, ret);
}

static int link_get(int ifindex, const char *name, LinkInfo *ret) {
    _cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
    int r;

    r = route_socket(&sk);
    if (r < 0)
        return r;
    return link_get_on(sk, ifindex, name, ret);
}

struct LinkLookup {
    struct nl_sock *sk;
};

int link_lookup_new(LinkLookup **ret) {
    LinkLookup *q;
    int r;

    if (!ret)
        return -EINVAL;
    q = calloc(1, sizeof(*q));
    if (!q)
        return -ENOMEM;
    r = route_socket(&q->sk);
    if (r < 0) {
        free(q);
        return r;
    }
    *ret = q;
    return 0;
}

void link_lookup_free(LinkLookup *q) {
    if (!q)
        return;
    nl_socket_free(q->sk);
    free(q);
}

int link_lookup_by_name(LinkLookup *q, const char *name, LinkInfo *ret) {
    if (!q)
        return link_get_by_name(name, ret);
    if (!name || !name[0] || strlen(name) >= IF_NAMESIZE || !ret)
        return -EINVAL;
    return link_get_on(q->sk, 0, name, ret);
}

int link_get_by_name(const char *name, LinkInfo *ret) {
    if (!name || !name[0] || strlen(name) >= IF_NAMESIZE || !ret)
        return -EINVAL;
    return link_get(0, name, ret);
}

int link_get_by_index(int ifindex, LinkInfo *ret) {
    if (ifindex <= 0 || !ret)
        return -EINVAL;
    return link_get(ifindex, NULL, ret);
}

struct LinkMonitor {
    struct nl_sock *sk;
    link_event_fn fn; /* set for the duration of one dispatch */
    void *userdata;
};

void link_monitor_free(LinkMonitor *m) {
    if (!m)
        return;
    nl_socket_free(m->sk);
    free(m);
}

static void on_link_object(struct nl_object *obj, void *arg) {
    LinkMonitor *m = arg;
    LinkEvent ev = {0};
    int type = nl_object_get_msgtype(obj);

    if (!streq_ptr(nl_object_get_type(obj), "route/link"))
        return;
    ev.type = type == RTM_DELLINK ? LINK_EVENT_DEL : LINK_EVENT_NEW;
    if (link_info_fill((struct rtnl_link *)obj, &ev.link) < 0)
        return;
    m->fn(m->userdata, &ev);
}

static int on_message(struct nl_msg *msg, void *arg) {
    const struct nlmsghdr *h = nlmsg_hdr(msg);
    const struct sockaddr_nl *src = nlmsg_get_src(msg);
    const struct ifinfomsg *ifi;

    /* only the kernel speaks on RTNLGRP_LINK; ignore anything else */
    if (!src || src->nl_pid != 0)
        return NL_SKIP;
    if (h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK)
        return NL_SKIP;
    if (!nlmsg_valid_hdr(h, sizeof(*ifi)))
        return NL_SKIP;
    ifi = nlmsg_data(h);
    /* AF_BRIDGE copies describe bridge ports: an AF_BRIDGE RTM_DELLINK means
     * "left the bridge", not "gone" */
    if (ifi->ifi_family != AF_UNSPEC)
        return NL_SKIP;
    /* a message libnl cannot parse is skipped, not fatal for the monitor */
    (void)nl_msg_parse(msg, on_link_object, arg);
    return NL_OK;
}

/* Lift the receive buffer above net.core.rmem_max where we may (the daemon
 * runs with CAP_NET_ADMIN); elsewhere the capped SO_RCVBUF must do. */
static int monitor_set_rcvbuf(struct nl_sock *sk) {
    int size = MONITOR_RCVBUF, r;

    r = nl_socket_set_buffer_size(sk, MONITOR_RCVBUF, 0);
    if (r < 0)
        return netlink_errno(r);
    (void)setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
    return 0;
}

static int monitor_open(LinkMonitor *m) {
    int r;

    m->sk = nl_socket_alloc();
    if (!m->sk)
        return -ENOMEM;
    /* multicast events carry seq 0 */
    nl_socket_disable_seq_check(m->sk);
    r = nl_connect(m->sk, NETLINK_ROUTE);
    r = r ?: nl_socket_add_membership(m->sk, RTNLGRP_LINK);
    r = r ?: nl_socket_set_nonblocking(m->sk);
    r = r ?: nl_socket_modify_cb(m->sk, NL_CB_VALID, NL_CB_CUSTOM, on_message, m);
    if (r < 0)
        return netlink_errno(r);
    return monitor_set_rcvbuf(m->sk);
}

int link_monitor_new(LinkMonitor **ret) {
    _cleanup_(link_monitor_freep) LinkMonitor *m = NULL;
    int r;

    if (!ret)
        return -EINVAL;
    m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    r = monitor_open(m);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(m);
    return 0;
}

int link_monitor_fd(const LinkMonitor *m) {
    if (!m)
        return -EBADF;
    return nl_socket_get_fd(m->sk);
}

/* 1 when a datagram is queued, 0 when drained, -ENOBUFS on overrun. We peek
 * ourselves because libnl folds ENOBUFS into NLE_NOMEM, and "the kernel
 * dropped events" must not read as "out of memory". Reading the error
 * clears it, as in iproute2's rtnl_listen(). */
static int monitor_pending(const LinkMonitor *m) {
    for (;;) {
        ssize_t k = recv(nl_socket_get_fd(m->sk), NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);

        if (k >= 0)
            return 1;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -errno;
    }
}

/* Read one datagram: 1 when one was read, 0 when drained, -ENOBUFS when the
 * kernel dropped events. */
static int monitor_read_one(LinkMonitor *m) {
    int r = monitor_pending(m);

    if (r <= 0)
        return r;
    r = nl_recvmsgs_default(m->sk);
    /* an overrun between our peek and libnl's read shows up as NOMEM */
    if (r == -NLE_NOMEM)
        return -ENOBUFS;
    if (r == -NLE_AGAIN)
        return 0;
    if (r < 0)
        return netlink_errno(r);
    return 1;
}

int link_monitor_dispatch(LinkMonitor *m, link_event_fn fn, void *userdata) {
    bool overrun = false;
    int r = 0;

    if (!m || !fn)
        return -EINVAL;
    m->fn = fn;
    m->userdata = userdata;
    for (unsigned i = 0; i < MONITOR_BATCH; i++) {
        r = monitor_read_one(m);
        if (r == -ENOBUFS)
            overrun = true;
        else if (r <= 0)
            break;
    }
    m->fn = NULL;
    m->userdata = NULL;
    /* events still queued behind an overrun are dispatched first, so that
     * the caller's resync comes last and nothing stale follows it */
    if (overrun)
        return -ENOBUFS;
    return r < 0 ? r : 0;
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
    _cleanup_(nl_socket_freep) struct nl_sock *sk = NULL;
    _cleanup_(nl_cache_freep) struct nl_cache *links = NULL, *routes = NULL, *addrs = NULL;
    NodeNicList l = {0};
    int r;

    if (!ret || !ret_n)
        return -EINVAL;
    r = route_socket(&sk);
    if (r < 0)
        return r;
    r = rtnl_link_alloc_cache(sk, AF_UNSPEC, &links);
    r = r ?: rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, &routes);
    r = r ?: rtnl_addr_alloc_cache(sk, &addrs);
    if (r < 0)
        return netlink_errno(r);
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
