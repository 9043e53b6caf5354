/* SPDX-License-Identifier: Apache-2.0 */
/* A link's settings that its holder can change (LinkSettings): read, put back, compared. */
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <stdio.h>

#include "netlink-private.h"

static bool attr_ok(const struct nlattr *a, int len) {
    return a && nla_len(a) == len;
}

static void xdp_parse(struct nlattr *xdp, LinkSettings *s) {
    struct nlattr *x[IFLA_XDP_MAX + 1];

    if (!xdp || nla_parse_nested(x, IFLA_XDP_MAX, xdp, NULL) < 0)
        return;
    if (attr_ok(x[IFLA_XDP_ATTACHED], 1))
        s->xdp_attached = nla_get_u8(x[IFLA_XDP_ATTACHED]);
    if (attr_ok(x[IFLA_XDP_SKB_PROG_ID], 4))
        s->xdp_skb_prog = nla_get_u32(x[IFLA_XDP_SKB_PROG_ID]);
    if (attr_ok(x[IFLA_XDP_DRV_PROG_ID], 4))
        s->xdp_drv_prog = nla_get_u32(x[IFLA_XDP_DRV_PROG_ID]);
    if (attr_ok(x[IFLA_XDP_HW_PROG_ID], 4))
        s->xdp_hw_prog = nla_get_u32(x[IFLA_XDP_HW_PROG_ID]);
    /* one mode attached: the kernel names its program only as PROG_ID */
    if (attr_ok(x[IFLA_XDP_PROG_ID], 4)) {
        uint32_t id = nla_get_u32(x[IFLA_XDP_PROG_ID]);
        if (s->xdp_attached == XDP_ATTACHED_SKB)
            s->xdp_skb_prog = id;
        else if (s->xdp_attached == XDP_ATTACHED_DRV)
            s->xdp_drv_prog = id;
        else if (s->xdp_attached == XDP_ATTACHED_HW)
            s->xdp_hw_prog = id;
    }
}

void link_settings_parse_macvlan(struct nlattr *data, LinkSettings *s) {
    struct nlattr *m[RG_IFLA_MACVLAN_MAX + 1];

    if (!data || nla_parse_nested(m, RG_IFLA_MACVLAN_MAX, data, NULL) < 0)
        return;
    if (attr_ok(m[IFLA_MACVLAN_MODE], 4))
        s->macvlan_mode = nla_get_u32(m[IFLA_MACVLAN_MODE]);
    if (attr_ok(m[IFLA_MACVLAN_FLAGS], 2))
        s->macvlan_flags = nla_get_u16(m[IFLA_MACVLAN_FLAGS]);
    if (attr_ok(m[IFLA_MACVLAN_MACADDR_COUNT], 4))
        s->macvlan_count = nla_get_u32(m[IFLA_MACVLAN_MACADDR_COUNT]);
    s->has_macvlan_bcqlen = attr_ok(m[IFLA_MACVLAN_BC_QUEUE_LEN], 4);
    if (s->has_macvlan_bcqlen)
        s->macvlan_bcqlen = nla_get_u32(m[IFLA_MACVLAN_BC_QUEUE_LEN]);
    s->has_macvlan_bc_cutoff = attr_ok(m[RG_IFLA_MACVLAN_BC_CUTOFF], 4);
    if (s->has_macvlan_bc_cutoff)
        s->macvlan_bc_cutoff = nla_get_s32(m[RG_IFLA_MACVLAN_BC_CUTOFF]);
}

