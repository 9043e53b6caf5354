/* SPDX-License-Identifier: Apache-2.0 */
/* One unit's NIC: record it, move it into the pod, configure it, put it back. */
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <stdio.h>

#include "anchor.h"
#include "bpflink.h"
#include "cidr.h"
#include "failpoint.h"
#include "locate.h"
#include "log.h"
#include "netlink.h"
#include "netns.h"
#include "nic.h"
#include "nswait.h"
#include "strv.h"
#include "sysfs.h"
#include "vf.h"

#define RULE_PRIORITY_BASE 1000 /* before main (32766), after local (0) */

/* The NIC's NAPI and queue settings (RPS, XPS, BQL, ...) as the host has
 * them, into n. A sysfs that is not the host namespace's shows no such
 * link: said in the log, and lent unwatched there. */
static int sysfs_record(const char *sys, const Link *l, AttachedNic *n, RgError *err) {
    int r;

    r = netdev_sysfs_get(sys ?: "/sys", l->name, l->ifindex, &n->sysfs);
    if (r == -ENODEV) {
        log_warn(NULL, n->unit,
                 "NIC %s: %s/class/net does not show it (a sysfs of another network "
                 "namespace): its NAPI and queue settings (RPS, XPS, BQL) are not recorded, "
                 "and what a pod sets there is not put back",
                 l->name, sys ?: "/sys");
        return 0;
    }
    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: cannot read the queue settings of NIC %s under %s/class/net: "
                        "%s; nothing was moved",
                        n->unit, l->name, sys ?: "/sys", strerror(-r));
    n->has_sysfs = true;
    return 0;
}

/* The NIC's n-tuple rules and RSS flow hash fields (ethtool's ioctl: no
 * netlink request reads them), where its driver has them, into n. */
static int rxnfc_record(const Link *l, AttachedNic *n, RgError *err) {
    int r = rxnfc_get(l->name, l->ifindex, &n->rxnfc);

    if (r == -E2BIG)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s holds more than %d n-tuple rules, more than railgate "
                        "keeps to put back; nothing was moved",
                        n->unit, l->name, RXNFC_RULES_MAX);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: cannot read the n-tuple rules and flow hash fields of NIC %s: "
                        "%s; nothing was moved",
                        n->unit, l->name, strerror(-r));
    n->has_rxnfc = rxnfc_any(&n->rxnfc);
    if (rxnfc_rss_contexts(l->name, l->ifindex) > 0)
        log_warn(NULL, n->unit,
                 "NIC %s keeps extra RSS contexts, which railgate cannot list on this kernel: "
                 "a context a pod adds stays on it when it comes home",
                 l->name);
    return 0;
}

/* The connection to ethtool's family on the host: -EOPNOTSUPP on a kernel
 * without it (before 5.6). */
static int host_ethtool(NicNs *ns, EthtoolConn **ret) {
    int r;

    if (!ns->host_ethtool) {
        r = ethtool_open(-1, &ns->host_ethtool);
        if (r < 0)
            return r;
    }
    *ret = ns->host_ethtool;
    return 0;
}

/* The NIC's ethtool state as the host has it, into n. What this kernel
 * cannot read over netlink (RSS before 6.2) is said in the log: it is lent
 * as it is, and a DEL cannot tell whether the pod changed it. */
static int ethtool_record(NicNs *ns, const Link *l, NicPrefetch *pre, AttachedNic *n,
                          RgError *err) {
    EthtoolConn *c = NULL;
    RgError e = {0};
    char pieces[128];
    int r;

    if (pre && pre->ethtool_asked) {
        /* read with every NIC's in one batch: taken from there */
        pre->ethtool_asked = false;
        r = pre->ethtool_r;
        e = pre->ethtool_err;
        if (r >= 0)
            n->ethtool = pre->ethtool;
        pre->ethtool = (EthtoolState){0};
    } else
        r = host_ethtool(ns, &c);
    if (r == -EOPNOTSUPP) {
        log_warn(NULL, n->unit,
                 "NIC %s: this kernel has no ethtool netlink family: its ethtool state is not "
                 "recorded",
                 l->name);
        return 0;
    }
    if (r >= 0 && c)
        r = ethtool_state_get(c, l->ifindex, &n->ethtool, &e);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: cannot read the ethtool state of NIC %s: %s; nothing was moved",
                        n->unit, l->name, e.msg[0] ? e.msg : strerror(-r));
    n->has_ethtool = true;
    unsigned blind = ethtool_state_unreadable(&n->ethtool);
    if (n->has_rxnfc && n->rxnfc.have_rss)
        blind &= ~(1u << ETHTOOL_RSS); /* read and set back through the ioctl */
    if (blind)
        log_warn(NULL, n->unit,
                 "NIC %s: this kernel cannot read its ethtool %s over netlink: what a pod sets "
                 "there is not put back",
                 l->name, ethtool_pieces_to_string(blind, pieces, sizeof(pieces)));
    return 0;
}

/* Batches for every NIC of the plan before each is looked at: the host's
 * links by name (A), the veths' peers (B), the ethtool states (C). A part
 * that cannot be asked is left to nic_record(). */
static bool peer_wanted(const Unit *u, const NicPrefetch *pre) {
    const Link *l = &pre->link;

    return pre->link_asked && pre->link_r >= 0 && streq(l->name, u->netdev) && !l->parent[0] &&
           streq(l->kind, "veth") && l->link > 0 && l->link_netnsid != LINK_NETNSID_UNASSIGNED;
}

/* The host's links by name (A), or with peers the veths' peers (B). */
static void prefetch_gets(NicNs *ns, const Unit *const *units, size_t n, NicPrefetch *pre,
                          bool peers) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    _cleanup_free_ LinkReply *rep = calloc(n ? n : 1, sizeof(*rep));
    _cleanup_free_ int *entry = calloc(n ? n : 1, sizeof(*entry));

    if (!rep || !entry || netlink_batch_new(ns->host, &b) < 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (peers)
            entry[i] = peer_wanted(units[i], &pre[i])
                           ? link_get_batch(b, pre[i].link.link, NULL, pre[i].link.link_netnsid,
                                            &rep[i], "reading", NULL)
                           : -1;
        else
            entry[i] = units[i]->netdev[0]
                           ? link_get_batch(b, 0, units[i]->netdev, LINK_NETNSID_SELF, &rep[i],
                                            "reading", NULL)
                           : -1;
    (void)netlink_batch_commit(b);
    for (size_t i = 0; i < n; i++) {
        const NetlinkBatchEntry *e;

        if (entry[i] < 0)
            continue;
        e = netlink_batch_entry(b, (size_t)entry[i]);
        if (peers) {
            pre[i].peer_asked = true;
            pre[i].peer_r = link_reply_result(e, &rep[i]);
            pre[i].peer = rep[i].link;
        } else {
            pre[i].link_asked = true;
            pre[i].link_r = link_reply_result(e, &rep[i]);
            pre[i].link = rep[i].link;
            snprintf(pre[i].link_ack, sizeof(pre[i].link_ack), "%s", e->ext_ack);
        }
    }
}

