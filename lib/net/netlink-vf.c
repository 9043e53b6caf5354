/* SPDX-License-Identifier: Apache-2.0 */
/* SR-IOV VF admin state: read and set through the PF (IFLA_VFINFO_LIST). */
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "netlink-private.h"

/*
 * Built with libnl's nla_* on this layer's connection rather than with
 * libnl-route's rtnl_link_vf_*: those need a whole rtnl_link of the PF read
 * and diffed into a change request sent on libnl's own terms, while here a
 * request is one setting on a socket connected to the kernel, with its
 * extended ack kept, like every other change of the layer.
 */

bool vf_state_has(const VfState *s, VfField field) {
    switch (field) {
    case VF_FIELD_MAC:
        return s->has_mac;
    case VF_FIELD_SPOOFCHK:
        return s->spoofchk >= 0;
    case VF_FIELD_TRUST:
        return s->trust >= 0;
    case VF_FIELD_LINK_STATE:
        return s->link_state >= 0;
    default:
        return false;
    }
}

bool vf_state_same(const VfState *a, const VfState *b, VfField field) {
    if (!vf_state_has(a, field) || !vf_state_has(b, field))
        return false;
    switch (field) {
    case VF_FIELD_MAC:
        return memcmp(a->mac, b->mac, sizeof(a->mac)) == 0;
    case VF_FIELD_SPOOFCHK:
        return a->spoofchk == b->spoofchk;
    case VF_FIELD_TRUST:
        return a->trust == b->trust;
    case VF_FIELD_LINK_STATE:
        return a->link_state == b->link_state;
    default:
        return false;
    }
}

void vf_state_copy(VfState *dst, const VfState *src, VfField field) {
    switch (field) {
    case VF_FIELD_MAC:
        dst->has_mac = src->has_mac;
        memcpy(dst->mac, src->mac, sizeof(dst->mac));
        break;
    case VF_FIELD_SPOOFCHK:
        dst->spoofchk = src->spoofchk;
        break;
    case VF_FIELD_TRUST:
        dst->trust = src->trust;
        break;
    case VF_FIELD_LINK_STATE:
        dst->link_state = src->link_state;
        break;
    default:
        break;
    }
}

typedef struct VfAnswer {
    unsigned vf;
    VfState state;
    bool got_link; /* the PF answered */
    bool found;    /* and listed the VF */
} VfAnswer;

/* A u32 setting of struct { __u32 vf; __u32 setting; } for VF vf: 0, 1, or
 * -1 (not this VF's, or what the kernel sends when the driver is silent). */
static int vf_u32(const struct nlattr *a, unsigned vf, unsigned max) {
    const uint32_t *v = a ? nla_data(a) : NULL;

    if (!a || nla_len(a) < (int)(2 * sizeof(uint32_t)) || v[0] != vf || v[1] > max)
        return -1;
    return (int)v[1];
}

static void vf_parse(const struct nlattr *info, VfAnswer *ans) {
    struct nlattr *tb[IFLA_VF_MAX + 1];
    const struct ifla_vf_mac *mac;

    if (nla_parse_nested(tb, IFLA_VF_MAX, (struct nlattr *)info, NULL) < 0 || !tb[IFLA_VF_MAC] ||
        nla_len(tb[IFLA_VF_MAC]) < (int)sizeof(*mac))
        return;
    mac = nla_data(tb[IFLA_VF_MAC]);
    if (mac->vf != ans->vf)
        return;
    ans->found = true;
    ans->state.has_mac = true;
    memcpy(ans->state.mac, mac->mac, sizeof(ans->state.mac));
    ans->state.spoofchk = vf_u32(tb[IFLA_VF_SPOOFCHK], ans->vf, 1);
    ans->state.trust = vf_u32(tb[IFLA_VF_TRUST], ans->vf, 1);
    ans->state.link_state = vf_u32(tb[IFLA_VF_LINK_STATE], ans->vf, IFLA_VF_LINK_STATE_DISABLE);
}

