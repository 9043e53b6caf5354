/* SPDX-License-Identifier: Apache-2.0 */
/* Links: what identifies one, one RTM_NEWLINK per change, the event monitor. */
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/veth.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdio.h>
#include <sys/socket.h>

#include "netlink-private.h"
#include "strv.h"

/* A namespace may hold any number of links; a dump stores at most this many
 * (a search stores only its matches). */
#define DUMP_MAX 4096
/* and at most this many namespace ids (one per namespace this one has an id for) */
#define NSID_MAX 65536
/* Receive buffer of the event socket: room for a few thousand link messages
 * (a 20-rail node flapping, a burst of VF creation) before the kernel has to
 * drop events and report ENOBUFS. */
#define MONITOR_RCVBUF (1 << 20)
/* Datagrams read per dispatch, so an event storm cannot starve the caller's
 * other fds; a level-triggered poll reports the rest. */
#define MONITOR_BATCH 4096

bool link_healthy(const Link *l) {
    if (!l || !(l->flags & IFF_UP))
        return false;
    /* The kernel sets IFF_RUNNING exactly when operstate is UP or UNKNOWN
     * (netif_oper_up); UNKNOWN is what drivers without carrier reporting
     * (lo, tun) show. LOWERLAYERDOWN (a veth whose peer is down), DOWN,
     * DORMANT, TESTING and NOTPRESENT are not healthy. */
    return (l->flags & IFF_RUNNING) || l->operstate == IF_OPER_UP ||
           l->operstate == IF_OPER_UNKNOWN;
}

static void copy_str(char *dst, size_t n, const struct nlattr *a) {
    if (a && nla_len(a) > 0)
        snprintf(dst, n, "%.*s", (int)strnlen(nla_data(a), (size_t)nla_len(a)),
                 (const char *)nla_data(a));
}

static bool attr_u32(const struct nlattr *a) {
    return a && nla_len(a) == 4;
}

/* A VLAN's id, protocol and flags from its IFLA_INFO_DATA. */
static void vlan_parse(const struct nlattr *data, Link *l) {
    struct nlattr *v[IFLA_VLAN_MAX + 1];

    if (!data || nla_parse_nested(v, IFLA_VLAN_MAX, (struct nlattr *)data, NULL) < 0)
        return;
    if (v[IFLA_VLAN_ID] && nla_len(v[IFLA_VLAN_ID]) == 2)
        l->vlan_id = nla_get_u16(v[IFLA_VLAN_ID]);
    if (v[IFLA_VLAN_PROTOCOL] && nla_len(v[IFLA_VLAN_PROTOCOL]) == 2)
        l->vlan_proto = ntohs(nla_get_u16(v[IFLA_VLAN_PROTOCOL]));
    if (v[IFLA_VLAN_FLAGS] && nla_len(v[IFLA_VLAN_FLAGS]) == sizeof(struct ifla_vlan_flags))
        l->vlan_flags = ((const struct ifla_vlan_flags *)nla_data(v[IFLA_VLAN_FLAGS]))->flags;
}