void link_settings_parse(const struct ifinfomsg *ifi, struct nlattr **tb, LinkSettings *s) {
    s->flags = ifi->ifi_flags & LINK_SETTABLE_FLAGS;
    if ((s->has_txqlen = attr_ok(tb[IFLA_TXQLEN], 4)))
        s->txqlen = nla_get_u32(tb[IFLA_TXQLEN]);
    if ((s->has_group = attr_ok(tb[IFLA_GROUP], 4)))
        s->group = nla_get_u32(tb[IFLA_GROUP]);
    if ((s->has_linkmode = attr_ok(tb[IFLA_LINKMODE], 1)))
        s->linkmode = nla_get_u8(tb[IFLA_LINKMODE]);
    if ((s->has_broadcast = attr_ok(tb[IFLA_BROADCAST], 6)))
        memcpy(s->broadcast, nla_data(tb[IFLA_BROADCAST]), 6);
    if (attr_ok(tb[IFLA_GSO_MAX_SIZE], 4))
        s->gso_max_size = nla_get_u32(tb[IFLA_GSO_MAX_SIZE]);
    if (attr_ok(tb[IFLA_GSO_MAX_SEGS], 4))
        s->gso_max_segs = nla_get_u32(tb[IFLA_GSO_MAX_SEGS]);
    if (attr_ok(tb[IFLA_GRO_MAX_SIZE], 4))
        s->gro_max_size = nla_get_u32(tb[IFLA_GRO_MAX_SIZE]);
    if (attr_ok(tb[RG_IFLA_GSO_IPV4_MAX_SIZE], 4))
        s->gso_ipv4_max_size = nla_get_u32(tb[RG_IFLA_GSO_IPV4_MAX_SIZE]);
    if (attr_ok(tb[RG_IFLA_GRO_IPV4_MAX_SIZE], 4))
        s->gro_ipv4_max_size = nla_get_u32(tb[RG_IFLA_GRO_IPV4_MAX_SIZE]);
    s->carrier = attr_ok(tb[IFLA_CARRIER], 1) ? (int8_t) !!nla_get_u8(tb[IFLA_CARRIER]) : -1;
    s->proto_down =
        attr_ok(tb[IFLA_PROTO_DOWN], 1) ? (int8_t) !!nla_get_u8(tb[IFLA_PROTO_DOWN]) : -1;
    if (tb[IFLA_PROTO_DOWN_REASON]) {
        struct nlattr *r[IFLA_PROTO_DOWN_REASON_MAX + 1];
        if (nla_parse_nested(r, IFLA_PROTO_DOWN_REASON_MAX, tb[IFLA_PROTO_DOWN_REASON], NULL) >=
                0 &&
            attr_ok(r[IFLA_PROTO_DOWN_REASON_VALUE], 4))
            s->proto_down_reason = nla_get_u32(r[IFLA_PROTO_DOWN_REASON_VALUE]);
    }
    xdp_parse(tb[IFLA_XDP], s);
}

/* The settings one RTM_NEWLINK takes with the link's other changes: each
 * that was read (a kernel without one never reported it). */
int link_settings_put(struct nl_msg *m, const LinkSettings *s) {
    if ((s->has_txqlen && nla_put_u32(m, IFLA_TXQLEN, s->txqlen) < 0) ||
        (s->has_group && nla_put_u32(m, IFLA_GROUP, s->group) < 0) ||
        (s->has_linkmode && nla_put_u8(m, IFLA_LINKMODE, s->linkmode) < 0) ||
        (s->has_broadcast && nla_put(m, IFLA_BROADCAST, 6, s->broadcast) < 0) ||
        (s->gso_max_size && nla_put_u32(m, IFLA_GSO_MAX_SIZE, s->gso_max_size) < 0) ||
        (s->gso_max_segs && nla_put_u32(m, IFLA_GSO_MAX_SEGS, s->gso_max_segs) < 0) ||
        (s->gro_max_size && nla_put_u32(m, IFLA_GRO_MAX_SIZE, s->gro_max_size) < 0) ||
        (s->gso_ipv4_max_size &&
         nla_put_u32(m, RG_IFLA_GSO_IPV4_MAX_SIZE, s->gso_ipv4_max_size) < 0) ||
        (s->gro_ipv4_max_size &&
         nla_put_u32(m, RG_IFLA_GRO_IPV4_MAX_SIZE, s->gro_ipv4_max_size) < 0))
        return -ENOMEM;
    return 0;
}

static int setlink(Netlink *nl, int ifindex, int (*put)(struct nl_msg *m, const void *arg),
                   const void *arg) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = ifindex};

    if (!m)
        return -ENOMEM;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 || put(m, arg) < 0)
        return -ENOMEM;
    return netlink_request(nl, m);
}

/* IFLA_XDP {fd -1, flags: that mode}: that mode's program detached */
static int put_xdp_off(struct nl_msg *m, const void *arg) {
    struct nlattr *x = nla_nest_start(m, IFLA_XDP);

    if (!x || nla_put_s32(m, IFLA_XDP_FD, -1) < 0 ||
        nla_put_u32(m, IFLA_XDP_FLAGS, *(const uint32_t *)arg) < 0)
        return -ENOMEM;
    nla_nest_end(m, x);
    return 0;
}

typedef struct MacvlanRestore {
    const char *kind; /* "macvlan" or "macvtap" */
    const LinkSettings *want;
} MacvlanRestore;

