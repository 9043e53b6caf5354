/* SPDX-License-Identifier: Apache-2.0 */
/* A rail's anchor: a VLAN on it in the host namespace that names it wherever the pod puts it. */
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <stdio.h>

#include "anchor.h"
#include "failpoint.h"
#include "log.h"

/*
 * A rail with no parent device and no veth peer (a dummy, a macvlan: what
 * kind clusters and simulated nodes use) has nothing of its own a pod could
 * not forge: name, MAC, MTU, kind and ifindex are the pod's to set or to
 * copy onto a look-alike. Before it moves, railgate makes a VLAN on it in
 * the host namespace, its anchor, and finds the rail through it from then
 * on. The kernel (net/8021q/vlan.c, vlan_device_event; checked on Debian's
 * 6.1 and 6.12 in tests/vm):
 *
 *  - leaves a VLAN where it is when its lower link changes namespace ("twiddle
 *    thumbs on netns device moves"), and reports the lower through it: its
 *    IFLA_LINK is the lower's ifindex wherever the lower is, and its
 *    IFLA_LINK_NETNSID that namespace as the asker names it (get_link_net);
 *    the lower moved to the pod, to a namespace of the pod's, or back at
 *    another ifindex is followed;
 *  - deletes a VLAN with its lower (NETDEV_UNREGISTER while unregistering):
 *    a rail the pod deletes, or that dies with the pod's namespace, takes its
 *    anchor along, so no anchor names a link that is not the rail;
 *  - refuses the same VLAN id and protocol twice on one lower: the pod gets
 *    EEXIST for its own VLAN 802.1ad 4094 on the rail, and nothing else;
 *  - brings a VLAN up with its lower unless it has loose binding: without
 *    it, the pod's `ip link set rail up` brought an anchor up on the host, a
 *    host interface the pod could reach with tagged frames. The anchor is
 *    made down with VLAN_FLAG_LOOSE_BINDING and nothing brings it up; a VLAN
 *    that is down drops what it receives (vlan_do_receive).
 *
 * A pod has no namespace id for the host (nothing of the host's is reported
 * to it: a dummy has no link, the anchor's lower is in the pod), so no
 * IFLA_TARGET_NETNSID request of the pod's reaches the anchor.
 *
 * A VLAN rather than a macvlan: a macvlan takes its lower's rx_handler,
 * which would refuse the pod a bridge, bond or ipvlan on its rail (EBUSY),
 * and on a macvlan rail the kernel puts a new macvlan on the rail's own
 * lower, which stays on the host: it would anchor the wrong link. A VLAN
 * needs the 8021q driver and takes one id of the rail; a kernel without it,
 * or a rail that takes no VLANs (ipvlan, tunnels, wireguard), refuses the
 * anchor, and railgate then does not move the rail.
 */
#define ANCHOR_PROTO ETH_P_8021AD
#define ANCHOR_VID 4094

int anchor_plan(AttachedNic *n) {
    int r = ifname_random(n->anchor);

    if (r < 0) {
        n->anchor[0] = 0;
        return r;
    }
    n->anchor_vid = ANCHOR_VID;
    n->anchor_proto = ANCHOR_PROTO;
    n->anchor_ifindex = 0;
    return 0;
}

/* n's anchor on the host as it is now: -ENODEV when there is none (never
 * made, removed, or gone with its NIC); -ENOTUNIQ when the link under its
 * name is not it. */
static int anchor_get(Netlink *host, const AttachedNic *n, Link *ret) {
    Link a;
    int r;

    if (!n->anchor[0])
        return -EINVAL;
    r = link_get_by_name(host, n->anchor, &a);
    if (r < 0)
        return r;
    /* a name made at random for this NIC, on the host, where no pod makes
     * links: only railgate's anchor has it (an alternative name of another
     * link, or a link of another shape, is not it) */
    if (!streq(a.name, n->anchor) || !streq(a.kind, "vlan") || a.vlan_id != n->anchor_vid ||
        a.vlan_proto != n->anchor_proto || a.link <= 0 ||
        (n->anchor_ifindex > 0 && a.ifindex != n->anchor_ifindex))
        return -ENOTUNIQ;
    *ret = a;
    return 0;
}