int link_parse(struct nlmsghdr *h, Link *ret) {
    struct nlattr *tb[RG_IFLA_MAX + 1], *li[IFLA_INFO_MAX + 1];
    const struct ifinfomsg *ifi;
    Link l = {.link_netnsid = LINK_NETNSID_SELF};
    char bus[32] = "", dev[64] = "";

    if ((h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK) ||
        !nlmsg_valid_hdr(h, sizeof(*ifi)))
        return -EBADMSG;
    if (nlmsg_parse(h, sizeof(*ifi), tb, RG_IFLA_MAX, NULL) < 0)
        return -EBADMSG;
    ifi = nlmsg_data(h);
    if (ifi->ifi_family != AF_UNSPEC || ifi->ifi_index <= 0 || !tb[IFLA_IFNAME] ||
        nla_len(tb[IFLA_IFNAME]) < 2 || nla_len(tb[IFLA_IFNAME]) > IF_NAMESIZE)
        return -EBADMSG;
    l.ifindex = ifi->ifi_index;
    l.flags = ifi->ifi_flags;
    copy_str(l.name, sizeof(l.name), tb[IFLA_IFNAME]);
    copy_str(l.alias, sizeof(l.alias), tb[IFLA_IFALIAS]);
    if (tb[IFLA_LINKINFO] && nla_parse_nested(li, IFLA_INFO_MAX, tb[IFLA_LINKINFO], NULL) >= 0) {
        struct nlattr *vrf[IFLA_VRF_MAX + 1];
        copy_str(l.kind, sizeof(l.kind), li[IFLA_INFO_KIND]);
        if (streq(l.kind, "vrf") && li[IFLA_INFO_DATA] &&
            nla_parse_nested(vrf, IFLA_VRF_MAX, li[IFLA_INFO_DATA], NULL) >= 0 &&
            attr_u32(vrf[IFLA_VRF_TABLE]))
            l.vrf_table = nla_get_u32(vrf[IFLA_VRF_TABLE]);
        if (streq(l.kind, "vlan"))
            vlan_parse(li[IFLA_INFO_DATA], &l);
        if (streq(l.kind, "macvlan") || streq(l.kind, "macvtap"))
            link_settings_parse_macvlan(li[IFLA_INFO_DATA], &l.settings);
    }
    link_settings_parse(ifi, tb, &l.settings);
    copy_str(bus, sizeof(bus), tb[IFLA_PARENT_DEV_BUS_NAME]);
    copy_str(dev, sizeof(dev), tb[IFLA_PARENT_DEV_NAME]);
    if (dev[0])
        snprintf(l.parent, sizeof(l.parent), "%s/%s", bus, dev);
    if (attr_u32(tb[IFLA_LINK]))
        l.link = (int)nla_get_u32(tb[IFLA_LINK]);
    if (attr_u32(tb[IFLA_LINK_NETNSID])) {
        l.link_netnsid = (int)nla_get_s32(tb[IFLA_LINK_NETNSID]);
        if (l.link_netnsid < 0) /* present: another namespace, whatever the value */
            l.link_netnsid = LINK_NETNSID_UNASSIGNED;
    }
    if (attr_u32(tb[IFLA_MTU]))
        l.mtu = nla_get_u32(tb[IFLA_MTU]);
    if (tb[IFLA_OPERSTATE] && nla_len(tb[IFLA_OPERSTATE]) == 1)
        l.operstate = nla_get_u8(tb[IFLA_OPERSTATE]);
    if (tb[IFLA_PERM_ADDRESS] && nla_len(tb[IFLA_PERM_ADDRESS]) == 6)
        memcpy(l.perm, nla_data(tb[IFLA_PERM_ADDRESS]), 6);
    if (tb[IFLA_PROP_LIST]) {
        struct nlattr *a;
        int rem;
        nla_for_each_nested(a, tb[IFLA_PROP_LIST], rem) l.n_altnames +=
            nla_type(a) == IFLA_ALT_IFNAME;
    }
    if (tb[IFLA_ADDRESS] && nla_len(tb[IFLA_ADDRESS]) == 6) {
        memcpy(l.mac, nla_data(tb[IFLA_ADDRESS]), 6);
        l.has_mac = true;
    }
    *ret = l;
    return 0;
}

typedef struct LinkList {
    NetlinkArray a;          /* of Link; first: netlink_array_reset() takes the list */
    const char *want_parent; /* keep only links with this parent (NULL: all) */
} LinkList;

static int on_link(struct nl_msg *msg, void *arg) {
    LinkList *d = arg;
    Link l;

    if (link_parse(nlmsg_hdr(msg), &l) < 0)
        return NL_SKIP;
    if (d->want_parent && !streq(l.parent, d->want_parent))
        return NL_OK;
    return netlink_array_add(&d->a, &l) < 0 ? NL_SKIP : NL_OK;
}

