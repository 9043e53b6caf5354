/* SPDX-License-Identifier: Apache-2.0 */
/* DEL's wait for a NIC that a namespace being torn down still holds. */
#include <errno.h>
#include <poll.h>

#include "clock.h"
#include "nswait.h"

/*
 * A network namespace lives on, unmounted, while anything still holds it (a
 * process in it, an open fd, a bind mount in another mount namespace, a
 * socket); once the last user went, the kernel tears it down in a worker
 * (net/core/net_namespace.c, cleanup_net). That worker drops the
 * namespace's ids first, so that from then on a link there is reported
 * through its veth peer or its anchor with IFLA_LINK_NETNSID -1 ("no id"),
 * then runs the pernet exits, among them default_device_exit_net, which
 * moves every device without rtnl_link_ops (a whole NIC, a VF: those with a
 * parent device) to the initial namespace, under its own name where that is
 * free there (else "dev<ifindex>"), and default_device_exit_batch, which
 * deletes every other one with its kind's dellink: a veth with its peer
 * wherever that is, a dummy, a macvlan (the anchor railgate keeps on it goes
 * with its lower). Each step sends its link event to the host (the peer's or
 * the anchor's RTM_DELLINK, the NIC's RTM_NEWLINK as it arrives), and that
 * wakes the wait. A DEL right after the runtime deleted the pod's namespace
 * may find it in any of these states (on 6.18 the release build's DEL found
 * it still held, by an id the kernel still resolved).
 */

int nswait_open(LinkMonitor **ret) {
    _cleanup_(link_monitor_freep) LinkMonitor *m = NULL;
    int r;

    r = link_monitor_new(&m);
    if (r < 0)
        return r;
    /* a veth's peer in a namespace of the fabric's dies there; without the
     * right to hear that namespace the deadline still ends the wait */
    (void)link_monitor_listen_all_nsid(m);
    *ret = TAKE_PTR(m);
    return 0;
}

static void ignore(void *userdata, const LinkEvent *ev) {
    (void)userdata;
    (void)ev;
}

int nswait_next(NicNs *ns, LinkMonitor *m) {
    struct pollfd p = {.fd = link_monitor_fd(m), .events = POLLIN};
    int left, k, r;

    if (!ns->dying_deadline_ms)
        ns->dying_deadline_ms = clock_monotonic_ms() + (uint64_t)ns->dying_wait_s * 1000;
    do {
        left = clock_left_ms(ns->dying_deadline_ms);
        if (left == 0)
            return 0;
        k = poll(&p, 1, left);
    } while (k < 0 && errno == EINTR);
    if (k < 0)
        return -errno;
    if (k == 0)
        return 0;
    /* what changed is read again by the caller: events dropped (ENOBUFS)
     * only mean the same */
    r = link_monitor_dispatch(m, ignore, NULL);
    return r < 0 && r != -ENOBUFS ? r : 1;
}

int nswait_error(const NicNs *ns, const AttachedNic *n, RgError *err) {
    const char *path = ns->pod_path && ns->pod_path[0] ? ns->pod_path : "(not recorded)";

    if (n->parent[0])
        return rg_error(err, -ETIME, CNI_ERR_TRY_AGAIN,
                        "unit %s: NIC %s (parent device %s) is not home %u s after the pod's "
                        "network namespace %s was deleted (timeouts.netnsTeardownSeconds): the "
                        "kernel moves it home once that namespace is torn down; try again later; "
                        "the record and the unit's claim stay",
                        n->unit, n->host_name, n->parent, ns->dying_wait_s, path);
    if (!ns->pod)
        return rg_error(err, -ETIME, CNI_ERR_TRY_AGAIN,
                        "unit %s: NIC %s (%s %s) is in a network namespace not yet torn down %u s "
                        "after the pod's, %s, was deleted (timeouts.netnsTeardownSeconds): that "
                        "one, or one the pod made, still held; the NIC dies with it; try again "
                        "later; the record and the unit's claim stay",
                        n->unit, n->host_name, n->anchor[0] ? "anchor" : "veth, peer",
                        n->anchor[0] ? n->anchor : n->peer_name, ns->dying_wait_s, path);
    return rg_error(err, -ETIME, CNI_ERR_TRY_AGAIN,
                    "unit %s: NIC %s (%s %s) is in a network namespace the kernel is tearing "
                    "down, one the pod made (its own, %s, is alive), after %u s "
                    "(timeouts.netnsTeardownSeconds); the NIC dies with it; try again later; the "
                    "record and the unit's claim stay",
                    n->unit, n->host_name, n->anchor[0] ? "anchor" : "veth, peer",
                    n->anchor[0] ? n->anchor : n->peer_name, path, ns->dying_wait_s);
}