static int put_macvlan(struct nl_msg *m, const void *arg) {
    const MacvlanRestore *mr = arg;
    const LinkSettings *s = mr->want;
    struct nlattr *li = nla_nest_start(m, IFLA_LINKINFO), *data;

    if (!li || nla_put_string(m, IFLA_INFO_KIND, mr->kind) < 0 ||
        !(data = nla_nest_start(m, IFLA_INFO_DATA)))
        return -ENOMEM;
    /* leaving source mode flushes the source list; in source mode SET with
     * no address empties it */
    if (nla_put_u32(m, IFLA_MACVLAN_MODE, s->macvlan_mode) < 0 ||
        nla_put_u16(m, IFLA_MACVLAN_FLAGS, s->macvlan_flags) < 0 ||
        (s->has_macvlan_bcqlen &&
         nla_put_u32(m, IFLA_MACVLAN_BC_QUEUE_LEN, s->macvlan_bcqlen) < 0) ||
        (s->has_macvlan_bc_cutoff &&
         nla_put_s32(m, RG_IFLA_MACVLAN_BC_CUTOFF, s->macvlan_bc_cutoff) < 0) ||
        (s->macvlan_mode == MACVLAN_MODE_SOURCE &&
         nla_put_u32(m, IFLA_MACVLAN_MACADDR_MODE, MACVLAN_MACADDR_SET) < 0))
        return -ENOMEM;
    nla_nest_end(m, data);
    nla_nest_end(m, li);
    return 0;
}

static int put_proto_down(struct nl_msg *m, const void *arg) {
    const LinkSettings *s = arg;
    struct nlattr *r = nla_nest_start(m, IFLA_PROTO_DOWN_REASON);

    /* every reason bit as recorded, then the state: the kernel keeps a link
     * down while a reason is set */
    if (!r || nla_put_u32(m, IFLA_PROTO_DOWN_REASON_MASK, UINT32_MAX) < 0 ||
        nla_put_u32(m, IFLA_PROTO_DOWN_REASON_VALUE, s->proto_down_reason) < 0)
        return -ENOMEM;
    nla_nest_end(m, r);
    return nla_put_u8(m, IFLA_PROTO_DOWN, (uint8_t)s->proto_down) < 0 ? -ENOMEM : 0;
}

static int put_carrier(struct nl_msg *m, const void *arg) {
    return nla_put_u8(m, IFLA_CARRIER, (uint8_t)((const LinkSettings *)arg)->carrier) < 0 ? -ENOMEM
                                                                                          : 0;
}

static bool macvlan_differs(const LinkSettings *was, const LinkSettings *now) {
    return was->macvlan_mode != now->macvlan_mode || was->macvlan_flags != now->macvlan_flags ||
           now->macvlan_count > 0 ||
           (was->has_macvlan_bcqlen && was->macvlan_bcqlen != now->macvlan_bcqlen) ||
           (was->has_macvlan_bc_cutoff && was->macvlan_bc_cutoff != now->macvlan_bc_cutoff);
}

int link_settings_restore(Netlink *nl, const Link *now, const LinkSettings *want,
                          const char **ret_step) {
    const LinkSettings *s = &now->settings;
    static const struct {
        uint32_t flag;
        const char *step;
    } modes[] = {
        {XDP_FLAGS_SKB_MODE, "detaching its generic XDP program"},
        {XDP_FLAGS_DRV_MODE, "detaching its driver XDP program"},
        {XDP_FLAGS_HW_MODE, "detaching its offloaded XDP program"},
    };
    const uint32_t ids[] = {s->xdp_skb_prog, s->xdp_drv_prog, s->xdp_hw_prog};
    int r;

    for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
        if (!ids[i])
            continue;
        *ret_step = modes[i].step;
        r = setlink(nl, now->ifindex, put_xdp_off, &modes[i].flag);
        if (r < 0)
            return r;
    }
    if (want->macvlan_mode && macvlan_differs(want, s)) {
        *ret_step = "setting its macvlan mode, flags and source list back";
        if (want->macvlan_count)
            return -EOPNOTSUPP; /* never recorded: nic_record refuses it */
        MacvlanRestore mr = {.kind = now->kind, .want = want};
        r = setlink(nl, now->ifindex, put_macvlan, &mr);
        if (r < 0)
            return r;
    }
    if (want->proto_down >= 0 && s->proto_down >= 0 &&
        (want->proto_down != s->proto_down || want->proto_down_reason != s->proto_down_reason)) {
        *ret_step = "setting its protocol-down state back";
        r = setlink(nl, now->ifindex, put_proto_down, want);
        if (r < 0 && r != -EOPNOTSUPP)
            return r;
    }
    if (want->carrier >= 0 && s->carrier >= 0 && want->carrier != s->carrier) {
        *ret_step = "setting its carrier back";
        r = setlink(nl, now->ifindex, put_carrier, want);
        if (r < 0 && r != -EOPNOTSUPP)
            return r;
    }
    *ret_step = NULL;
    return 0;
}

