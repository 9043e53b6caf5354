/* SPDX-License-Identifier: Apache-2.0 */
/* A rail's anchor, its whole life: planned, made, followed to its lower link, removed. */
#pragma once

#include "attachment.h"
#include "error.h"
#include "netlink.h"
#include "nicns.h"

/* A NIC with no parent device and no veth peer (a dummy, a macvlan) is
 * found again through its anchor, a VLAN railgate makes on it in the host
 * namespace before it moves (see anchor.c for why that is safe). */

/* Plan n's anchor: a new random name, its VLAN id and protocol, not made
 * yet (the record names it before it exists). */
int anchor_plan(AttachedNic *n);
/* Make n's planned anchor on the host link at n->host_ifindex (down, loose
 * binding) and record its ifindex in n; nothing for a NIC without one.
 * CNI error 101 with the kernel's words when it cannot be made (no 8021q
 * driver; a NIC that takes no VLANs). */
int anchor_make(NicNs *ns, AttachedNic *n, RgError *err);
/* n's anchored NIC as its anchor on the host reports it: its ifindex
 * wherever it is, and that namespace's id as the host names it
 * (LINK_NETNSID_SELF: the host's own; LINK_NETNSID_UNASSIGNED: one being
 * torn down). -ENODEV when there is no anchor (never made, removed, or gone
 * with its NIC); -ENOTUNIQ when the link under its name is not it. */
int anchor_lower(Netlink *host, const AttachedNic *n, int *ret_ifindex, int *ret_netnsid);
/* The error for an anchor_lower() that said -ENOTUNIQ: CNI error 101, and
 * nothing is brought home. */
int anchor_not_ours_error(const AttachedNic *n, int r, RgError *err);
/* Said in the log when an anchored NIC is gone (its anchor with it), as
 * its record is dropped. */
void anchor_log_gone(const AttachedNic *n);
/* Remove n's anchor once its NIC is home at ifindex (and it names that
 * link); nothing when it is gone already. */
int anchor_remove(NicNs *ns, const AttachedNic *n, int ifindex, RgError *err);
