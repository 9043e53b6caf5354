/* SPDX-License-Identifier: Apache-2.0 */
/* The namespaces a command works in and their connections (nicns.c), and what NIC steps share. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "attachment.h"
#include "cni.h"
#include "config.h"
#include "error.h"
#include "inventory.h"
#include "netlink.h"

/* What an ADD's plan read of a unit's NIC in batches, all NICs at once,
 * before nic_record() looks at each (nic_prefetch()); a part not asked is
 * read by nic_record() itself. */
typedef struct NicPrefetch {
    bool link_asked; /* the host's link by the unit's netdev name */
    int link_r;
    Link link;
    char link_ack[256];
    bool peer_asked; /* a veth's peer */
    int peer_r;
    Link peer;
    bool ethtool_asked; /* its ethtool state: nic_record() takes it */
    int ethtool_r;
    EthtoolState ethtool;
    RgError ethtool_err;
} NicPrefetch;

/* One unit's NIC into the pod (nic.c, and the VF's admin state, vf.c). */
typedef struct NicPlan {
    const Unit *unit;
    const RailConfig *rail; /* may be NULL (discovered rail without an entry) */
    const TenantConfig *tenant;
    char **addrs;        /* what the pod side gets (CIDR), NULL-terminated */
    const char *gateway; /* or NULL */
    const char *sys;     /* the sysfs root */
    NicPrefetch *pre;    /* or NULL: nic_record() reads everything itself */
} NicPlan;

/* The namespaces a command works in, each with its one netlink connection
 * (nl.h): every change in the pod goes through pod, opened once. */
typedef struct NicNs {
    int host_fd; /* the caller's (host) namespace */
    int pod_fd;  /* the pod's; < 0 when it is gone */
    Netlink *host;
    Netlink *pod;              /* NULL when pod_fd < 0 */
    EthtoolConn *host_ethtool; /* ethtool's netlink family on the host, opened when needed */
    /* the pod's ifindex of each NIC of the attachment still in the pod (0:
     * not there), which no NIC's upper-link clean-up may take for an upper:
     * a macvlan rail's sibling on one lower is another rail (nic_spares) */
    int *spare;
    size_t n_spare;
    /* DEL: one dump of the pod's links for every NIC's uppers (nic_pod_look());
     * NULL: each NIC's release dumps for itself */
    Link *pod_links;
    size_t n_pod_links;
    /* the ids the host and the pod namespaces have as the host sees them,
     * once known (an id, once given, stays while the namespace lives) */
    int host_nsid, pod_nsid;
    /* set by the teardown after nicns_open(): the pod's namespace as the
     * record names it (for messages), and the wait for NICs in namespaces
     * being torn down (nswait.c): its bound, and its end once started */
    const char *pod_path;
    const char *sys; /* the sysfs root, for NICs' queue settings ("/sys": NULL) */
    unsigned dying_wait_s;
    uint64_t dying_deadline_ms;
    /* RDMA netlink on the host and in the pod, opened when an RDMA device
     * moves (rdmadev.c); ADD: the node's RDMA netns mode is exclusive (and
     * a unit has an RDMA device) */
    Netlink *host_rdma, *pod_rdma;
    bool rdma_exclusive;
} NicNs;
/* Takes pod_netns (< 0: none); nicns_close() closes it. Declare a NicNs
 * with NICNS_INIT so that nicns_close() is safe before nicns_open(). */
#define NICNS_INIT                                                                                 \
    { .host_fd = -EBADF, .pod_fd = -EBADF, .host_nsid = -1, .pod_nsid = -1 }
int nicns_open(NicNs *ns, int pod_netns, RgError *err);
void nicns_close(NicNs *ns);

/* "<what> <dev>: <errno text>", with the kernel's own words where it gave
 * them (extended ack): CNI error 102. */
int nic_nl_error(RgError *err, Netlink *nl, int r, const char *what, const char *dev);
/* The same words for a batch's entry e (its what, its kernel's words). */
int nic_batch_error(RgError *err, const NetlinkBatchEntry *e, const char *dev);
/* The first entry of b, in request order, that failed with other than
 * -EEXIST when tolerate_exist; NULL: none did. */
const NetlinkBatchEntry *nic_batch_failed(const NetlinkBatch *b, bool tolerate_exist);

/* "rg" and 13 random base-32 digits (65 bits from getrandom): a link name
 * nothing can predict or hold beforehand (an anchor's, a NIC's on its way
 * home). */
int ifname_random(char buf[static IF_NAMESIZE]);