static void prefetch_ethtool(NicNs *ns, const Unit *const *units, size_t n, NicPrefetch *pre) {
    _cleanup_free_ int *ifx = calloc(n ? n : 1, sizeof(*ifx));
    _cleanup_free_ size_t *at = calloc(n ? n : 1, sizeof(*at));
    _cleanup_free_ EthtoolState *st = calloc(n ? n : 1, sizeof(*st));
    _cleanup_free_ int *r = calloc(n ? n : 1, sizeof(*r));
    _cleanup_free_ RgError *e = calloc(n ? n : 1, sizeof(*e));
    EthtoolConn *c;
    size_t k = 0;

    if (!ifx || !at || !st || !r || !e || host_ethtool(ns, &c) < 0)
        return; /* nic_record() reads (or says why not) itself */
    for (size_t i = 0; i < n; i++)
        if (pre[i].link_asked && pre[i].link_r >= 0 && streq(pre[i].link.name, units[i]->netdev)) {
            ifx[k] = pre[i].link.ifindex;
            at[k++] = i;
        }
    if (k == 0)
        return;
    /* each link's own answer in r[] and e[], whatever the first was */
    (void)ethtool_state_get_many(c, ifx, k, st, r, e);
    for (size_t j = 0; j < k; j++) {
        NicPrefetch *p = &pre[at[j]];

        p->ethtool_asked = true;
        p->ethtool_r = r[j];
        p->ethtool = st[j];
        p->ethtool_err = e[j];
    }
}

void nic_prefetch(NicNs *ns, const Unit *const *units, size_t n, NicPrefetch *pre) {
    for (size_t i = 0; i < n; i++)
        pre[i] = (NicPrefetch){0};
    prefetch_gets(ns, units, n, pre, false);
    prefetch_gets(ns, units, n, pre, true);
    prefetch_ethtool(ns, units, n, pre);
}

void nic_prefetch_done(NicPrefetch *pre, size_t n) {
    for (size_t i = 0; pre && i < n; i++)
        if (pre[i].ethtool_asked && pre[i].ethtool_r >= 0)
            ethtool_state_done(&pre[i].ethtool);
}

int nic_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err) {
    const Unit *u = p->unit;
    Link l;
    int r;

    if (!u->netdev[0])
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: its NIC has no netdev in the host namespace", u->id);
    if (p->pre && p->pre->link_asked) {
        r = p->pre->link_r;
        l = p->pre->link;
    } else
        r = link_get_by_name(ns->host, u->netdev, &l);
    if (r == -ENODEV)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is not in the host namespace (in another pod?)", u->id,
                        u->netdev);
    if (r < 0 && p->pre && p->pre->link_asked) {
        NetlinkBatchEntry e = {.what = "reading", .err = r};

        snprintf(e.ext_ack, sizeof(e.ext_ack), "%s", p->pre->link_ack);
        return nic_batch_error(err, &e, u->netdev);
    }
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "reading", u->netdev);
    /* the kernel answers a name with the link that has it as an alternative
     * name too: only a link whose own name it is is the unit's */
    if (!streq(l.name, u->netdev))
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: %s is an alternative name of %s, not a NIC's name; nothing was "
                        "moved",
                        u->id, u->netdev, l.name);
    r = locate_record_identity_pre(ns, u, &l, p->pre, n, err);
    if (r < 0)
        return r;
    snprintf(n->unit, sizeof(n->unit), "%s", u->id);
    snprintf(n->host_name, sizeof(n->host_name), "%s", l.name);
    snprintf(n->pod_name, sizeof(n->pod_name), "%s", u->pod_ifname);
    snprintf(n->pci, sizeof(n->pci), "%s", u->nic_pci);
    /* what railgate cannot give back is not lent: an XDP program of the
     * node's (the pod could detach it, and a program is not put back by
     * its id), a macvlan's list of source addresses */
    if (l.settings.xdp_attached != XDP_ATTACHED_NONE)
        return rg_error(err, -EBUSY, CNI_ERR_DEVICE,
                        "unit %s: NIC %s has an XDP program attached on the host (program id "
                        "%u); railgate lends no NIC with the node's program on it; nothing was "
                        "moved",
                        u->id, l.name,
                        l.settings.xdp_skb_prog ?: l.settings.xdp_drv_prog ?: l.settings.xdp_hw_prog);
    /* the same for tcx programs (6.6+), which the move does not take off
     * either */
    unsigned tcx = 0;
    r = tcx_count(l.ifindex, &tcx);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: cannot read the tcx programs of NIC %s: %s; nothing was moved",
                        u->id, l.name, strerror(-r));
    if (tcx)
        return rg_error(err, -EBUSY, CNI_ERR_DEVICE,
                        "unit %s: NIC %s has %u tcx program(s) attached on the host; railgate "
                        "lends no NIC with the node's programs on it; nothing was moved",
                        u->id, l.name, tcx);
    /* a PF's holder sets its VFs' MAC, VLAN, rate, spoof checking, trust
     * and link state (IFLA_VFINFO_LIST): VFs that may be other tenants' */
    unsigned vfs = 0;
    if (u->nic_pci[0] && !u->is_vf && sysfs_pf_numvfs(p->sys, u->nic_pci, &vfs) >= 0 && vfs)
        return rg_error(err, -EBUSY, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is an SR-IOV PF with %u VFs enabled; its holder would "
                        "set their MAC, VLAN, rate and trust; railgate lends no PF with VFs; "
                        "nothing was moved",
                        u->id, l.name, vfs);
    if (l.settings.macvlan_count)
        return rg_error(err, -EBUSY, CNI_ERR_DEVICE,
                        "unit %s: macvlan NIC %s holds %u source-mode addresses on the host; "
                        "railgate lends no macvlan with a source list; nothing was moved",
                        u->id, l.name, l.settings.macvlan_count);
    memcpy(n->mac, l.mac, sizeof(n->mac));
    n->mtu = l.mtu;
    n->settings = l.settings;
    n->has_settings = true;
    r = rxnfc_record(&l, n, err);
    if (r >= 0)
        r = ethtool_record(ns, &l, p->pre, n, err);
    if (r >= 0)
        r = sysfs_record(p->sys, &l, n, err);
    if (r < 0)
        return r;
    n->was_up = l.flags & IFF_UP;
    /* every NIC of this ADD reads from one dump of the host's addresses */
    r = addr_list(ns->host, l.ifindex, &n->host_addrs);
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "reading addresses of", l.name);
    /* the names themselves only when it has some (one more request) */
    r = l.n_altnames ? link_altnames(ns->host, l.ifindex, &n->altnames) : 0;
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "reading alternative names of", l.name);
    for (char **a = p->addrs; a && *a; a++)
        if (strv_push(&n->pod_addrs, *a) < 0)
            return -ENOMEM;
    snprintf(n->gateway, sizeof(n->gateway), "%s", p->gateway ? p->gateway : "");
    /* table mode: a table and a source rule per rail; VRF mode: the
     * tenant's VRF table, and the l3mdev rule instead of ours */
    bool vrf = p->tenant->vrf.mode == ROUTING_MODE_VRF;
    n->table = vrf ? p->tenant->vrf.table : p->tenant->vrf.table + u->rail;
    n->rule_prio = vrf ? 0 : RULE_PRIORITY_BASE + u->rail;
    n->pod_mtu = p->rail ? p->rail->mtu : 0;
    return nic_vf_record(ns, p, n, err);
}

