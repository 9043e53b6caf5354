/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding a rail, in one place: a unit's NIC on the node (its PCI function's
 * netdev now), the identity recorded before it moves, and from then on where
 * that identity is (host, pod, elsewhere, a namespace being torn down) and
 * its ifindex there, whatever the pod did to names, MACs and ifindexes.
 */
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

#include "anchor.h"
#include "failpoint.h"
#include "locate.h"
#include "log.h"
#include "nswait.h"
#include "sysfs.h"

/*
 * The NIC of a unit as the host has it now. The published inventory gives
 * its PCI function and the netdev it had then: the PCI address is the
 * identity, the name a hint. A netdev that is now another function's is
 * never taken for it; a function whose netdev was renamed is followed. A
 * unit known by name only (a veth rail) is left to nic_record's identity.
 */
int locate_unit_nic(const char *sys, Unit *u, RgError *err) {
    char pci[16] = "", dev[IFNAMSIZ], path[4096];
    int r;

    if (!u->nic_pci[0])
        return 0;
    if (u->netdev[0]) {
        r = sysfs_netdev_pci(sys, u->netdev, pci, sizeof(pci));
        if (r >= 0 && strcasecmp(pci, u->nic_pci) == 0)
            return 0;
    }
    r = sysfs_pci_netdev(sys, u->nic_pci, dev, sizeof(dev));
    if (r >= 0 &&
        (sysfs_netdev_pci(sys, dev, pci, sizeof(pci)) < 0 || strcasecmp(pci, u->nic_pci) != 0))
        r = -EBADMSG;
    if (r < 0) {
        snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", sys, u->nic_pci);
        bool on_bus = access(path, F_OK) == 0;
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: its NIC is PCI function %s%s%s%s, and %s; nothing was moved",
                        u->id, u->nic_pci, u->netdev[0] ? " (" : "", u->netdev,
                        u->netdev[0] ? " when the device plugin published its inventory)" : "",
                        !on_bus ? "that function is gone from the PCI bus"
                                : "that function has no netdev in the host namespace (in a pod "
                                  "already, or its driver unbound)");
    }
    if (u->netdev[0])
        log_warn(NULL, u->id, "NIC of PCI function %s is %s now, not %s as published", u->nic_pci,
                 dev, u->netdev);
    snprintf(u->netdev, sizeof(u->netdev), "%s", dev);
    return 0;
}

/* The id the namespace at fd has as the host sees it (-1: none yet), asked
 * once per command once there is one. */
static int ns_id(NicNs *ns, int fd, int *memo, int *ret) {
    int r;

    if (*memo < 0) {
        r = netlink_nsid(ns->host, fd, memo);
        if (r < 0)
            return r;
    }
    *ret = *memo;
    return 0;
}

/*
 * Identity: what the pod cannot change. A device with a parent (a PCI
 * function, a VF) is the link whose parent device is that one, wherever it
 * is; a veth is the peer of its peer, which stays where the pod cannot reach
 * (the host, or the fabric side); any other NIC (a dummy, a macvlan) is the
 * lower link of its anchor, a VLAN railgate makes on it on the host before
 * it moves (anchor.c). Names, MACs, MTUs, kinds and ifindexes are the pod's
 * to change or to forge: none of them finds a NIC again.
 */
int locate_record_identity(NicNs *ns, const Unit *u, const Link *l, AttachedNic *n, RgError *err) {
    return locate_record_identity_pre(ns, u, l, NULL, n, err);
}