static int on_vfinfo(struct nl_msg *msg, void *arg) {
    struct nlmsghdr *h = nlmsg_hdr(msg);
    struct nlattr *tb[IFLA_MAX + 1], *a;
    VfAnswer *ans = arg;
    int rem;

    if (h->nlmsg_type != RTM_NEWLINK ||
        nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
        return NL_SKIP;
    ans->got_link = true;
    if (!tb[IFLA_VFINFO_LIST])
        return NL_OK;
    nla_for_each_nested(a, tb[IFLA_VFINFO_LIST], rem) {
        if (nla_type(a) == IFLA_VF_INFO && !ans->found)
            vf_parse(a, ans);
    }
    return NL_OK;
}

int vf_state_get(Netlink *nl, int pf_ifindex, unsigned vf, VfState *ret) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_GETLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = pf_ifindex};
    VfAnswer ans = {.vf = vf, .state = VF_STATE_NONE};
    int r;

    if (!m)
        return -ENOMEM;
    if (pf_ifindex <= 0 || !ret)
        return -ENODEV;
    /* the VF list without the per-VF statistics */
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS) < 0)
        return -ENOMEM;
    r = netlink_get(nl, m, on_vfinfo, &ans);
    if (r == -ENOENT)
        r = -ENODEV;
    if (r >= 0 && !ans.got_link)
        r = -ENODEV;
    if (r >= 0 && !ans.found)
        r = -ENOENT;
    if (r < 0)
        return r;
    *ret = ans.state;
    return 0;
}

static int vf_put(struct nl_msg *m, unsigned vf, VfField field, const VfState *v) {
    switch (field) {
    case VF_FIELD_MAC: {
        struct ifla_vf_mac a = {.vf = vf};
        memcpy(a.mac, v->mac, sizeof(v->mac));
        return nla_put(m, IFLA_VF_MAC, sizeof(a), &a);
    }
    case VF_FIELD_SPOOFCHK: {
        struct ifla_vf_spoofchk a = {.vf = vf, .setting = (uint32_t)v->spoofchk};
        return nla_put(m, IFLA_VF_SPOOFCHK, sizeof(a), &a);
    }
    case VF_FIELD_TRUST: {
        struct ifla_vf_trust a = {.vf = vf, .setting = (uint32_t)v->trust};
        return nla_put(m, IFLA_VF_TRUST, sizeof(a), &a);
    }
    case VF_FIELD_LINK_STATE: {
        struct ifla_vf_link_state a = {.vf = vf, .link_state = (uint32_t)v->link_state};
        return nla_put(m, IFLA_VF_LINK_STATE, sizeof(a), &a);
    }
    default:
        return -NLE_INVAL;
    }
}

int vf_state_set(Netlink *nl, int pf_ifindex, unsigned vf, VfField field, const VfState *value) {
    _cleanup_(nlmsg_freep) struct nl_msg *m = nlmsg_alloc_simple(RTM_SETLINK, 0);
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC, .ifi_index = pf_ifindex};
    struct nlattr *list, *info;

    if (!m)
        return -ENOMEM;
    if (pf_ifindex <= 0)
        return -ENODEV;
    if (!value || !vf_state_has(value, field) ||
        (field == VF_FIELD_LINK_STATE && value->link_state > IFLA_VF_LINK_STATE_DISABLE) ||
        ((field == VF_FIELD_SPOOFCHK || field == VF_FIELD_TRUST) &&
         (field == VF_FIELD_SPOOFCHK ? value->spoofchk : value->trust) > 1))
        return -EINVAL;
    if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
        !(list = nla_nest_start(m, IFLA_VFINFO_LIST)) ||
        !(info = nla_nest_start(m, IFLA_VF_INFO)) || vf_put(m, vf, field, value) < 0)
        return -ENOMEM;
    nla_nest_end(m, info);
    nla_nest_end(m, list);
    return netlink_request(nl, m);
}