#define MOVE_WHAT "moving into the pod and setting up"

/* D: each NIC's pod name is free there (-ENODEV), in one batch of the
 * pod's; a taken one fails before anything moves, in the common case. */
int nic_names_free(NicNs *ns, AttachedNic *nics, size_t n, RgError *err) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    _cleanup_free_ LinkReply *rep = calloc(n ? n : 1, sizeof(*rep));
    int r = rep ? netlink_batch_new(ns->pod, &b) : -ENOMEM;

    if (n == 0)
        return 0;
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "checking the pod's interface names: %s", strerror(-r));
    for (size_t i = 0; i < n; i++) {
        r = netlink_ifname_valid(nics[i].pod_name) ? 0 : -EINVAL;
        r = r
                ?: link_get_batch(b, 0, nics[i].pod_name, LINK_NETNSID_SELF, &rep[i], MOVE_WHAT,
                                  &nics[i]);
        if (r < 0)
            return nic_nl_error(err, ns->pod, r, MOVE_WHAT, nics[i].host_name);
    }
    (void)netlink_batch_commit(b);
    for (size_t i = 0; i < n; i++) {
        const NetlinkBatchEntry *e = netlink_batch_entry(b, i);
        int k = link_reply_result(e, &rep[i]);

        if (k >= 0)
            return rg_error(err, -EEXIST, CNI_ERR_DEVICE,
                            "unit %s: the pod already has an interface %s", nics[i].unit,
                            nics[i].pod_name);
        if (k != -ENODEV)
            return nic_batch_error(err, &(NetlinkBatchEntry){.what = MOVE_WHAT, .err = k},
                                   nics[i].host_name);
    }
    return 0;
}

/* E: every NIC moved, named, its MTU, alias and up, in one batch of the
 * host's. The kernel goes on past a refusal (a name taken in the pod since
 * nic_names_free(): the kernel moves the NIC under its host name, then
 * refuses the rename); the rollback finds each NIC by its identity, on the
 * host or in the pod, and brings it home. The first refusal is the error. */
static int moves(NicNs *ns, AttachedNic *nics, size_t n, RgError *err) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    const NetlinkBatchEntry *bad = NULL;
    size_t bad_i = 0;
    int r = netlink_batch_new(ns->host, &b);

    for (size_t i = 0; r >= 0 && i < n; i++) {
        AttachedNic *nic = &nics[i];
        LinkChange setup = LINK_CHANGE_INIT;
        char alias[128];

        /* move, name, MTU, alias and up in one request; a refused MTU (or
         * name) leaves the NIC moved, and the rollback finds it by identity */
        snprintf(alias, sizeof(alias), "railgate:%s:%s", nic->unit, nic->host_name);
        setup.netns_fd = ns->pod_fd;
        setup.name = nic->pod_name;
        setup.mtu = nic->pod_mtu;
        setup.alias = alias;
        setup.state = LINK_SET_UP;
        r = ns->pod_fd < 0 ? -EBADF
                           : link_change_batch(b, nic->host_ifindex, &setup, MOVE_WHAT, nic);
        if (r < 0)
            return nic_nl_error(err, ns->host, r, MOVE_WHAT, nic->host_name);
    }
    (void)netlink_batch_commit(b);
    for (size_t i = 0; i < n; i++) {
        const NetlinkBatchEntry *e = netlink_batch_entry(b, i);

        if (e->err < 0 && !bad) {
            bad = e;
            bad_i = i;
        }
    }
    if (!bad)
        return 0;
    if (bad->err == -EEXIST)
        return rg_error(err, bad->err, CNI_ERR_DEVICE,
                        "unit %s: the pod already has an interface %s", nics[bad_i].unit,
                        nics[bad_i].pod_name);
    return nic_batch_error(err, bad, nics[bad_i].host_name);
}

/* F: where each landed, after the last move (a GET between two moves waits
 * on RTNL behind the kernel's work after the first, and adds a round trip
 * and a wake-up to each move but the last): a device with a parent by its
 * ifindex in one batch of the pod's, a veth by its peer in one batch of
 * the host's (the peer names where its other end is: a look-alike the pod
 * puts under its name and ifindex is not it), an anchored NIC by its
 * anchor. Each one's ifindex in the pod into *ret_ifindex (n of them, the
 * caller frees); what: the words an error starts with. */
static int landed(NicNs *ns, const AttachedNic *nics, size_t n, const char *what, int **ret_ifindex,
                  RgError *err) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *pod = NULL, *host = NULL;
    _cleanup_free_ LinkReply *rep = calloc(n ? n : 1, sizeof(*rep));
    _cleanup_free_ int *entry = calloc(n ? n : 1, sizeof(*entry));
    _cleanup_free_ int *ifindex = calloc(n ? n : 1, sizeof(*ifindex));
    int r;

    if (!rep || !entry || !ifindex)
        return rg_error(err, -ENOMEM, CNI_ERR_IO, "out of memory");
    if (n == 0) {
        *ret_ifindex = TAKE_PTR(ifindex);
        return 0;
    }
    r = netlink_batch_new(ns->pod, &pod) ?: netlink_batch_new(ns->host, &host);
    for (size_t i = 0; r >= 0 && i < n; i++) {
        const AttachedNic *nic = &nics[i];

        entry[i] = -1;
        if (nic->anchor[0])
            continue;
        if (nic->parent[0])
            r = entry[i] =
                link_get_batch(pod, nic->host_ifindex, NULL, LINK_NETNSID_SELF, &rep[i], what, nic);
        else if (nic->peer_nsid >= LINK_NETNSID_SELF)
            r = entry[i] =
                link_get_batch(host, nic->peer_ifindex, NULL, nic->peer_nsid, &rep[i], what, nic);
    }
    if (r < 0)
        return rg_error(err, r, CNI_ERR_NETLINK, "%s: cannot ask: %s", what, strerror(-r));
    (void)netlink_batch_commit(pod);
    (void)netlink_batch_commit(host);
    for (size_t i = 0; i < n; i++) {
        const AttachedNic *nic = &nics[i];
        /* where a NIC's own device is asked for, and any look after */
        Netlink *nl = nic->parent[0] ? ns->pod : ns->host;
        const NetlinkBatchEntry *e =
            entry[i] < 0 ? NULL
                         : netlink_batch_entry(nic->parent[0] ? pod : host, (size_t)entry[i]);

        if (!e)
            r = locate_pod_ifindex(ns, nic);
        else if (nic->parent[0])
            r = locate_pod_ifindex_seen(ns, nic, link_reply_result(e, &rep[i]), &rep[i].link);
        else
            r = locate_pod_veth_seen(ns, nic, link_reply_result(e, &rep[i]), &rep[i].link);
        if (r < 0 && e && e->err == r && r != -ENODEV)
            return nic_batch_error(err, e, nic->pod_name); /* the kernel's own words */
        if (r < 0)
            return nic_nl_error(err, nl, r, what, nic->pod_name);
        ifindex[i] = r;
    }
    *ret_ifindex = TAKE_PTR(ifindex);
    return 0;
}

int nic_move_in_many(NicNs *ns, AttachedNic *nics, size_t n, RgError *err) {
    return n == 0 ? 0 : moves(ns, nics, n, err);
}