int link_dump(Netlink *nl, const char *want_parent, Link **ret, size_t *ret_n) {
    return link_dump_in(nl, LINK_NETNSID_SELF, want_parent, ret, ret_n);
}

int link_dump_in(Netlink *nl, int target_nsid, const char *want_parent, Link **ret, size_t *ret_n) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    LinkList d = {.a = NETLINK_ARRAY_INIT(Link, DUMP_MAX), .want_parent = want_parent};
    int r;

    if ((want_parent && !*want_parent) || target_nsid < LINK_NETNSID_SELF)
        return -EINVAL;
    r = netlink_dump_in(nl, RTM_GETLINK, &ifi, sizeof(ifi), target_nsid, on_link,
                        netlink_array_reset, &d);
    r = netlink_array_result(&d.a, r);
    if (r < 0)
        return r;
    *ret = d.a.v;
    *ret_n = d.a.n;
    return 0;
}

int link_get_msg(int ifindex, const char *name, int target_nsid, struct nl_msg **ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_GETLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};

    if (!m)
        return -ENOMEM;
    /* no counters: nothing here reads them, and a driver may pay to gather them */
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0 ||
        (name && nla_put_string(m, IFLA_IFNAME, name) < 0) ||
        (target_nsid >= 0 && nla_put_s32(m, IFLA_TARGET_NETNSID, target_nsid) < 0))
        return -ENOMEM;
    *ret = TAKE_PTR(m);
    return 0;
}

static int get_one(Netlink *nl, int ifindex, const char *name, int target_nsid, Link *ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    LinkList d = {.a = NETLINK_ARRAY_INIT(Link, DUMP_MAX)};
    int r;

    r = link_get_msg(ifindex, name, target_nsid, &m);
    r = r ?: netlink_get(nl, m, on_link, &d);
    if (r >= 0 && d.a.n == 0)
        r = d.a.err < 0 ? d.a.err : -ENODEV;
    if (r >= 0)
        *ret = *(Link *)d.a.v;
    free(d.a.v);
    /* some kernels answer an unknown name with ENOENT */
    return r == -ENOENT ? -ENODEV : r;
}

/* A link's reply; the first one counts (a GET has one). */
static int on_link_reply(struct nl_msg *msg, void *arg) {
    LinkReply *r = arg;
    Link l;

    if (r->got)
        return NL_SKIP;
    if (link_parse(nlmsg_hdr(msg), &l) < 0) {
        r->err = -EBADMSG;
        return NL_SKIP;
    }
    r->link = l;
    r->got = true;
    return NL_OK;
}

/* The largest reply of a link GET we plan room for (a link with many
 * alternative names may be larger: the kernel still takes it into an
 * emptier queue). */
#define LINK_REPLY_MAX 8192

int link_get_batch(NetlinkBatch *b, int ifindex, const char *name, int target_nsid, LinkReply *ret,
                   const char *what, const void *tag) {
    struct nl_msg *m = NULL;
    int r;

    if (ifindex <= 0 && (!name || !*name || strlen(name) >= IF_NAMESIZE))
        return ifindex <= 0 && !name ? -ENODEV : -EINVAL;
    if (target_nsid < LINK_NETNSID_SELF)
        return -EINVAL;
    *ret = (LinkReply){0};
    r = link_get_msg(ifindex > 0 ? ifindex : 0, ifindex > 0 ? NULL : name, target_nsid, &m);
    if (r < 0)
        return r;
    return netlink_batch_add_get(b, m, on_link_reply, ret, LINK_REPLY_MAX, what, tag);
}

int link_reply_result(const NetlinkBatchEntry *e, const LinkReply *r) {
    int k = e->err;

    if (k >= 0 && !r->got)
        k = r->err < 0 ? r->err : -ENODEV;
    /* some kernels answer an unknown name with ENOENT */
    return k == -ENOENT ? -ENODEV : k;
}