/* Read before the pod's id is asked for: reading it gives that namespace
 * an id here. */
int anchor_lower(Netlink *host, const AttachedNic *n, int *ret_ifindex, int *ret_netnsid) {
    Link a;
    int r;

    r = anchor_get(host, n, &a);
    if (r < 0)
        return r;
    if (failpoint("locate-netns-dying") < 0)
        a.link_netnsid = LINK_NETNSID_UNASSIGNED; /* as the kernel says it then */
    *ret_ifindex = a.link;
    *ret_netnsid = a.link_netnsid;
    return 0;
}

int anchor_not_ours_error(const AttachedNic *n, int r, RgError *err) {
    return rg_error(err, r, CNI_ERR_DEVICE,
                    "unit %s: the host link named %s is not the anchor of NIC %s (a VLAN of "
                    "id %u on it); railgate brings nothing home: the record and the unit's "
                    "claim stay",
                    n->unit, n->anchor, n->host_name, n->anchor_vid);
}

void anchor_log_gone(const AttachedNic *n) {
    log_warn(NULL, n->unit,
             "NIC %s has no anchor on the host: it never left (the ADD stopped before "
             "anchoring it) or it is gone (a virtual NIC dies with its namespace, and "
             "takes its anchor along); dropping its state",
             n->host_name);
}

int anchor_make(NicNs *ns, AttachedNic *n, RgError *err) {
    char kernel[256];
    Link a;
    int r;

    if (!n->anchor[0])
        return 0;
    r = vlan_add(ns->host, n->anchor, n->host_ifindex, n->anchor_proto, n->anchor_vid,
                 VLAN_FLAG_LOOSE_BINDING);
    if (r < 0) {
        char why[320];
        if (netlink_kernel_message(ns->host, r, kernel, sizeof(kernel)))
            snprintf(why, sizeof(why), "%s (kernel: %s)", strerror(-r), kernel);
        else
            snprintf(why, sizeof(why), "%s", strerror(-r));
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: NIC %s has no parent device and is not a veth: railgate finds "
                        "such a NIC again through an anchor, a VLAN it makes on it in the host "
                        "namespace, and this one cannot be made: %s; the NIC is not moved",
                        n->unit, n->host_name, why);
    }
    r = anchor_get(ns->host, n, &a);
    if (r >= 0 && (a.link != n->host_ifindex || a.link_netnsid != LINK_NETNSID_SELF))
        r = -ENOTUNIQ;
    if (r < 0)
        return nic_nl_error(err, ns->host, r, "reading the anchor it made on", n->host_name);
    n->anchor_ifindex = a.ifindex;
    return 0;
}

int anchor_remove(NicNs *ns, const AttachedNic *n, int ifindex, RgError *err) {
    Link a;
    int r;

    if (!n->anchor[0])
        return 0;
    if (failpoint("restore-before-unanchor") < 0) /* home, still anchored */
        return rg_error(err, -EFAULT, CNI_ERR_IO, "failpoint %s", failpoint_name());
    r = anchor_get(ns->host, n, &a);
    if (r == -ENODEV)
        return 0; /* removed already, by a DEL that stopped before its record went */
    if (r >= 0 && (a.link != ifindex || a.link_netnsid != LINK_NETNSID_SELF))
        return rg_error(err, -ENOTUNIQ, CNI_ERR_DEVICE,
                        "unit %s: the anchor %s of NIC %s names another link than the one "
                        "brought home; it stays",
                        n->unit, n->anchor, n->host_name);
    if (r >= 0)
        r = link_delete(ns->host, a.ifindex);
    if (r < 0 && r != -ENODEV)
        return nic_nl_error(err, ns->host, r, "removing the anchor of", n->host_name);
    return 0;
}