int nic_landed_many(NicNs *ns, AttachedNic *nics, size_t n, RgError *err) {
    _cleanup_free_ int *ifindex = NULL;
    int r = landed(ns, nics, n, "finding in the pod", &ifindex, err);

    for (size_t i = 0; r >= 0 && i < n; i++)
        nics[i].pod_ifindex = ifindex[i];
    return r;
}

/* G': the same look once every NIC is configured (which went by ifindex):
 * each still at its ifindex, or what the pod swapped in there meanwhile got
 * the configuration and the NIC none of it. */
int nic_still_landed_many(NicNs *ns, const AttachedNic *nics, size_t n, RgError *err) {
    _cleanup_free_ int *ifindex = NULL;
    int r = landed(ns, nics, n, "once configured, finding in the pod", &ifindex, err);

    for (size_t i = 0; r >= 0 && i < n; i++)
        if (ifindex[i] != nics[i].pod_ifindex)
            r = rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                         "unit %s: %s was configured at ifindex %d in the pod and is at %d once "
                         "configured: the pod moved it while it was configured",
                         nics[i].unit, nics[i].pod_name, nics[i].pod_ifindex, ifindex[i]);
    return r;
}

/* G: one NIC's addresses, routes and rule as entries of b (table mode):
 * an entry whose earlier one failed fails harmlessly (a route whose source
 * is not there), and only the first failure is reported. */
static int configure_add(NetlinkBatch *b, const TenantConfig *t, AttachedNic *n, RgError *err) {
    const char *what = "adding an address to";
    int r = 0;

    for (char **a = n->pod_addrs; r >= 0 && a && *a; a++)
        r = addr_add_batch(b, n->pod_ifindex, *a, what, n);
    for (char **a = n->pod_addrs; r >= 0 && a && *a; a++) {
        char net[64], host[64], src[64];
        Cidr c, gw;

        if (cidr_parse(*a, false, &c) < 0)
            return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "bad address %s", *a);
        cidr_format_network(&c, net, sizeof(net));
        cidr_format_host(&c, host, sizeof(host));
        cidr_format_addr(&c, src, sizeof(src));
        RouteSpec connected = {.dst = net, .src = src, .table = n->table, .scope = RT_SCOPE_LINK};
        what = "adding the connected route on";
        r = route_add_batch(b, n->pod_ifindex, &connected, what, n);
        if (r >= 0 && n->gateway[0] && cidr_parse(n->gateway, true, &gw) >= 0 &&
            gw.family == c.family) {
            what = "adding a VRF route on";
            for (char **pfx = t->vrf.prefixes; r >= 0 && pfx && *pfx; pfx++) {
                Cidr pc;
                if (cidr_parse(*pfx, false, &pc) < 0 || pc.family != c.family)
                    continue;
                RouteSpec vrf = {.dst = *pfx, .gw = n->gateway, .src = src, .table = n->table};
                r = route_add_batch(b, n->pod_ifindex, &vrf, what, n);
            }
            RouteSpec def = {.dst = c.family == AF_INET ? "0.0.0.0/0" : "::/0",
                             .gw = n->gateway,
                             .src = src,
                             .table = n->table};
            if (r >= 0) {
                what = "adding the default route on";
                r = route_add_batch(b, n->pod_ifindex, &def, what, n);
            }
        }
        if (r >= 0 && n->rule_prio) {
            what = "adding the source rule for";
            r = rule_add_batch(b, host, n->table, n->rule_prio, what, n);
        }
    }
    /* a request the builder refused, as the sender would have said it */
    if (r < 0)
        return rg_error(err, r, CNI_ERR_NETLINK, "%s %s: %s", what, n->pod_name, strerror(-r));
    return 0;
}

int nic_configure_many(NicNs *ns, const NicPlan *p, AttachedNic *nics, size_t n, RgError *err) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    const NetlinkBatchEntry *bad;
    int r;

    /* a VRF device takes requests that depend on each other's answers */
    if (p->tenant->vrf.mode == ROUTING_MODE_VRF) {
        for (size_t i = 0; i < n; i++) {
            r = nic_configure(ns, p, &nics[i], err);
            if (r < 0)
                return r;
        }
        return 0;
    }
    r = netlink_batch_new(ns->pod, &b);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        r = configure_add(b, p->tenant, &nics[i], err);
        if (r < 0)
            return r;
    }
    (void)netlink_batch_commit(b);
    /* already there: the caller's to judge as before (none of ours is) */
    bad = nic_batch_failed(b, true);
    if (bad)
        return nic_batch_error(err, bad, ((const AttachedNic *)bad->tag)->pod_name);
    return 0;
}

/* Per-rail table: the connected subnet, the tenant VRF's prefixes and a
 * default via the rail gateway; a rule sends traffic from the rail's address
 * to that table, so each rail answers and sends on its own wire. */
static int pod_routes_for(NicNs *ns, const NicPlan *p, const AttachedNic *n, const char *addr,
                          RgError *err) {
    char net[64], host[64], src[64];
    Cidr c, gw;
    int r;

    if (cidr_parse(addr, false, &c) < 0)
        return rg_error(err, -EINVAL, CNI_ERR_INVALID_CONFIG, "bad address %s", addr);
    cidr_format_network(&c, net, sizeof(net));
    cidr_format_host(&c, host, sizeof(host));
    cidr_format_addr(&c, src, sizeof(src));
    RouteSpec connected = {.dst = net, .src = src, .table = n->table, .scope = RT_SCOPE_LINK};
    r = route_add(ns->pod, n->pod_ifindex, &connected);
    if (r < 0 && r != -EEXIST)
        return nic_nl_error(err, ns->pod, r, "adding the connected route on", n->pod_name);
    if (n->gateway[0] && cidr_parse(n->gateway, true, &gw) >= 0 && gw.family == c.family) {
        for (char **pfx = p->tenant->vrf.prefixes; pfx && *pfx; pfx++) {
            Cidr pc;
            if (cidr_parse(*pfx, false, &pc) < 0 || pc.family != c.family)
                continue;
            RouteSpec vrf = {.dst = *pfx, .gw = n->gateway, .src = src, .table = n->table};
            r = route_add(ns->pod, n->pod_ifindex, &vrf);
            if (r < 0 && r != -EEXIST)
                return nic_nl_error(err, ns->pod, r, "adding a VRF route on", n->pod_name);
        }
        RouteSpec def = {.dst = c.family == AF_INET ? "0.0.0.0/0" : "::/0",
                         .gw = n->gateway,
                         .src = src,
                         .table = n->table};
        r = route_add(ns->pod, n->pod_ifindex, &def);
        if (r < 0 && r != -EEXIST)
            return nic_nl_error(err, ns->pod, r, "adding the default route on", n->pod_name);
    }
    if (!n->rule_prio)
        return 0;
    r = rule_add(ns->pod, host, n->table, n->rule_prio);
    if (r < 0 && r != -EEXIST)
        return nic_nl_error(err, ns->pod, r, "adding the source rule for", n->pod_name);
    return 0;
}