int link_get(Netlink *nl, int ifindex, Link *ret) {
    return link_get_in(nl, ifindex, -1, ret);
}

int link_get_in(Netlink *nl, int ifindex, int target_nsid, Link *ret) {
    if (ifindex <= 0 || !ret)
        return -ENODEV;
    if (target_nsid < LINK_NETNSID_SELF)
        return -EINVAL; /* no id: no way to ask that namespace, and never nl's own */
    return get_one(nl, ifindex, NULL, target_nsid, ret);
}

int link_get_by_name(Netlink *nl, const char *name, Link *ret) {
    if (!name || !*name || strlen(name) >= IF_NAMESIZE || !ret)
        return -EINVAL;
    return get_one(nl, 0, name, -1, ret);
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
        nlmsg_parse(h, sizeof(struct rtgenmsg), tb, NETNSA_MAX, NULL) < 0 || !tb[NETNSA_NSID] ||
        nla_len(tb[NETNSA_NSID]) != 4)
        return NL_SKIP;
    a->nsid = nla_get_s32(tb[NETNSA_NSID]);
    a->got = true;
    return NL_OK;
}

/* Asks the kernel for the id this namespace has for another one, named by ATTR
 * (NETNSA_FD: a namespace fd; NETNSA_NSID: an id): -ENOENT where it has none. */
static int nsid_ask(Netlink *nl, int attr, uint32_t value, NsidAnswer *a) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_GETNSID, 0);
    struct rtgenmsg g = {.rtgen_family = AF_UNSPEC};

    if (!m)
        return -ENOMEM;
    if (nlmsg_append(m, &g, sizeof(g), NLMSG_ALIGNTO) < 0 || nla_put_u32(m, attr, value) < 0)
        return -ENOMEM;
    return netlink_get(nl, m, on_nsid, a);
}

int netlink_nsid(Netlink *nl, int netns_fd, int *ret) {
    NsidAnswer a = {.nsid = -1};
    int r;

    if (netns_fd < 0)
        return -EBADF;
    r = nsid_ask(nl, NETNSA_FD, (uint32_t)netns_fd, &a);
    if (r < 0)
        return r;
    if (!a.got)
        return -EBADMSG;
    *ret = a.nsid < 0 ? -1 : a.nsid;
    return 0;
}

int netlink_nsid_alive(Netlink *nl, int nsid) {
    NsidAnswer a = {.nsid = -1};
    int r;

    if (nsid < 0)
        return 0;
    r = nsid_ask(nl, NETNSA_NSID, (uint32_t)nsid, &a);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    return a.got ? 1 : -EBADMSG;
}

static int on_nsid_entry(struct nl_msg *msg, void *arg) {
    NsidAnswer a = {.nsid = -1};

    if (on_nsid(msg, &a) != NL_OK || a.nsid < 0)
        return NL_SKIP;
    return netlink_array_add(arg, &a.nsid) < 0 ? NL_SKIP : NL_OK;
}

int netlink_nsid_list(Netlink *nl, int **ret, size_t *ret_n) {
    struct rtgenmsg g = {.rtgen_family = AF_UNSPEC};
    NetlinkArray l = NETLINK_ARRAY_INIT(int, NSID_MAX);
    int r;

    if (!ret || !ret_n)
        return -EINVAL;
    r = netlink_dump(nl, RTM_GETNSID, &g, sizeof(g), on_nsid_entry, netlink_array_reset, &l);
    r = netlink_array_result(&l, r);
    if (r < 0)
        return r;
    *ret = l.v;
    *ret_n = l.n;
    return 0;
}