#define DIFF(cond, ...)                                                                            \
    do {                                                                                           \
        if ((cond) && k < n)                                                                       \
            k += (size_t)snprintf(buf + k, n - k, "%s" __VA_ARGS__);                               \
    } while (0)

bool link_settings_differ(const LinkSettings *was, const LinkSettings *now, char *buf, size_t n) {
    static const struct {
        unsigned bit;
        const char *name;
    } flags[] = {
        {IFF_PROMISC, "promisc"},     {IFF_ALLMULTI, "allmulticast"}, {IFF_NOARP, "noarp"},
        {IFF_MULTICAST, "multicast"}, {IFF_DEBUG, "debug"},           {IFF_DYNAMIC, "dynamic"},
        {IFF_PORTSEL, "portsel"},     {IFF_AUTOMEDIA, "automedia"},   {IFF_NOTRAILERS, "trailers"},
    };
    size_t k = 0;

    if (n)
        buf[0] = 0;
#define SEP (k ? ", " : "")
    for (size_t i = 0; i < ELEMENTSOF(flags); i++)
        DIFF((was->flags ^ now->flags) & flags[i].bit, "%s %s", SEP, flags[i].name,
             now->flags & flags[i].bit ? "on" : "off");
    DIFF(was->has_txqlen && was->txqlen != now->txqlen, "txqueuelen %u (was %u)", SEP, now->txqlen,
         was->txqlen);
    DIFF(was->has_group && was->group != now->group, "group %u (was %u)", SEP, now->group,
         was->group);
    DIFF(was->has_linkmode && was->linkmode != now->linkmode, "link mode %u (was %u)", SEP,
         now->linkmode, was->linkmode);
    DIFF(was->has_broadcast && memcmp(was->broadcast, now->broadcast, 6), "broadcast address", SEP);
    DIFF(was->gso_max_size && was->gso_max_size != now->gso_max_size, "gso_max_size %u (was %u)",
         SEP, now->gso_max_size, was->gso_max_size);
    DIFF(was->gso_max_segs && was->gso_max_segs != now->gso_max_segs, "gso_max_segs %u (was %u)",
         SEP, now->gso_max_segs, was->gso_max_segs);
    DIFF(was->gro_max_size && was->gro_max_size != now->gro_max_size, "gro_max_size %u (was %u)",
         SEP, now->gro_max_size, was->gro_max_size);
    DIFF(was->gso_ipv4_max_size && was->gso_ipv4_max_size != now->gso_ipv4_max_size,
         "gso_ipv4_max_size %u (was %u)", SEP, now->gso_ipv4_max_size, was->gso_ipv4_max_size);
    DIFF(was->gro_ipv4_max_size && was->gro_ipv4_max_size != now->gro_ipv4_max_size,
         "gro_ipv4_max_size %u (was %u)", SEP, now->gro_ipv4_max_size, was->gro_ipv4_max_size);
    DIFF(now->xdp_attached != XDP_ATTACHED_NONE, "an XDP program", SEP);
    DIFF(was->macvlan_mode && macvlan_differs(was, now), "macvlan mode %u flags %u, %u sources",
         SEP, now->macvlan_mode, now->macvlan_flags, now->macvlan_count);
    DIFF(was->proto_down >= 0 && now->proto_down >= 0 &&
             was->proto_down_reason != now->proto_down_reason,
         "protodown reasons %#x (was %#x)", SEP, now->proto_down_reason, was->proto_down_reason);
    DIFF(was->proto_down >= 0 && now->proto_down >= 0 && was->proto_down != now->proto_down,
         "protodown %s", SEP, now->proto_down ? "on" : "off");
#undef SEP
    return k > 0;
}

/* Is l stacked on rail: its lower is the rail, or (the rail a macvlan) it
 * is a macvlan or ipvlan the kernel put on the rail's own lower when the pod
 * stacked it on the rail, which would keep the pod on the node's link once
 * the rail is home? rail_nsid: the id the rail's namespace has in l's
 * (LINK_NETNSID_SELF: the same one); the rail and its lower in one. */