static int pod_vrf(NicNs *ns, const NicPlan *p, const AttachedNic *n, RgError *err) {
    const TenantConfig *t = p->tenant;
    LinkChange enslave = LINK_CHANGE_INIT;
    Link vrf = {0};
    int r;

    r = vrf_supported(ns->pod);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_VRF,
                        "tenant %s asks for VRF-device routing, and this kernel has no vrf "
                        "(l3mdev) driver; use \"mode\": \"table\"",
                        t->name);
    r = vrf_add(ns->pod, t->vrf.name, t->vrf.table, &enslave.master);
    if (r == -EEXIST) {
        r = link_get_by_name(ns->pod, t->vrf.name, &vrf);
        /* a link of the pod's by that name, not a VRF on the tenant's table,
         * is none of ours */
        if (r >= 0 && (!streq(vrf.kind, "vrf") || vrf.vrf_table != t->vrf.table ||
                       !streq(vrf.name, t->vrf.name)))
            r = -EEXIST;
        enslave.master = r >= 0 ? vrf.ifindex : 0;
    }
    if (r >= 0)
        r = link_change(ns->pod, n->pod_ifindex, &enslave);
    if (r < 0)
        return nic_nl_error(err, ns->pod, r, "enslaving to the VRF", n->pod_name);
    /* then the routes go to the VRF's table; with several rails the first
     * rail's default and prefix routes stand, the others' exist */
    return 0;
}

int nic_configure(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err) {
    int r;

    for (char **a = n->pod_addrs; a && *a; a++) {
        r = addr_add(ns->pod, n->pod_ifindex, *a);
        if (r < 0 && r != -EEXIST)
            return nic_nl_error(err, ns->pod, r, "adding an address to", n->pod_name);
    }
    if (p->tenant->vrf.mode == ROUTING_MODE_VRF) {
        r = pod_vrf(ns, p, n, err);
        if (r < 0)
            return r;
    }
    for (char **a = n->pod_addrs; a && *a; a++) {
        r = pod_routes_for(ns, p, n, *a, err);
        if (r < 0)
            return r;
    }
    return 0;
}

/*
 * A NIC comes home under a name of ifname_random()'s until it is known to be
 * ours, new for every move: no pod can predict it or hold it beforehand (it
 * is made after the pod's last chance to look), no host link has it, and two
 * DELs never share one.
 */

/* Inside the pod: the rules and alternative names of the NIC at ifindex
 * go. The pod may have given it a name the host has (the move would fail
 * on it), or one a host NIC will want. */
static int pod_release(NicNs *ns, const AttachedNic *n, int ifindex) {
    _cleanup_(strv_freep) char **alt = NULL;
    unsigned uppers = 0;
    int r;

    /* links the pod stacked on its rail (a VLAN, a macvlan, ...) would stay
     * in the pod with a way onto the node's NIC: they go first */
    r = ns->pod_links ? link_delete_uppers_seen(ns->pod, ifindex, ns->pod_links, ns->n_pod_links,
                                                ns->spare, ns->n_spare, &uppers)
                      : -ENOENT;
    if (r == -ENOENT)
        r = link_delete_uppers(ns->pod, ifindex, ns->spare, ns->n_spare, &uppers);
    if (r < 0)
        return r;
    if (uppers)
        log_info(NULL, n->unit, "NIC %s: %u link(s) the pod stacked on it deleted", n->pod_name,
                 uppers);
    if (failpoint("restore-after-uppers") < 0)
        return -EFAULT;

    for (char **a = n->pod_addrs; n->rule_prio && a && *a; a++) {
        Cidr c;
        char host[64];
        if (cidr_parse(*a, false, &c) >= 0) {
            cidr_format_host(&c, host, sizeof(host));
            (void)rule_del(ns->pod, host, n->table, n->rule_prio); /* the pod may go on */
        }
    }
    r = link_altnames(ns->pod, ifindex, &alt);
    if (r >= 0)
        r = link_altnames_change(ns->pod, ifindex, alt, false);
    return r;
}

/* Once the NIC is home (at ifindex), before it is restored and up: links
 * the pod stacked on it after pod_release() looked, which the move left in
 * the pod on a lower that is now the node's, are deleted too. */
static int pod_sweep(NicNs *ns, const AttachedNic *n, int ifindex, RgError *err) {
    unsigned uppers = 0;
    Link rail;
    int r;

    if (!ns->pod)
        return 0;
    r = link_get(ns->host, ifindex, &rail);
    if (r >= 0)
        r = link_delete_uppers_from(ns->pod, ns->host_fd, &rail, ns->spare, ns->n_spare, &uppers);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_NETLINK,
                        "unit %s: NIC %s is home, but the links the pod stacked on it cannot be "
                        "deleted: %s; the record and the unit's claim stay",
                        n->unit, n->host_name, strerror(-r));
    if (uppers)
        log_warn(NULL, n->unit, "NIC %s: %u link(s) the pod stacked on it while it left deleted",
                 n->host_name, uppers);
    return 0;
}

/*
 * Send the link at ifindex in the pod home under the return name name; the
 * link that arrived into *ret. The move keeps the ifindex where the host has
 * it free, so that is where it is looked for; only when the host gave it
 * another (its own was taken) does the name find it, a name nothing else can
 * have. A refused move is checked too: the link is on the host if the name
 * is. The move closes the device: it arrives down.
 */
static int pod_move_out(NicNs *ns, int ifindex, const char *name, Link *ret) {
    int r, m;

    m = failpoint("restore-before-move-out"); /* what the pod sees is done */
    if (m >= 0)
        m = link_move(ns->pod, ifindex, ns->host, ns->host_fd, name, NULL);
    r = link_get(ns->host, ifindex, ret);
    if (r < 0 || !streq(ret->name, name))
        r = link_get_by_name(ns->host, name, ret);
    if (r >= 0 && streq(ret->name, name))
        return 0; /* arrived, whatever the move answered */
    return m < 0 ? m : -ENODEV;
}

/*
 * A link that came out of the pod and is not n's NIC goes back to the pod,
 * under the name it came with. When it cannot, it does not stay: a link
 * without a parent device (veth, macvlan, ifb, bridge: a kind the pod can
 * make) is deleted, as the kernel deletes it when the pod's namespace goes;
 * a device with one (a NIC, a VF: no pod makes those) stays where it is and
 * the error names it.
 */