static int change_build(struct nl_msg *m, int ifindex, const LinkChange *c) {
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};

    if (c->state == LINK_SET_UP || c->state == LINK_SET_DOWN) {
        ifi.ifi_change = IFF_UP;
        ifi.ifi_flags = c->state == LINK_SET_UP ? IFF_UP : 0;
    }
    if (c->settings) {
        ifi.ifi_change |= LINK_SETTABLE_FLAGS;
        ifi.ifi_flags |= c->settings->flags & LINK_SETTABLE_FLAGS;
    }
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0)
        return -ENOMEM;
    /* IFLA_IFNAME next to IFLA_NET_NS_FD: the kernel renames inside the
     * target, so the host never sees the new name nor a temporary one */
    if ((c->netns_fd >= 0 && nla_put_u32(m, IFLA_NET_NS_FD, (uint32_t)c->netns_fd) < 0) ||
        (c->name && nla_put_string(m, IFLA_IFNAME, c->name) < 0) ||
        (c->mtu && nla_put_u32(m, IFLA_MTU, c->mtu) < 0) ||
        (c->alias && nla_put(m, IFLA_IFALIAS, (int)strlen(c->alias), c->alias) < 0) ||
        (c->mac && nla_put(m, IFLA_ADDRESS, 6, c->mac) < 0) ||
        (c->master >= 0 && nla_put_u32(m, IFLA_MASTER, (uint32_t)c->master) < 0) ||
        (c->settings && link_settings_put(m, c->settings) < 0))
        return -ENOMEM;
    return 0;
}

int link_change_msg(int ifindex, const LinkChange *c, struct nl_msg **ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
    int r;

    if (!m)
        return -ENOMEM;
    if (ifindex <= 0)
        return -ENODEV;
    /* a name nla_put_string() would send and the kernel truncate or refuse;
     * IFALIASZ counts the terminating NUL */
    if ((c->name && !netlink_ifname_valid(c->name)) || (c->alias && strlen(c->alias) >= 256))
        return -EINVAL;
    r = change_build(m, ifindex, c);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(m);
    return 0;
}

int link_change(Netlink *nl, int ifindex, const LinkChange *c) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = NULL;
    int r = link_change_msg(ifindex, c, &m);

    return r ?: netlink_request(nl, m);
}

int link_change_batch(NetlinkBatch *b, int ifindex, const LinkChange *c, const char *what,
                      const void *tag) {
    struct nl_msg *m = NULL;
    int r = link_change_msg(ifindex, c, &m);

    return r < 0 ? r : netlink_batch_add(b, m, what, tag);
}

int link_move(Netlink *nl, int ifindex, Netlink *to_nl, int netns_fd, const char *newname,
              const LinkChange *more) {
    LinkChange c = LINK_CHANGE_INIT;
    Link l;
    int r;

    if (netns_fd < 0)
        return -EBADF;
    if (newname && !netlink_ifname_valid(newname))
        return -EINVAL;
    if (more)
        c = *more;
    c.netns_fd = netns_fd;
    c.name = newname;
    /* a taken name fails before anything changes, in the common case */
    if (newname && to_nl) {
        r = link_get_by_name(to_nl, newname, &l);
        if (r >= 0)
            return -EEXIST;
        if (r != -ENODEV)
            return r;
    }
    return link_change(nl, ifindex, &c);
}

typedef struct AltNames {
    char **names;
    int err;
    bool got;
} AltNames;

