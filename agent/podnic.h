/* SPDX-License-Identifier: Apache-2.0 */
/* Where a claimed unit's NIC is while a pod holds it, read from the host's namespace. */
#pragma once

#include "attachment.h"
#include "netlink.h"

/* Where the NIC was found last (a PCI NIC's namespace is looked up there
 * first): ifindex 0, nowhere yet; nsid as the host names that namespace,
 * LINK_NETNSID_SELF for the host's own. */
typedef struct PodNicCache {
    int nsid, ifindex;
} PodNicCache;

/*
 * n's NIC as the namespace it is in has it now, read on host (a connection
 * in the namespace the record's ids are relative to) by namespace id
 * (IFLA_TARGET_NETNSID) and the record's identity, never by the name the pod
 * gave it: a veth through its peer, a device with a parent (a PCI NIC) where
 * it was last found, else in every namespace the host has an id for, checked
 * by parent and permanent address, an anchored NIC (dummy, macvlan) through
 * its anchor VLAN. Nothing is opened or joined in the pod's namespace, so
 * nothing here keeps it alive. c (may be NULL) is updated on a find.
 *
 * 0: found, in *ret; -ENODEV: gone (a veth pair dies together, an anchor
 * goes with its NIC); -EINPROGRESS: in a namespace being torn down (its NIC
 * is on its way home or dying with it); -ESTALE: found nowhere the host can
 * see (moved by the pod into a namespace the host has no id for, or an
 * anchor that is not the record's); -EOPNOTSUPP: a record without an
 * identity to follow; another -errno: the kernel did not answer.
 */
int podnic_read(Netlink *host, const AttachedNic *n, PodNicCache *c, Link *ret);
