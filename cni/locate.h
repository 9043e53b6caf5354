/* SPDX-License-Identifier: Apache-2.0 */
/* Finding a rail: a unit's NIC on the node, its identity, and where it is now (locate.c). */
#pragma once

#include "attachment.h"
#include "error.h"
#include "inventory.h"
#include "netlink.h"
#include "nicns.h"

typedef enum Where {
    WHERE_HOST,
    WHERE_POD,
    WHERE_ELSEWHERE, /* alive, in a namespace railgate did not make */
    WHERE_DYING,     /* in a namespace the kernel tears down, or will: on its way (nswait.c) */
} Where;

/*
 * The NIC of a unit as the host has it now: u->netdev follows the unit's
 * PCI function when it was renamed; CNI error 101 when the function has no
 * netdev in the host namespace. A unit known by name only is left as it is.
 */
int locate_unit_nic(const char *sys, Unit *u, RgError *err);
/* Record into n what finds l, the unit's NIC, again wherever the pod puts
 * it: its parent device, its veth peer, or a planned anchor (anchor.h);
 * CNI error 101 for a NIC railgate does not lend. */
int locate_record_identity(NicNs *ns, const Unit *u, const Link *l, AttachedNic *n, RgError *err);
/* The same with a veth's peer read already (pre, or NULL: read it here). */
int locate_record_identity_pre(NicNs *ns, const Unit *u, const Link *l, const NicPrefetch *pre,
                               AttachedNic *n, RgError *err);
/* Where n's own device is, and its ifindex there. -ENODEV: a veth that no
 * longer exists (its peer went with it), an anchored NIC without its
 * anchor; -EOPNOTSUPP: a record that cannot identify it; -ENOTUNIQ: the
 * host link under its anchor's name is not its anchor. */
int nic_locate(NicNs *ns, const AttachedNic *n, Where *ret_where, int *ret_ifindex);
/* nic_locate() of a veth given its peer as the host answered for it (r:
 * that GET's result, seen: its link), read in a batch. */
int locate_veth_seen(NicNs *ns, const AttachedNic *n, int r, const Link *seen, Where *ret_where,
                     int *ret_ifindex);
/* nic_locate(), waiting (nswait.h) while n is in a namespace being torn down. */
int locate_settled(NicNs *ns, const AttachedNic *n, Where *ret_where, int *ret_ifindex);
/* n's ifindex in the pod right after its move, or a negative errno. */
int locate_pod_ifindex(NicNs *ns, const AttachedNic *n);
/* The same for a device with a parent, given what the pod answered for
 * n->host_ifindex (r: that GET's result, l its link), read in a batch;
 * looks further itself when that was not n. */
int locate_pod_ifindex_seen(NicNs *ns, const AttachedNic *n, int r, const Link *l);
/* The same for a veth, given what the host answered for its peer
 * (n->peer_ifindex in n->peer_nsid; r: that GET's result, peer its link),
 * read in a batch: the peer names where its other end is, so a look-alike
 * the pod made under the NIC's name, MAC and ifindex (its own peer in a
 * namespace of the pod's) is never taken for it. */
int locate_pod_veth_seen(NicNs *ns, const AttachedNic *n, int r, const Link *peer);