static int on_altnames(struct nl_msg *msg, void *arg) {
    struct nlmsghdr *h = nlmsg_hdr(msg);
    struct nlattr *tb[IFLA_MAX + 1], *a;
    AltNames *an = arg;
    int rem;

    if (h->nlmsg_type != RTM_NEWLINK ||
        nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
        return NL_SKIP;
    an->got = true;
    if (!tb[IFLA_PROP_LIST])
        return NL_OK;
    nla_for_each_nested(a, tb[IFLA_PROP_LIST], rem) {
        if (nla_type(a) != IFLA_ALT_IFNAME || nla_len(a) < 2 || nla_len(a) > ALTIFNAMSIZ)
            continue;
        char name[ALTIFNAMSIZ];
        nla_strlcpy(name, a, sizeof(name));
        if (!an->err && strv_push(&an->names, name) < 0)
            an->err = -ENOMEM;
    }
    return NL_OK;
}

int link_altnames(Netlink *nl, int ifindex, char ***ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_GETLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
    AltNames an = {0};
    int r;

    if (!m)
        return -ENOMEM;
    if (ifindex <= 0)
        return -ENODEV;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
        return -ENOMEM;
    r = netlink_get(nl, m, on_altnames, &an);
    if (r >= 0 && !an.got)
        r = -ENODEV;
    if (r >= 0 && an.err < 0)
        r = an.err;
    if (r >= 0 && !an.names && !(an.names = calloc(1, sizeof(char *))))
        r = -ENOMEM;
    if (r < 0) {
        strv_free(an.names);
        return r == -ENOENT ? -ENODEV : r;
    }
    *ret = an.names;
    return 0;
}

int link_altnames_change(Netlink *nl, int ifindex, char *const *names, bool add) {
    /* libnl's messages are a page unless asked: room for every name */
    size_t size = 4096 + strv_length((char **)names) * NLA_ALIGN(NLA_HDRLEN + ALTIFNAMSIZ);
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_size(size);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};
    struct nlattr *list;

    if (!m || !nlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, add ? RTM_NEWLINKPROP : RTM_DELLINKPROP, 0,
                         NLM_F_REQUEST | (add ? NLM_F_EXCL : 0)))
        return -ENOMEM;
    if (ifindex <= 0)
        return -ENODEV;
    if (!names || !names[0])
        return 0;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        !(list = nla_nest_start(m, IFLA_PROP_LIST)))
        return -ENOMEM;
    for (char *const *n = names; *n; n++) {
        if (!**n || strlen(*n) >= ALTIFNAMSIZ)
            return -EINVAL;
        if (nla_put_string(m, IFLA_ALT_IFNAME, *n) < 0)
            return -ENOMEM;
    }
    nla_nest_end(m, list);
    return netlink_request(nl, m);
}

int link_delete(Netlink *nl, int ifindex) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_DELLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};

    if (!m)
        return -ENOMEM;
    if (ifindex <= 0)
        return -ENODEV;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0)
        return -ENOMEM;
    return netlink_request(nl, m);
}

int veth_add(Netlink *nl, const char *a, const char *b) {
    _cleanup_(nlmsg_freep) struct nl_msg *m =
        nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlattr *info, *data, *peer;

    if (!m)
        return -ENOMEM;
    if (!netlink_ifname_valid(a) || !netlink_ifname_valid(b))
        return -EINVAL;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        nla_put_string(m, IFLA_IFNAME, a) < 0 || !(info = nla_nest_start(m, IFLA_LINKINFO)) ||
        nla_put_string(m, IFLA_INFO_KIND, "veth") < 0 ||
        !(data = nla_nest_start(m, IFLA_INFO_DATA)) ||
        !(peer = nla_nest_start(m, VETH_INFO_PEER)) ||
        nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        nla_put_string(m, IFLA_IFNAME, b) < 0)
        return -ENOMEM;
    nla_nest_end(m, peer);
    nla_nest_end(m, data);
    nla_nest_end(m, info);
    /* no IFLA_NET_NS_*: the peer stays in nl's namespace */
    return netlink_request(nl, m);
}

/* A link of a kind that needs no more than a name and, for a stacked kind
 * (macvlan, ipvlan, vlan), its lower link. */
