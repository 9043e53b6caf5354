/* SPDX-License-Identifier: Apache-2.0 */
/* macvlan rails on a shared lower link: refused when another tenant or the node is on it too. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "inventory.h"
#include "netlink.h"

/*
 * A pod that holds a macvlan (or macvtap) rail can change the rail's mode
 * and source list from its own namespace, NET_ADMIN there alone: the
 * kernel's macvlan changelink asks for no capability over the lower link's
 * namespace. In "mode source nodst" with a leaf's MAC added, the rail takes
 * every frame that MAC sends into the lower, ahead of every other link on
 * it. So a macvlan rail's lower may carry macvlan rails of its own tenant
 * only, and nothing of the node's: not a node address or default route, on
 * the lower itself or on a link stacked on it, and not another rail (the
 * lower being a rail's NIC). Nothing railgate could set on the rail would
 * hold: the pod changes it back.
 */

/* A tenant rail's NIC, as the inventory and the node config name it. */
typedef struct RailNic {
    const char *unit;   /* "rail3", "rail4-vf1" */
    const char *tenant; /* its tenant's name */
    const char *netdev; /* the NIC's host netdev; "" unknown */
    int lower_ifindex;  /* while the NIC is not in links: the lower it was last seen on, 0 none */
    bool check;         /* a conflict of this one's is refused */
} RailNic;

/*
 * The pure rule: rails against links (a dump of the node's namespace) and
 * nics (node_nics_list of it). A conflict with a checked rail's NIC on one
 * side is -EADDRINUSE, with err naming both sides: the two rails and their
 * tenants, or the rail and the node's link. A rail whose NIC is not in
 * links (in a pod now) counts as on the lower it was last seen on, while
 * that lower is there (the kernel deletes a macvlan with its lower).
 */
int rail_lowers_check(const RailNic *rails, size_t n_rails, const Link *links, size_t n_links,
                      const NodeNic *nics, size_t n_nics, RgError *err);

/*
 * Note in inv where each macvlan NIC sits now (Unit.lower_ifindex and
 * .lower), in the calling thread's namespace. A NIC not there now (in a
 * pod) keeps what prev (the inventory published before; NULL: none) noted
 * for the same unit and netdev: an agent restarted while a pod holds a
 * macvlan rail still knows its lower. The inventory publishes it, and the
 * CNI checks with it.
 */
int rail_lowers_note(Inventory *inv, const Inventory *prev, RgError *err);

/*
 * The same check on the node now, in the calling thread's namespace, for every
 * unit of inv, checking those in only (n_only of them; only NULL: all).
 * One link dump; the node's routes and addresses are read only when a
 * rail's NIC is a macvlan. Other failures: -errno with err saying what
 * could not be read.
 */
int rail_lowers_check_node(const Inventory *inv, const Unit *const *only, size_t n_only,
                           RgError *err);