static int stranger_out(NicNs *ns, const AttachedNic *n, const Link *arrived, RgError *err) {
    Link l;
    int r;

    /* acted on as it is now: still at that ifindex under the return name
     * (the pod may have made it vanish, deleting a veth's other end) */
    r = link_get(ns->host, arrived->ifindex, &l);
    if (r < 0 || !streq(l.name, arrived->name))
        return rg_error(err, -ENXIO, CNI_ERR_DEVICE,
                        "unit %s: the link that left the pod in place of NIC %s was not it (the "
                        "pod swapped it), and it is gone from the host; the record and the unit's "
                        "claim stay until the NIC is back",
                        n->unit, n->host_name);
    r = failpoint("restore-stranger-back");
    if (r >= 0)
        r = ns->pod ? link_move(ns->host, l.ifindex, NULL, ns->pod_fd, NULL, NULL) : -ENODEV;
    if (r >= 0)
        return rg_error(err, -ENXIO, CNI_ERR_DEVICE,
                        "unit %s: the link that left the pod in place of NIC %s was not it (the "
                        "pod swapped it); it went back to the pod; the record and the unit's claim "
                        "stay until the NIC is back",
                        n->unit, n->host_name);
    if (l.parent[0])
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: device %s (%s) left the pod in place of NIC %s and cannot go "
                        "back (%s); it stays on the host under that name for an administrator; the "
                        "record and the unit's claim stay",
                        n->unit, l.name, l.parent, n->host_name, strerror(-r));
    int d = link_delete(ns->host, l.ifindex);
    if (d < 0)
        return rg_error(err, d, CNI_ERR_NETLINK,
                        "unit %s: link %s (%s) left the pod in place of NIC %s, cannot go back "
                        "(%s) and cannot be deleted (%s): it is on the host",
                        n->unit, l.name, l.kind[0] ? l.kind : "no kind", n->host_name, strerror(-r),
                        strerror(-d));
    log_warn(NULL, n->unit,
             "link %s (%s) left the pod in place of NIC %s and could not go back: deleted", l.name,
             l.kind[0] ? l.kind : "no kind", n->host_name);
    return rg_error(err, -ENXIO, CNI_ERR_DEVICE,
                    "unit %s: the link that left the pod in place of NIC %s was not it (the pod "
                    "swapped it) and could not go back (%s): deleted; the record and the unit's "
                    "claim stay until the NIC is back",
                    n->unit, n->host_name, strerror(-r));
}

/* The alternative names of ifindex are the recorded ones again: those the
 * pod added go (a name another NIC needs), those it took are given back
 * where no other link has them (best effort: udev's names, not identity). */
static int altnames_restore(NicNs *ns, const AttachedNic *n, const Link *l) {
    _cleanup_(strv_freep) char **now = NULL, **drop = NULL, **add = NULL;
    int ifindex = l->ifindex, r;

    if (!l->n_altnames && !n->altnames)
        return 0; /* none, and none to give back */
    r = l->n_altnames ? link_altnames(ns->host, ifindex, &now) : 0;

    for (char **a = now; r >= 0 && a && *a; a++)
        if (!strv_contains(n->altnames, *a))
            r = strv_push(&drop, *a);
    for (char **a = n->altnames; r >= 0 && a && *a; a++)
        if (!strv_contains(now, *a))
            r = strv_push(&add, *a);
    if (r >= 0)
        r = link_altnames_change(ns->host, ifindex, drop, false);
    if (r < 0)
        return r;
    for (char **a = add; a && *a; a++) {
        char *one[] = {*a, NULL};
        int k = link_altnames_change(ns->host, ifindex, one, true);
        if (k < 0)
            log_warn(NULL, n->unit, "NIC %s: its alternative name %s is not given back: %s",
                     n->host_name, *a, strerror(-k));
    }
    return 0;
}

/* The ethtool state as recorded: each piece that differs set back, then
 * read again; a piece that cannot be set back (RSS) or did not take fails
 * the DEL with the record kept. */
static int rxnfc_restore_of(const AttachedNic *n, int ifindex, RgError *err);

static int ethtool_restore(NicNs *ns, const AttachedNic *n, int ifindex, RgError *err) {
    EthtoolConn *c = NULL;
    RgError e = {0};
    int r;

    r = host_ethtool(ns, &c);
    if (r >= 0)
        r = ethtool_state_restore(c, ifindex, &n->ethtool, &e);
    if (r == ETHTOOL_CANNOT_RESTORE && n->has_rxnfc && n->rxnfc.have_rss) {
        /* RSS, which netlink reads but does not set on these kernels: set
         * back through the ioctl (with the rules it steers to), then all of
         * it read and compared again */
        r = rxnfc_restore_of(n, ifindex, err);
        if (r < 0)
            return r;
        e = (RgError){0};
        r = ethtool_state_restore(c, ifindex, &n->ethtool, &e);
    }
    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is home but its ethtool state is not what it was: %s; "
                        "the record and the unit's claim stay",
                        n->unit, n->host_name, e.msg[0] ? e.msg : strerror(-r));
    return 0;
}

/* The n-tuple rules and flow hash fields as recorded: the pod's rules
 * deleted, the node's put back, then read again. */
static int rxnfc_restore_of(const AttachedNic *n, int ifindex, RgError *err) {
    char what[512];
    int r = rxnfc_restore(n->host_name, ifindex, &n->rxnfc, what, sizeof(what));

    if (r == -EIO)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is home but its n-tuple rules or flow hash fields are "
                        "not what they were: %s; the record and the unit's claim stay",
                        n->unit, n->host_name, what);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is home but its n-tuple rules cannot be checked: %s; the "
                        "record and the unit's claim stay",
                        n->unit, n->host_name, strerror(-r));
    return 0;
}

/* The NAPI and queue settings as recorded: each that differs written back
 * under the NIC's recorded name (given back before this), then read again. */
static int sysfs_restore(NicNs *ns, const AttachedNic *n, int ifindex, RgError *err) {
    const char *sys = ns->sys ?: "/sys";
    char what[512];
    int r;

    r = netdev_sysfs_restore(sys, n->host_name, ifindex, &n->sysfs, what, sizeof(what));
    if (r == -EIO)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is home but keeps queue settings the pod set: %s; the "
                        "record and the unit's claim stay",
                        n->unit, n->host_name, what);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is home but its queue settings cannot be checked under "
                        "%s/class/net: %s; the record and the unit's claim stay",
                        n->unit, n->host_name, sys, strerror(-r));
    return 0;
}

/* The tcx programs the pod attached (none was there at ADD: such a NIC is
 * not lent) detached, BPF links included, and none left. */
static int tcx_restore(const AttachedNic *n, int ifindex, RgError *err) {
    unsigned detached = 0, left = 0;
    int r;

    r = tcx_detach_all(ifindex, &detached);
    if (r >= 0)
        r = tcx_count(ifindex, &left);
    if (r < 0 || left)
        return rg_error(err, r < 0 ? r : -EBUSY, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is home with tcx programs the pod attached, which "
                        "cannot be detached (%s); it stays down, the record and the unit's "
                        "claim stay",
                        n->unit, n->host_name, r < 0 ? strerror(-r) : "still attached");
    if (detached)
        log_warn(NULL, n->unit, "NIC %s: %u tcx program(s) of the pod's detached", n->host_name,
                 detached);
    return 0;
}

/* What the pod set that takes requests of their own (XDP programs, a
 * macvlan's mode and sources, protocol down, carrier) goes, and then every
 * setting is checked against the record: a restore that did not take fails
 * the DEL, and the record stays. l: the link as it arrived. */