int link_add(Netlink *nl, const char *name, const char *kind, int lower_ifindex) {
    _cleanup_(nlmsg_freep) struct nl_msg *m =
        nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct nlattr *info;

    if (!m)
        return -ENOMEM;
    if (!netlink_ifname_valid(name) || !kind || !*kind || strlen(kind) >= 16 || lower_ifindex < 0)
        return -EINVAL;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        nla_put_string(m, IFLA_IFNAME, name) < 0 ||
        (lower_ifindex > 0 && nla_put_u32(m, IFLA_LINK, (uint32_t)lower_ifindex) < 0) ||
        !(info = nla_nest_start(m, IFLA_LINKINFO)) || nla_put_string(m, IFLA_INFO_KIND, kind) < 0)
        return -ENOMEM;
    nla_nest_end(m, info);
    /* a kernel without the driver: EOPNOTSUPP ("Unknown device type") */
    return netlink_request(nl, m);
}

int vlan_add(Netlink *nl, const char *name, int lower_ifindex, uint16_t proto, uint16_t id,
             uint32_t flags) {
    _cleanup_(nlmsg_freep) struct nl_msg *m =
        nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    struct ifla_vlan_flags f = {.flags = flags, .mask = flags};
    struct nlattr *info, *data;

    if (!m)
        return -ENOMEM;
    if (!netlink_ifname_valid(name) || lower_ifindex <= 0 || id == 0 || id >= 4095 ||
        (proto != ETH_P_8021Q && proto != ETH_P_8021AD))
        return -EINVAL;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        nla_put_string(m, IFLA_IFNAME, name) < 0 ||
        nla_put_u32(m, IFLA_LINK, (uint32_t)lower_ifindex) < 0 ||
        !(info = nla_nest_start(m, IFLA_LINKINFO)) ||
        nla_put_string(m, IFLA_INFO_KIND, "vlan") < 0 ||
        !(data = nla_nest_start(m, IFLA_INFO_DATA)) || nla_put_u16(m, IFLA_VLAN_ID, id) < 0 ||
        nla_put_u16(m, IFLA_VLAN_PROTOCOL, htons(proto)) < 0 ||
        (flags && nla_put(m, IFLA_VLAN_FLAGS, sizeof(f), &f) < 0))
        return -ENOMEM;
    nla_nest_end(m, data);
    nla_nest_end(m, info);
    return netlink_request(nl, m);
}

/* ---- the event monitor ---- */

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

static int on_event(struct nl_msg *msg, void *arg) {
    const struct nlmsghdr *h = nlmsg_hdr(msg);
    const struct sockaddr_nl *src = nlmsg_get_src(msg);
    LinkMonitor *m = arg;
    LinkEvent ev = {0};

    /* only the kernel speaks on RTNLGRP_LINK; ignore anything else */
    if (!src || src->nl_pid != 0)
        return NL_SKIP;
    /* AF_BRIDGE copies describe bridge ports: an AF_BRIDGE RTM_DELLINK means
     * "left the bridge", not "gone"; link_parse() keeps AF_UNSPEC only. A
     * message it cannot parse is skipped, not fatal for the monitor. */
    if (link_parse((struct nlmsghdr *)h, &ev.link) < 0)
        return NL_SKIP;
    ev.type = h->nlmsg_type == RTM_DELLINK ? LINK_EVENT_DEL : LINK_EVENT_NEW;
    m->fn(m->userdata, &ev);
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
    r = r ?: nl_socket_modify_cb(m->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, m);
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

int link_monitor_listen_all_nsid(LinkMonitor *m) {
    int on = 1, r;

    if (!m)
        return -EINVAL;
    /* another namespace's event comes with its id in a control message:
     * libnl reads one (growing its buffer) only with credentials passed,
     * and refuses the datagram otherwise (NLE_MSG_TRUNC) */
    r = nl_socket_set_passcred(m->sk, 1);
    if (r < 0)
        return netlink_errno(r);
    r = setsockopt(nl_socket_get_fd(m->sk), SOL_NETLINK, NETLINK_LISTEN_ALL_NSID, &on, sizeof(on));
    return r < 0 ? -errno : 0;
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
