/* Link identity and ifindex-addressed changes (rtnetlink, libnl message layer). */
#include "linkid.h"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/socket.h>
#include <stdio.h>

#include "macro.h"
#include "netlink.h"
#include "strv.h"

#define DUMP_MAX 4096

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nl_msg *, nlmsg_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct rtnl_link *, rtnl_link_put);

typedef struct Conn {
    struct nl_sock *sk;
    int kernel_errno;
} Conn;

static void conn_done(Conn *c) {
    nl_socket_free(c->sk);
    c->sk = NULL;
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg) {
    Conn *c = arg;
    int err = e->error < 0 ? -e->error : e->error;

    c->kernel_errno = err > 0 && err < 4096 ? err : EIO;
    return NL_STOP;
}

static int conn_open(Conn *c) {
    struct nl_sock *sk = nl_socket_alloc();
    int r;

    if (!sk)
        return -ENOMEM;
    r = nl_connect(sk, NETLINK_ROUTE);
    r = r ?: nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_error, c);
    if (r < 0) {
        nl_socket_free(sk);
        return netlink_errno(r);
    }
    c->sk = sk;
    c->kernel_errno = 0;
    return 0;
}

static int conn_status(Conn *c, int nlerr) {
    int k = c->kernel_errno;

    c->kernel_errno = 0;
    if (nlerr >= 0)
        return 0;
    return k > 0 ? -k : netlink_errno(nlerr);
}

typedef struct Dump {
    LinkId *v;
    size_t n;
    int err;
    const char *want_parent; /* keep only links with this parent (NULL: all) */
} Dump;

static void copy_str(char *dst, size_t n, const struct nlattr *a) {
    if (a && nla_len(a) > 0)
        snprintf(dst, n, "%.*s", (int)strnlen(nla_data(a), (size_t)nla_len(a)),
                 (const char *)nla_data(a));
}

static int parse_link(struct nlmsghdr *h, LinkId *ret) {
    struct nlattr *tb[IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
    const struct ifinfomsg *ifi;
    LinkId l = {.link_netnsid = -1};
    char bus[32] = "", dev[64] = "";

    if (h->nlmsg_type != RTM_NEWLINK || !nlmsg_valid_hdr(h, sizeof(*ifi)))
        return -EBADMSG;
    if (nlmsg_parse(h, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
        return -EBADMSG;
    ifi = nlmsg_data(h);
    if (ifi->ifi_family != AF_UNSPEC || ifi->ifi_index <= 0 || !tb[IFLA_IFNAME])
        return -EBADMSG;
    l.ifindex = ifi->ifi_index;
    copy_str(l.name, sizeof(l.name), tb[IFLA_IFNAME]);
    if (tb[IFLA_LINKINFO] && nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL) >= 0)
        copy_str(l.kind, sizeof(l.kind), li[IFLA_INFO_KIND]);
    copy_str(bus, sizeof(bus), tb[IFLA_PARENT_DEV_BUS_NAME]);
    copy_str(dev, sizeof(dev), tb[IFLA_PARENT_DEV_NAME]);
    if (dev[0])
        snprintf(l.parent, sizeof(l.parent), "%s/%s", bus, dev);
    if (tb[IFLA_LINK] && nla_len(tb[IFLA_LINK]) == 4)
        l.link = (int)nla_get_u32(tb[IFLA_LINK]);
    if (tb[IFLA_LINK_NETNSID] && nla_len(tb[IFLA_LINK_NETNSID]) == 4)
        l.link_netnsid = (int)nla_get_s32(tb[IFLA_LINK_NETNSID]);
    if (tb[IFLA_PERM_ADDRESS] && nla_len(tb[IFLA_PERM_ADDRESS]) == 6)
        memcpy(l.perm, nla_data(tb[IFLA_PERM_ADDRESS]), 6);
    if (tb[IFLA_ADDRESS] && nla_len(tb[IFLA_ADDRESS]) == 6)
        memcpy(l.mac, nla_data(tb[IFLA_ADDRESS]), 6);
    *ret = l;
    return 0;
}

static int on_link(struct nl_msg *msg, void *arg) {
    Dump *d = arg;
    LinkId l;

    if (parse_link(nlmsg_hdr(msg), &l) < 0)
        return NL_SKIP;
    /* a pod may hold any number of links: a search stores only matches */
    if (d->want_parent && !streq(l.parent, d->want_parent))
        return NL_OK;
    if (d->n >= DUMP_MAX) {
        d->err = -E2BIG;
        return NL_SKIP;
    }
    LinkId *m = realloc(d->v, (d->n + 1) * sizeof(*m));
    if (!m) {
        d->err = -ENOMEM;
        return NL_SKIP;
    }
    d->v = m;
    d->v[d->n++] = l;
    return NL_OK;
}

static int dump(const char *want_parent, LinkId **ret, size_t *ret_n) {
    _cleanup_(conn_done) Conn c = {0};
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    Dump d = {.want_parent = want_parent};
    int r;

    r = conn_open(&c);
    r = r ?: conn_status(&c, nl_socket_modify_cb(c.sk, NL_CB_VALID, NL_CB_CUSTOM, on_link, &d));
    r = r ?: conn_status(&c, nl_send_simple(c.sk, RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi)));
    r = r ?: conn_status(&c, nl_recvmsgs_default(c.sk));
    if (r >= 0 && d.err < 0)
        r = d.err;
    if (r < 0) {
        free(d.v);
        return r;
    }
    *ret = d.v;
    *ret_n = d.n;
    return 0;
}

int linkid_dump(LinkId **ret, size_t *ret_n) {
    return dump(NULL, ret, ret_n);
}

int linkid_find_parent(const char *parent, LinkId **ret, size_t *ret_n) {
    if (!parent || !*parent)
        return -EINVAL;
    return dump(parent, ret, ret_n);
}

static int get_one(int ifindex, const char *name, int target_nsid, LinkId *ret) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_GETLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
    Dump d = {0};
    int r;

    if (!m)
        return -ENOMEM;
    r = conn_open(&c);
    if (r < 0)
        return r;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        (name && nla_put_string(m, IFLA_IFNAME, name) < 0) ||
        (target_nsid >= 0 && nla_put_s32(m, IFLA_TARGET_NETNSID, target_nsid) < 0))
        return -ENOMEM;
    r = conn_status(&c, nl_socket_modify_cb(c.sk, NL_CB_VALID, NL_CB_CUSTOM, on_link, &d));
    r = r ?: conn_status(&c, nl_send_auto(c.sk, m));
    r = r ?: conn_status(&c, nl_recvmsgs_default(c.sk));
    if (r >= 0 && d.n == 0)
        r = -ENODEV;
    if (r >= 0)
        *ret = d.v[0];
    free(d.v);
    return r == -ENOENT ? -ENODEV : r;
}