int locate_record_identity_pre(NicNs *ns, const Unit *u, const Link *l, const NicPrefetch *pre,
                               AttachedNic *n, RgError *err) {
    Link peer;
    int r;

    /* the link the name gave is the unit's PCI function (a name can change
     * hands between the inventory and now) */
    if (u->nic_pci[0] && strncmp(l->parent, "pci/", 4) == 0 &&
        strcasecmp(l->parent + 4, u->nic_pci) != 0)
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: netdev %s is PCI function %s, not the unit's %s; nothing was "
                        "moved",
                        u->id, u->netdev, l->parent + 4, u->nic_pci);
    snprintf(n->kind, sizeof(n->kind), "%s", l->kind);
    if (strlen(l->parent) >= sizeof(n->parent))
        return rg_error(err, -ENAMETOOLONG, CNI_ERR_DEVICE,
                        "unit %s: NIC %s has a parent device name too long to record", u->id,
                        u->netdev);
    snprintf(n->parent, sizeof(n->parent), "%s", l->parent);
    n->host_ifindex = l->ifindex;
    /* A VF's permanent address is only what its driver picked, and igbvf
     * takes for it whatever MAC the VF has at its next reset: a pod changes
     * it with a MAC and a down/up (found on a real igb VF). A VF function has
     * one netdev, so its PCI function alone finds it again. */
    if (!u->is_vf)
        memcpy(n->perm_mac, l->perm, sizeof(n->perm_mac));
    n->peer_ifindex = 0;
    n->peer_nsid = -1;
    n->peer_name[0] = 0;
    n->anchor[0] = 0;
    if (l->parent[0])
        return 0;
    if (!streq(l->kind, "veth")) {
        /* a kind with settings of its own that railgate does not record
         * (an ipvlan's port mode, a bond's, a vxlan's) is not lent: the
         * pod's changes to them would stay */
        if (!streq(l->kind, "dummy") && !streq(l->kind, "macvlan") && !streq(l->kind, "macvtap"))
            return rg_error(err, -EOPNOTSUPP, CNI_ERR_DEVICE,
                            "unit %s: NIC %s is a link of kind %s, whose own settings railgate "
                            "does not record and restore; it lends a NIC with a driver, a veth, a "
                            "dummy or a macvlan; nothing was moved",
                            u->id, u->netdev, l->kind[0] ? l->kind : "(none)");
        /* named here, made right before the move (anchor_make), once the
         * record that names it is on disk */
        r = anchor_plan(n);
        return r < 0 ? rg_error(err, r, CNI_ERR_IO, "unit %s: no randomness for an anchor name: %s",
                                u->id, strerror(-r))
                     : 0;
    }
    if (pre && pre->peer_asked) {
        r = pre->peer_r;
        peer = pre->peer;
    } else
        r = l->link > 0 && l->link_netnsid != LINK_NETNSID_UNASSIGNED
                ? link_get_in(ns->host, l->link, l->link_netnsid, &peer)
                : -ENODEV;
    if (r < 0 || !streq(peer.kind, "veth"))
        return rg_error(err, r < 0 ? r : -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: the peer of veth %s cannot be read", u->id, u->netdev);
    n->peer_ifindex = peer.ifindex;
    n->peer_nsid = l->link_netnsid;
    snprintf(n->peer_name, sizeof(n->peer_name), "%s", peer.name);
    return 0;
}

/* Is l, in the namespace of nl, n's own device (one with a parent)? A veth
 * is found through its peer on the host (locate_veth_seen), never from its
 * end in the pod, which the pod can copy. */
static bool is_ours(const AttachedNic *n, const Link *l) {
    static const uint8_t zero[6];

    /* the permanent address, where there is one, must agree too */
    return n->parent[0] && streq(l->parent, n->parent) &&
           (!memcmp(n->perm_mac, zero, 6) || !memcmp(l->perm, n->perm_mac, 6));
}

/* Which namespace nsid (an id as the host names it) is: the host's, the
 * pod's, another, or one being torn down or left to be. */
static int where_of(NicNs *ns, int nsid, Where *ret) {
    int id, r;

    if (nsid == LINK_NETNSID_UNASSIGNED) {
        *ret = WHERE_DYING;
        return 0;
    }
    /* the pod's first: once a NIC moved there it has an id, asked once; the
     * host has none for itself unless a look gave it one (a GET from the
     * host naming a link whose other end is the host's: asked each time) */
    if (ns->pod) {
        r = ns_id(ns, ns->pod_fd, &ns->pod_nsid, &id);
        if (r < 0)
            return r;
        if (id >= 0 && nsid == id) {
            *ret = WHERE_POD;
            return 0;
        }
    }
    r = ns_id(ns, ns->host_fd, &ns->host_nsid, &id);
    if (r < 0)
        return r;
    if (id >= 0 && nsid == id) {
        *ret = WHERE_HOST;
        return 0;
    }
    /* The pod's namespace deleted by the runtime: what it holds is not
     * the pod's doing while the kernel has yet to tear it down, which it
     * does once its last user went (a process, an open fd, a mount still
     * there); it keeps its ids until the kernel's worker gets to it. So is
     * a namespace the kernel no longer resolves (its last user gone). */
    *ret = !ns->pod || netlink_nsid_alive(ns->host, nsid) == 0 ? WHERE_DYING : WHERE_ELSEWHERE;
    return 0;
}

/* An anchored NIC is its anchor's lower link: its ifindex wherever it is,
 * and that namespace as the host names it (none: the host's own). Read
 * before the pod's id is asked for: reading it gives that namespace an id
 * here. -ENODEV: no anchor (not made yet, removed, or gone with the NIC). */
static int anchor_locate(NicNs *ns, const AttachedNic *n, Where *ret_where, int *ret_ifindex) {
    int netnsid, r;

    r = anchor_lower(ns->host, n, ret_ifindex, &netnsid);
    if (r < 0)
        return r;
    if (netnsid == LINK_NETNSID_SELF) {
        *ret_where = WHERE_HOST;
        return 0;
    }
    return where_of(ns, netnsid, ret_where);
}

/* n's ifindex in the pod, which the move keeps unless the pod has it
 * taken; otherwise the link under its pod name, if it is ours. An anchored
 * NIC's is its anchor's word. */