static int settings_restore(NicNs *ns, const AttachedNic *n, const Link *l, RgError *err) {
    char what[512];
    const char *step = NULL;
    Link now;
    int r;

    r = link_settings_restore(ns->host, l, &n->settings, &step);
    if (r == -EBUSY && step && strstr(step, "XDP")) {
        /* a program the pod attached through a BPF link, which the pod
         * could keep alive (pinned, or its fd passed on): the link itself
         * is detached */
        const LinkSettings *s = &l->settings;
        uint32_t progs[] = {s->xdp_skb_prog, s->xdp_drv_prog, s->xdp_hw_prog};
        unsigned k = 0, detached = 0;
        int d = 0;
        for (size_t i = 0; d >= 0 && i < ELEMENTSOF(progs); i++) {
            k = 0;
            if (progs[i])
                d = xdp_bpf_links_detach(l->ifindex, progs[i], &k);
            detached += k;
        }
        if (d < 0 || !detached)
            return rg_error(err, d < 0 ? d : r, CNI_ERR_DEVICE,
                            "unit %s: NIC %s is home with an XDP program the pod attached "
                            "through a BPF link (%s: %s), and the BPF link cannot be detached "
                            "(%s); it stays down, the record and the unit's claim stay",
                            n->unit, n->host_name, step, strerror(-r),
                            d < 0 ? strerror(-d) : "no such link found");
        log_warn(NULL, n->unit, "NIC %s: %u XDP BPF link(s) of the pod's detached", n->host_name,
                 detached);
        r = link_get(ns->host, l->ifindex, &now);
        if (r >= 0)
            r = link_settings_restore(ns->host, &now, &n->settings, &step);
    }
    if (r < 0)
        return nic_nl_error(err, ns->host, r, step ? step : "restoring", n->host_name);
    r = tcx_restore(n, l->ifindex, err);
    if (r < 0)
        return r;
    r = link_get(ns->host, l->ifindex, &now);
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "reading", n->host_name);
    if (link_settings_differ(&n->settings, &now.settings, what, sizeof(what)))
        return rg_error(err, -EIO, CNI_ERR_DEVICE,
                        "unit %s: NIC %s is home but keeps what the pod set: %s; the record and "
                        "the unit's claim stay",
                        n->unit, n->host_name, what);
    r = n->has_ethtool ? ethtool_restore(ns, n, l->ifindex, err) : 0;
    /* after ethtool's: its channels make the queues the settings, rules
     * and hash fields are of */
    if (r >= 0 && n->has_sysfs)
        r = sysfs_restore(ns, n, l->ifindex, err);
    if (r >= 0 && n->has_rxnfc)
        r = rxnfc_restore_of(n, l->ifindex, err);
    return r;
}

static int host_restore(NicNs *ns, const AttachedNic *n, int ifindex, RgError *err) {
    LinkChange c = LINK_CHANGE_INIT;
    Link l;
    int r;

    r = link_get(ns->host, ifindex, &l);
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "reading", n->host_name);
    if (!streq(l.name, n->host_name) && (l.flags & IFF_UP)) {
        /* most drivers rename only a link that is down */
        LinkChange down = {.netns_fd = -1, .master = -1, .state = LINK_SET_DOWN};
        (void)link_change(ns->host, ifindex, &down);
    }
    /* name, alias, MAC, MTU, flags, queue length, group, GSO/GRO limits,
     * link mode and broadcast in one request; what takes a request of its
     * own (XDP, a macvlan's mode, carrier, ethtool) and addresses after. It
     * stays down (the move home closed it) until all of that is back and
     * checked, and every NIC of the attachment is home (nic_up_many()): a
     * NIC that keeps something of the pod's never runs on the node (the DEL
     * fails, the record stays, and the next DEL finishes). One that never
     * left and needs nothing put back keeps its state. */
    c.name = streq(l.name, n->host_name) ? NULL : n->host_name;
    c.alias = "";
    c.mac = memcmp(l.mac, n->mac, 6) ? n->mac : NULL;
    c.mtu = n->mtu;
    c.state = n->was_up && !n->has_settings ? LINK_KEEP_STATE : LINK_SET_DOWN;
    c.settings = n->has_settings ? &n->settings : NULL;
    r = link_change(ns->host, ifindex, &c);
    if (r == -EEXIST && c.name)
        return rg_error(err, r, CNI_ERR_NETLINK, "unit %s: cannot give %s its name %s back: %s",
                        n->unit, l.name, n->host_name, strerror(-r));
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "restoring", n->host_name);
    if (failpoint("restore-after-link") < 0)
        return rg_error(err, -EFAULT, CNI_ERR_IO, "failpoint %s", failpoint_name());
    r = n->has_settings ? settings_restore(ns, n, &l, err) : 0;
    if (r < 0)
        return r;
    if (failpoint("restore-after-settings") < 0)
        return rg_error(err, -EFAULT, CNI_ERR_IO, "failpoint %s", failpoint_name());
    r = altnames_restore(ns, n, &l);
    /* addresses the pod added do not come to the host with it */
    if (r >= 0)
        r = addr_prune(ns->host, ifindex, n->host_addrs);
    for (char **a = n->host_addrs; r >= 0 && a && *a; a++) {
        r = addr_add(ns->host, ifindex, *a);
        if (r == -EEXIST)
            r = 0;
    }
    return r < 0 ? nic_nl_error(err, ns->host, r, "restoring", n->host_name) : 0;
}

/* restored whole (res 0), at home, and up before it left */
static bool wants_up(const AttachedNic *nics, const int *home, const int *res, size_t i) {
    return res[i] == 0 && home[i] > 0 && nics[i].was_up;
}

int nic_up_many(NicNs *ns, const AttachedNic *nics, const int *home, int *res, size_t n,
                RgError *err) {
    _cleanup_(netlink_batch_freep) NetlinkBatch *b = NULL;
    const LinkChange c = {.netns_fd = -1, .master = -1, .state = LINK_SET_UP};
    int failed = 0, r = netlink_batch_new(ns->host, &b);

    for (size_t i = 0; r >= 0 && i < n; i++)
        if (wants_up(nics, home, res, i))
            r = link_change_batch(b, home[i], &c, "bringing up", &nics[i]);
    if (r >= 0)
        (void)netlink_batch_commit(b); /* an entry not answered is a failure */
    for (size_t i = 0, k = 0; i < n; i++) {
        if (!wants_up(nics, home, res, i))
            continue;
        const NetlinkBatchEntry *e = r >= 0 ? netlink_batch_entry(b, k++) : NULL;
        int q = e ? e->err : r;
        const char *kernel = e && e->ext_ack[0] ? e->ext_ack : NULL;
        if (q == 0)
            continue;
        rg_error(err, q, CNI_ERR_NETLINK,
                 "unit %s: NIC %s is home and restored but cannot be brought up: %s%s%s%s; the "
                 "record and the unit's claim stay",
                 nics[i].unit, nics[i].host_name, strerror(-q), kernel ? " (kernel: " : "",
                 kernel ? kernel : "", kernel ? ")" : "");
        log_error(NULL, nics[i].unit, q, "%s", err->msg);
        res[i] = q;
        failed++;
    }
    return failed;
}

static int not_found(const AttachedNic *n, RgError *err) {
    return rg_error(err, -ENXIO, CNI_ERR_DEVICE,
                    "unit %s: NIC %s (%s%s) is neither in the pod nor on the host (the pod moved "
                    "it elsewhere?); railgate brings home nothing else: the record and the unit's "
                    "claim stay until it is back",
                    n->unit, n->host_name,
                    n->parent[0]   ? "parent device "
                    : n->anchor[0] ? "the lower link of its anchor "
                                   : "veth, peer ",
                    n->parent[0]   ? n->parent
                    : n->anchor[0] ? n->anchor
                                   : n->peer_name);
}