int linkid_get(int ifindex, int target_nsid, LinkId *ret) {
    if (ifindex <= 0)
        return -ENODEV;
    return get_one(ifindex, NULL, target_nsid, ret);
}

int linkid_get_by_name(const char *name, LinkId *ret) {
    if (!name || !*name || strlen(name) >= IF_NAMESIZE)
        return -EINVAL;
    return get_one(0, name, -1, ret);
}

typedef struct NsidAnswer {
    int nsid;
    bool got;
} NsidAnswer;

static int on_nsid(struct nl_msg *msg, void *arg) {
    NsidAnswer *a = arg;
    struct nlmsghdr *h = nlmsg_hdr(msg);
    struct nlattr *tb[NETNSA_MAX + 1];

    if (h->nlmsg_type != RTM_NEWNSID ||
        nlmsg_parse(h, sizeof(struct rtgenmsg), tb, NETNSA_MAX, NULL) < 0 || !tb[NETNSA_NSID])
        return NL_SKIP;
    a->nsid = nla_get_s32(tb[NETNSA_NSID]);
    a->got = true;
    return NL_OK;
}

int linkid_nsid(int netns_fd, int target_nsid, int *ret) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_GETNSID, 0);
    struct rtgenmsg g = {.rtgen_family = AF_UNSPEC};
    NsidAnswer a = {.nsid = -1};
    int r;

    if (!m)
        return -ENOMEM;
    r = conn_open(&c);
    if (r < 0)
        return r;
    if (nlmsg_append(m, &g, sizeof(g), NLMSG_ALIGNTO) < 0 ||
        nla_put_u32(m, NETNSA_FD, (uint32_t)netns_fd) < 0 ||
        (target_nsid >= 0 && nla_put_s32(m, NETNSA_TARGET_NSID, target_nsid) < 0))
        return -ENOMEM;
    r = conn_status(&c, nl_socket_modify_cb(c.sk, NL_CB_VALID, NL_CB_CUSTOM, on_nsid, &a));
    r = r ?: conn_status(&c, nl_send_auto(c.sk, m));
    r = r ?: conn_status(&c, nl_recvmsgs_default(c.sk));
    if (r < 0)
        return r;
    if (!a.got)
        return -EBADMSG;
    *ret = a.nsid < 0 ? -1 : a.nsid;
    return 0;
}