static bool stacked_on(const Link *l, const Link *rail, int rail_nsid) {
    if (rail_nsid == LINK_NETNSID_SELF && l->ifindex == rail->ifindex)
        return false;
    if (l->link == rail->ifindex && l->link_netnsid == rail_nsid)
        return true;
    if (!streq(rail->kind, "macvlan") && !streq(rail->kind, "macvtap"))
        return false;
    if (rail->link <= 0 ||
        l->link_netnsid != (rail_nsid == LINK_NETNSID_SELF ? rail->link_netnsid : rail_nsid))
        return false;
    if (rail_nsid != LINK_NETNSID_SELF && rail->link_netnsid != LINK_NETNSID_SELF)
        return false; /* the lower in a third namespace: no id for it here */
    return l->link == rail->link && (streq(l->kind, "macvlan") || streq(l->kind, "macvtap") ||
                                     streq(l->kind, "ipvlan") || streq(l->kind, "ipvtap"));
}

static bool spared(int ifindex, const int *spare, size_t n_spare) {
    for (size_t i = 0; i < n_spare; i++)
        if (spare[i] > 0 && spare[i] == ifindex)
            return true;
    return false;
}

/* Delete one upper, counted in *n; one already gone went with an upper of
 * its own deleted before it. */
static int upper_delete(Netlink *nl, int ifindex, unsigned *n) {
    int r = link_delete(nl, ifindex);

    if (r == -ENODEV)
        return 0;
    if (r >= 0)
        (*n)++;
    return r;
}

/* Delete the links of v (nl's) stacked on rail, but not the spared ones. */
static int uppers_delete(Netlink *nl, const Link *v, size_t k, const Link *rail, int rail_nsid,
                         const int *spare, size_t n_spare, unsigned *ret_n) {
    unsigned n = 0;
    int r = 0;

    for (size_t i = 0; r >= 0 && i < k; i++) {
        if (!stacked_on(&v[i], rail, rail_nsid) || spared(v[i].ifindex, spare, n_spare))
            continue;
        r = upper_delete(nl, v[i].ifindex, &n);
    }
    if (r >= 0)
        *ret_n = n;
    return r;
}

int link_delete_uppers(Netlink *nl, int ifindex, const int *spare, size_t n_spare,
                       unsigned *ret_n) {
    _cleanup_free_ Link *v = NULL;
    const Link *rail = NULL;
    size_t k = 0;
    int r;

    r = link_dump(nl, NULL, &v, &k);
    for (size_t i = 0; r >= 0 && i < k; i++)
        if (v[i].ifindex == ifindex)
            rail = &v[i];
    if (r >= 0 && !rail)
        r = -ENODEV;
    if (r >= 0)
        r = uppers_delete(nl, v, k, rail, LINK_NETNSID_SELF, spare, n_spare, ret_n);
    return r;
}

int link_delete_uppers_seen(Netlink *nl, int ifindex, const Link *seen, size_t k, const int *spare,
                            size_t n_spare, unsigned *ret_n) {
    const Link *was = NULL;
    Link rail, now;
    unsigned n = 0;
    bool read = false;
    int r = 0;

    for (size_t i = 0; i < k; i++)
        if (seen[i].ifindex == ifindex)
            was = &seen[i];
    if (!was)
        return -ENOENT;
    for (size_t i = 0; r >= 0 && i < k; i++) {
        if (!stacked_on(&seen[i], was, LINK_NETNSID_SELF) ||
            spared(seen[i].ifindex, spare, n_spare))
            continue;
        /* the look is old: the rail and the link as they are now decide */
        if (!read && (r = link_get(nl, ifindex, &rail)) < 0)
            break;
        read = true;
        r = link_get(nl, seen[i].ifindex, &now);
        if (r == -ENODEV) {
            r = 0;
            continue;
        }
        if (r < 0 || !stacked_on(&now, &rail, LINK_NETNSID_SELF) ||
            spared(now.ifindex, spare, n_spare))
            continue;
        r = upper_delete(nl, now.ifindex, &n);
    }
    if (r >= 0)
        *ret_n = n;
    return r;
}

int link_delete_uppers_from(Netlink *nl, int rail_netns_fd, const Link *rail, const int *spare,
                            size_t n_spare, unsigned *ret_n) {
    _cleanup_free_ Link *v = NULL;
    size_t k = 0;
    int id = -1, r;

    /* dumped first: a link of nl's whose lower is in the rail's namespace
     * makes the kernel give that namespace an id here as it reports it */
    r = link_dump(nl, NULL, &v, &k);
    if (r >= 0)
        r = netlink_nsid(nl, rail_netns_fd, &id);
    if (r < 0)
        return r;
    if (id < 0) {
        *ret_n = 0; /* no id: no link of nl's names anything there */
        return 0;
    }
    return uppers_delete(nl, v, k, rail, id, spare, n_spare, ret_n);
}