int locate_pod_ifindex(NicNs *ns, const AttachedNic *n) {
    Where where;
    Link l;
    int ifindex, r;

    if (n->anchor[0] || !n->parent[0]) {
        r = nic_locate(ns, n, &where, &ifindex);
        return r < 0 ? r : where == WHERE_POD ? ifindex : -ENODEV;
    }
    r = link_get(ns->pod, n->host_ifindex, &l);
    return locate_pod_ifindex_seen(ns, n, r, &l);
}

int locate_pod_ifindex_seen(NicNs *ns, const AttachedNic *n, int r, const Link *seen) {
    Link l;

    if (n->anchor[0] || !n->parent[0])
        return locate_pod_ifindex(ns, n);
    if (r >= 0 && is_ours(n, seen) && streq(seen->name, n->pod_name))
        return seen->ifindex;
    r = link_get_by_name(ns->pod, n->pod_name, &l);
    if (r < 0)
        return r;
    return is_ours(n, &l) ? l.ifindex : -ENODEV;
}

int locate_pod_veth_seen(NicNs *ns, const AttachedNic *n, int r, const Link *peer) {
    Where where;
    int ifindex;

    r = locate_veth_seen(ns, n, r, peer, &where, &ifindex);
    return r < 0 ? r : where == WHERE_POD ? ifindex : -ENODEV;
}

/* The link with n's parent device (and permanent address) on nl: its
 * ifindex, or 0 when there is none. */
static int parent_search(Netlink *nl, const AttachedNic *n, int *ret_ifindex) {
    _cleanup_free_ Link *v = NULL;
    size_t k = 0;
    int r = link_dump(nl, n->parent, &v, &k);

    *ret_ifindex = 0;
    for (size_t i = 0; r >= 0 && i < k; i++)
        if (is_ours(n, &v[i])) {
            *ret_ifindex = v[i].ifindex;
            break;
        }
    return r;
}

/* Where n's own device is, and its ifindex there. -ENODEV: a veth that no
 * longer exists (its peer went with it), an anchored NIC without its
 * anchor. */
int nic_locate(NicNs *ns, const AttachedNic *n, Where *ret_where, int *ret_ifindex) {
    Link peer;
    int r;

    if (n->parent[0]) {
        if (ns->pod) {
            r = parent_search(ns->pod, n, ret_ifindex);
            if (r < 0)
                return r;
            if (*ret_ifindex > 0) {
                *ret_where = WHERE_POD;
                return 0;
            }
        }
        r = parent_search(ns->host, n, ret_ifindex);
        if (r < 0)
            return r;
        /* with the pod's namespace gone, not yet home may be on its way */
        *ret_where = *ret_ifindex > 0 ? WHERE_HOST : ns->pod ? WHERE_ELSEWHERE : WHERE_DYING;
        return 0;
    }
    if (n->anchor[0])
        return anchor_locate(ns, n, ret_where, ret_ifindex);
    if (!streq(n->kind, "veth"))
        return -EOPNOTSUPP;
    r = link_get_in(ns->host, n->peer_ifindex, n->peer_nsid, &peer);
    return locate_veth_seen(ns, n, r, &peer, ret_where, ret_ifindex);
}

int locate_veth_seen(NicNs *ns, const AttachedNic *n, int r, const Link *seen, Where *ret_where,
                     int *ret_ifindex) {
    Link peer;

    if (r == -ENODEV ||
        (r >= 0 && (!streq(seen->kind, "veth") || !streq(seen->name, n->peer_name))))
        return -ENODEV; /* a veth pair lives and dies together */
    if (r < 0)
        return r;
    peer = *seen;
    if (failpoint("locate-netns-dying") < 0)
        peer.link_netnsid = LINK_NETNSID_UNASSIGNED; /* as the kernel says it then */
    *ret_ifindex = peer.link;
    /* the peer names the namespace our veth is in, by the id that namespace
     * has here (the kernel answers relative to the asker); SELF: the peer's
     * own namespace */
    if (peer.link_netnsid == LINK_NETNSID_SELF) {
        *ret_where = n->peer_nsid < 0 ? WHERE_HOST : WHERE_ELSEWHERE;
        return 0;
    }
    return where_of(ns, peer.link_netnsid, ret_where);
}

/* nic_locate, and while n is in a namespace being torn down, again at
 * every link event until it is not or the command's wait is over (then
 * WHERE_DYING). The monitor is open before the second look: no event
 * after a look is missed. */
int locate_settled(NicNs *ns, const AttachedNic *n, Where *ret_where, int *ret_ifindex) {
    _cleanup_(link_monitor_freep) LinkMonitor *m = NULL;
    int r;

    r = nic_locate(ns, n, ret_where, ret_ifindex);
    if (r < 0 || *ret_where != WHERE_DYING)
        return r;
    r = nswait_open(&m);
    (void)failpoint("restore-dying-wait"); /* watching, not yet looked again */
    while (r >= 0) {
        r = nic_locate(ns, n, ret_where, ret_ifindex);
        if (r < 0 || *ret_where != WHERE_DYING)
            return r;
        r = nswait_next(ns, m);
        if (r == 0)
            return 0;
    }
    return r;
}