/* One RTM_NEWLINK on ifindex with changes. */
static int change(int ifindex, struct rtnl_link *changes) {
    _cleanup_(conn_done) Conn c = {0};
    _cleanup_(rtnl_link_putp) struct rtnl_link *orig = rtnl_link_alloc();
    int r;

    if (!orig)
        return -ENOMEM;
    if (ifindex <= 0)
        return -ENODEV;
    rtnl_link_set_ifindex(orig, ifindex);
    r = conn_open(&c);
    return r ?: conn_status(&c, rtnl_link_change(c.sk, orig, changes, 0));
}

int linkid_move(int ifindex, int netns_fd, const char *newname) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *ch = rtnl_link_alloc();

    if (!ch)
        return -ENOMEM;
    if (newname && (!*newname || strlen(newname) >= IF_NAMESIZE))
        return -EINVAL;
    rtnl_link_set_ns_fd(ch, netns_fd);
    if (newname)
        rtnl_link_set_name(ch, newname);
    return change(ifindex, ch);
}

int linkid_rename(int ifindex, const char *newname) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *ch = rtnl_link_alloc();

    if (!ch)
        return -ENOMEM;
    if (!newname || !*newname || strlen(newname) >= IF_NAMESIZE)
        return -EINVAL;
    rtnl_link_set_name(ch, newname);
    return change(ifindex, ch);
}

int linkid_set_mac(int ifindex, const uint8_t mac[6]) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *ch = rtnl_link_alloc();
    struct nl_addr *a = nl_addr_build(AF_LLC, mac, 6);
    int r;

    if (!ch || !a) {
        nl_addr_put(a);
        return -ENOMEM;
    }
    rtnl_link_set_addr(ch, a);
    nl_addr_put(a);
    r = change(ifindex, ch);
    return r;
}

int linkid_set_up(int ifindex, bool up) {
    _cleanup_(rtnl_link_putp) struct rtnl_link *ch = rtnl_link_alloc();

    if (!ch)
        return -ENOMEM;
    if (up)
        rtnl_link_set_flags(ch, IFF_UP);
    else
        rtnl_link_unset_flags(ch, IFF_UP);
    return change(ifindex, ch);
}

typedef struct Prune {
    int ifindex;
    char *const *keep;
    struct rtnl_addr **del;
    size_t n;
} Prune;

static void on_addr(struct nl_object *o, void *arg) {
    Prune *p = arg;
    struct rtnl_addr *a = (struct rtnl_addr *)o;
    struct nl_addr *local = rtnl_addr_get_local(a);
    char ip[INET6_ADDRSTRLEN], cidr[INET6_ADDRSTRLEN + 8];
    int family = rtnl_addr_get_family(a);

    if (rtnl_addr_get_ifindex(a) != p->ifindex || rtnl_addr_get_scope(a) != RT_SCOPE_UNIVERSE ||
        !local || (family != AF_INET && family != AF_INET6) ||
        !inet_ntop(family, nl_addr_get_binary_addr(local), ip, sizeof(ip)))
        return;
    snprintf(cidr, sizeof(cidr), "%s/%d", ip, rtnl_addr_get_prefixlen(a));
    if (strv_contains(p->keep, cidr) || p->n >= DUMP_MAX)
        return;
    struct rtnl_addr **m = realloc(p->del, (p->n + 1) * sizeof(*m));
    if (!m)
        return;
    p->del = m;
    nl_object_get(o);
    p->del[p->n++] = a;
}

int linkid_addrs_prune(int ifindex, char *const *keep) {
    _cleanup_(conn_done) Conn c = {0};
    struct nl_cache *cache = NULL;
    Prune p = {.ifindex = ifindex, .keep = keep};
    int r;

    r = conn_open(&c);
    r = r ?: conn_status(&c, rtnl_addr_alloc_cache(c.sk, &cache));
    if (r < 0)
        return r;
    nl_cache_foreach(cache, on_addr, &p);
    nl_cache_free(cache);
    for (size_t i = 0; i < p.n; i++) {
        int k = conn_status(&c, rtnl_addr_delete(c.sk, p.del[i], 0));
        if (k < 0 && k != -EADDRNOTAVAIL && r >= 0)
            r = k;
        rtnl_addr_put(p.del[i]);
    }
    free(p.del);
    return r;
}