int nic_restore(NicNs *ns, const AttachedNic *n, int *ret_home, bool *ret_moved, RgError *err) {
    Where where;
    int ifindex = 0, r;

    *ret_home = 0;
    *ret_moved = false;

    /* Every NIC is recorded before its move, and the record does not say
     * whether it moved: look before deciding that it never left. Only its
     * identity says which link is ours: the pod may hold look-alikes under
     * any name, with any MAC. */
    r = locate_settled(ns, n, &where, &ifindex);
    if (r == -ENODEV)
        return NIC_GONE; /* nothing moved yet: the only "gone" that lets the record go */
    if (r == -EOPNOTSUPP)
        return rg_error(err, r, CNI_ERR_DEVICE, "unit %s: the record of NIC %s cannot identify it",
                        n->unit, n->host_name);
    if (r == -ENOTUNIQ)
        return anchor_not_ours_error(n, r, err);
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "looking for", n->host_name);
    if (where == WHERE_ELSEWHERE)
        return not_found(n, err);
    if (where == WHERE_DYING)
        return nswait_error(ns, n, err);
    if (where == WHERE_POD) {
        char name[IF_NAMESIZE];
        Link arrived;

        r = ifname_random(name);
        if (r >= 0)
            r = pod_release(ns, n, ifindex);
        if (r >= 0)
            r = pod_move_out(ns, ifindex, name, &arrived);
        if (r < 0)
            return nic_nl_error(err, ns->pod, r, "moving out of the pod", n->host_name);
        (void)failpoint("restore-arrived");
        /* what arrived must be ours, told by its identity at the ifindex it
         * arrived at: the pod could have moved the NIC away and put a link
         * in its place with its ifindex between the search and the move */
        r = nic_locate(ns, n, &where, &ifindex);
        if (r < 0 && r != -ENODEV)
            return nic_nl_error(err, ns->host, r, "looking for", n->host_name);
        if (r == -ENODEV || where != WHERE_HOST || ifindex != arrived.ifindex)
            return stranger_out(ns, n, &arrived, err);
        *ret_moved = true;
    }
    r = pod_sweep(ns, n, ifindex, err);
    if (r < 0)
        return r;
    /* home, moved or not: a NIC may have been set up in the pod (MTU,
     * alias) before it came back; restoring is idempotent. A VF's
     * admin state only once it is home: until then it stays pinned. Its
     * anchor stays until it is up (the teardown removes it): until then it
     * is what finds it */
    r = host_restore(ns, n, ifindex, err);
    if (r >= 0)
        r = nic_vf_restore(ns, n, err);
    if (r < 0)
        return r;
    *ret_home = ifindex;
    return 0;
}

void nic_pod_look(NicNs *ns) {
    free(ns->pod_links);
    ns->pod_links = NULL;
    ns->n_pod_links = 0;
    /* without it, each NIC's release looks for itself */
    if (ns->pod && link_dump(ns->pod, NULL, &ns->pod_links, &ns->n_pod_links) < 0) {
        ns->pod_links = NULL;
        ns->n_pod_links = 0;
    }
}

int nic_spares(NicNs *ns, const AttachedNic *nics, size_t n) {
    bool macvlan = false;
    int r;

    for (size_t i = 0; i < n; i++)
        macvlan |= streq(nics[i].kind, "macvlan") || streq(nics[i].kind, "macvtap");
    if (!macvlan || !ns->pod || n == 0)
        return 0;
    free(ns->spare);
    ns->n_spare = 0;
    ns->spare = calloc(n, sizeof(*ns->spare));
    if (!ns->spare)
        return -ENOMEM;
    ns->n_spare = n;
    for (size_t i = 0; i < n; i++) {
        Where where;
        int ifindex = 0;
        r = nic_locate(ns, &nics[i], &where, &ifindex);
        if (r == -ENODEV)
            continue;
        if (r < 0)
            return r;
        ns->spare[i] = where == WHERE_POD ? ifindex : 0;
    }
    return 0;
}

static int pod_check(NicNs *ns, const AttachedNic *n, int ifindex, RgError *err) {
    _cleanup_(strv_freep) char **addrs = NULL;
    Link l;
    int r;

    r = link_get(ns->pod, ifindex, &l);
    if (r < 0)
        return rg_error(err, -ENODEV, CNI_ERR_CHECK, "%s is missing from the pod", n->pod_name);
    if (!streq(l.name, n->pod_name))
        return rg_error(err, -EIO, CNI_ERR_CHECK,
                        "the NIC of unit %s is called %s in the pod, not %s", n->unit, l.name,
                        n->pod_name);
    if (!(l.flags & IFF_UP))
        return rg_error(err, -EIO, CNI_ERR_CHECK, "%s is down", n->pod_name);
    if (n->pod_mtu && l.mtu != n->pod_mtu)
        return rg_error(err, -EIO, CNI_ERR_CHECK, "%s has MTU %u, want %u", n->pod_name, l.mtu,
                        n->pod_mtu);
    if (addr_list(ns->pod, ifindex, &addrs) < 0)
        return rg_error(err, -EIO, CNI_ERR_CHECK, "cannot read addresses of %s", n->pod_name);
    for (char **a = n->pod_addrs; a && *a; a++) {
        Cidr c;
        char host[64], src[64], net[64];
        if (!strv_contains(addrs, *a))
            return rg_error(err, -EIO, CNI_ERR_CHECK, "%s lacks address %s", n->pod_name, *a);
        if (cidr_parse(*a, false, &c) < 0)
            continue;
        cidr_format_host(&c, host, sizeof(host));
        cidr_format_addr(&c, src, sizeof(src));
        cidr_format_network(&c, net, sizeof(net));
        if (n->rule_prio && rule_exists(ns->pod, host, n->table, n->rule_prio) < 0)
            return rg_error(err, -EIO, CNI_ERR_CHECK, "rule from %s lookup %u is missing", host,
                            n->table);
        RouteSpec conn = {.dst = net, .table = n->table, .scope = RT_SCOPE_LINK};
        if (route_exists(ns->pod, ifindex, &conn) < 0)
            return rg_error(err, -EIO, CNI_ERR_CHECK, "route %s dev %s table %u is missing", net,
                            n->pod_name, n->table);
        if (!n->gateway[0] || !n->rule_prio) /* VRF mode: one default for all rails */
            continue;
        RouteSpec def = {
            .dst = c.family == AF_INET ? "0.0.0.0/0" : "::/0", .gw = n->gateway, .table = n->table};
        if (route_exists(ns->pod, ifindex, &def) < 0)
            return rg_error(err, -EIO, CNI_ERR_CHECK, "default route via %s table %u is missing",
                            n->gateway, n->table);
    }
    return 0;
}

int nic_check(NicNs *ns, const AttachedNic *n, RgError *err) {
    Where where;
    int ifindex = 0, r;

    r = nic_locate(ns, n, &where, &ifindex);
    if (r == -ENODEV || (r >= 0 && where != WHERE_POD))
        return rg_error(err, -ENODEV, CNI_ERR_CHECK, "the NIC of unit %s (%s) is not in the pod",
                        n->unit, n->host_name);
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "looking for", n->host_name);
    r = pod_check(ns, n, ifindex, err);
    return r < 0 ? r : nic_vf_check(ns, n, err);
}
