/* SPDX-License-Identifier: Apache-2.0 */
/* A unit's RDMA device: recorded, moved into the pod with its NIC, found again and brought home. */
#include <limits.h>
#include <stdio.h>
#include <strings.h>
#include <unistd.h>

#include "clock.h"
#include "failpoint.h"
#include "log.h"
#include "rdma.h"
#include "rdmadev.h"

/* How often a DEL looks for a device a dying namespace still holds. */
#define DYING_POLL_US 50000

static int host_rdma(NicNs *ns, Netlink **ret) {
    int r = ns->host_rdma ? 0 : rdma_open(-1, &ns->host_rdma);

    if (r >= 0)
        *ret = ns->host_rdma;
    return r;
}

static int pod_rdma(NicNs *ns, Netlink **ret) {
    int r;

    if (ns->pod_fd < 0)
        return -ENODEV;
    r = ns->pod_rdma ? 0 : rdma_open(ns->pod_fd, &ns->pod_rdma);
    if (r >= 0)
        *ret = ns->pod_rdma;
    return r;
}

/* "<what> RDMA device <dev>: <errno text> (kernel: ...)": CNI error 102. */
static int rdma_nl_error(RgError *err, Netlink *nl, int r, const char *unit, const char *what,
                         const char *dev) {
    char kernel[256];

    if (nl && netlink_kernel_message(nl, r, kernel, sizeof(kernel)))
        return rg_error(err, r, CNI_ERR_NETLINK, "unit %s: %s RDMA device %s: %s (kernel: %s)",
                        unit, what, dev, strerror(-r), kernel);
    return rg_error(err, r, CNI_ERR_NETLINK, "unit %s: %s RDMA device %s: %s", unit, what, dev,
                    strerror(-r));
}

int rdmadev_mode(NicNs *ns, const Unit *const *units, size_t n, RgError *err) {
    RdmaNetnsMode m = RDMA_NETNS_SHARED;
    Netlink *nl;
    bool any = false;
    int r;

    ns->rdma_exclusive = false;
    for (size_t i = 0; i < n; i++)
        any = any || units[i]->rdma[0];
    if (!any)
        return 0;
    r = host_rdma(ns, &nl);
    if (r == -EPROTONOSUPPORT)
        return 0; /* no RDMA core: no device to move, none seen anywhere */
    if (r >= 0)
        r = rdma_netns_mode_get(nl, &m);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_NETLINK,
                        "cannot read the node's RDMA netns mode: %s; nothing was moved",
                        strerror(-r));
    ns->rdma_exclusive = m == RDMA_NETNS_EXCLUSIVE;
    return 0;
}

/* The device nl's namespace sees with n's index and node GUID into *ret: 1,
 * or 0 when there is none (a device with that index and another GUID is
 * not n's, and is said in the log). */
static int find(Netlink *nl, const AttachedNic *n, RdmaDevice *ret) {
    RdmaDevice *v = NULL;
    size_t k = 0;
    int r = rdma_dev_list(nl, &v, &k);

    if (r < 0)
        return r;
    r = 0;
    for (size_t i = 0; i < k && r == 0; i++) {
        if (v[i].index != n->rdma_index)
            continue;
        if (v[i].node_guid != n->rdma_guid) {
            log_warn(NULL, n->unit,
                     "RDMA device %s at index %u has node GUID %016llx, not its recorded "
                     "%016llx: not %s",
                     v[i].name, v[i].index, (unsigned long long)v[i].node_guid,
                     (unsigned long long)n->rdma_guid, n->rdma);
            break;
        }
        *ret = v[i];
        r = 1;
    }
    free(v);
    return r;
}

/* The device's parent as sysfs shows it, "<bus>/<device>" ("" if none). */
static void parent_read(const char *sys, const char *name, char *buf, size_t n) {
    char path[PATH_MAX], dev[PATH_MAX], bus[PATH_MAX];
    ssize_t k, b;
    const char *d, *s;

    buf[0] = 0;
    snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", sys ? sys : "/sys", name);
    k = readlink(path, dev, sizeof(dev) - 1);
    snprintf(path, sizeof(path), "%s/class/infiniband/%s/device/subsystem", sys ? sys : "/sys",
             name);
    b = readlink(path, bus, sizeof(bus) - 1);
    if (k <= 0 || b <= 0)
        return;
    dev[k] = 0;
    bus[b] = 0;
    d = strrchr(dev, '/');
    s = strrchr(bus, '/');
    d = d ? d + 1 : dev;
    s = s ? s + 1 : bus;
    int w = snprintf(buf, n, "%s/%s", s, d);
    if (w < 0 || (size_t)w >= n)
        buf[0] = 0; /* too long to record: none */
}

int rdmadev_record(NicNs *ns, const NicPlan *p, AttachedNic *n, RgError *err) {
    const Unit *u = p->unit;
    RdmaDevice *v = NULL, d = {0};
    size_t k = 0;
    bool found = false;
    Netlink *nl;
    int r;

    if (!ns->rdma_exclusive || !u->rdma[0])
        return 0;
    r = host_rdma(ns, &nl);
    if (r >= 0)
        r = rdma_dev_list(nl, &v, &k);
    if (r < 0)
        return rdma_nl_error(err, ns->host_rdma, r, u->id, "listing the host's RDMA devices for",
                             u->rdma);
    for (size_t i = 0; i < k && !found; i++)
        if (streq(v[i].name, u->rdma)) {
            d = v[i];
            found = true;
        }
    free(v);
    if (!found)
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: RDMA device %s is not in the host namespace (RDMA netns mode "
                        "exclusive: in another pod?); nothing was moved",
                        u->id, u->rdma);
    parent_read(p->sys, d.name, n->rdma_parent, sizeof(n->rdma_parent));
    /* the inventory's name must still be the unit's NIC's device */
    if (u->nic_pci[0] && strncmp(n->rdma_parent, "pci/", 4) == 0 &&
        strcasecmp(n->rdma_parent + 4, u->nic_pci) != 0)
        return rg_error(err, -ENODEV, CNI_ERR_DEVICE,
                        "unit %s: RDMA device %s is PCI function %s's, not the unit's NIC %s; "
                        "nothing was moved",
                        u->id, d.name, n->rdma_parent + 4, u->nic_pci);
    snprintf(n->rdma, sizeof(n->rdma), "%s", d.name);
    n->rdma_index = d.index;
    n->rdma_guid = d.node_guid;
    return 0;
}

int rdmadev_move_in(NicNs *ns, const AttachedNic *n, RgError *err) {
    Netlink *nl;
    int r;

    if (!n->rdma[0])
        return 0;
    r = host_rdma(ns, &nl);
    if (r >= 0)
        r = rdma_dev_move(nl, n->rdma_index, ns->pod_fd);
    if (r == -EOPNOTSUPP)
        return rg_error(err, r, CNI_ERR_DEVICE,
                        "unit %s: RDMA device %s cannot follow NIC %s into the pod: the node's "
                        "RDMA netns mode is exclusive, and the kernel refuses to move the device "
                        "(%s: its driver cannot change namespace, as the software RoCE driver "
                        "rxe cannot); the ADD is refused and nothing stays moved",
                        n->unit, n->rdma, n->host_name, strerror(-r));
    if (r < 0)
        return rdma_nl_error(err, ns->host_rdma, r, n->unit, "moving into the pod", n->rdma);
    log_info(NULL, n->unit, "RDMA device %s moved into the pod (RDMA netns mode exclusive)",
             n->rdma);
    return 0;
}

static int not_found(const AttachedNic *n, bool pod, RgError *err) {
    return rg_error(err, -ENXIO, CNI_ERR_DEVICE,
                    "unit %s: RDMA device %s (index %u, node GUID %016llx%s%s) is neither in the "
                    "pod%s nor on the host (the pod moved it into another namespace?); railgate "
                    "brings home nothing else: the record and the unit's claim stay until it is "
                    "back",
                    n->unit, n->rdma, n->rdma_index, (unsigned long long)n->rdma_guid,
                    n->rdma_parent[0] ? ", parent " : "", n->rdma_parent,
                    pod ? "" : " (its namespace is gone)");
}

/* Where n's device is: 1 on the host (*ret), 2 in the pod (*ret), 0
 * nowhere this command sees; a namespace the kernel is tearing down gives
 * its devices back to init_net, which is waited for (ns->dying_wait_s, one
 * wait for a whole GC). */
static int locate(NicNs *ns, const AttachedNic *n, RdmaDevice *ret) {
    Netlink *host, *pod;
    int r;

    r = host_rdma(ns, &host);
    for (;;) {
        if (r >= 0)
            r = find(host, n, ret);
        if (r != 0)
            return r;
        if (ns->pod_fd >= 0) {
            r = pod_rdma(ns, &pod);
            if (r >= 0)
                r = find(pod, n, ret);
            return r > 0 ? 2 : r;
        }
        /* the pod's namespace is gone: its devices are on their way home */
        if (!ns->dying_deadline_ms)
            ns->dying_deadline_ms = clock_monotonic_ms() + (uint64_t)ns->dying_wait_s * 1000;
        if (clock_left_ms(ns->dying_deadline_ms) <= 0)
            return 0;
        usleep(DYING_POLL_US);
    }
}

int rdmadev_restore(NicNs *ns, const AttachedNic *n, RgError *err) {
    RdmaDevice d;
    bool moved;
    int r;

    if (!n->rdma[0])
        return 0;
    r = locate(ns, n, &d);
    moved = r == 2;
    if (r < 0)
        return rdma_nl_error(err, NULL, r, n->unit, "looking for", n->rdma);
    if (r == 0)
        return not_found(n, ns->pod_fd >= 0, err);
    if (r == 2) {
        int m = failpoint("restore-rdma-found"); /* found in the pod, not moved yet */
        if (m >= 0)
            m = rdma_dev_move(ns->pod_rdma, d.index, ns->host_fd);
        /* home, whatever the move answered (the kernel may have brought it) */
        r = find(ns->host_rdma, n, &d);
        if (r < 0)
            return rdma_nl_error(err, ns->host_rdma, r, n->unit, "looking for", n->rdma);
        if (r == 0 && m < 0)
            return rdma_nl_error(err, ns->pod_rdma, m, n->unit, "moving out of the pod", n->rdma);
        if (r == 0)
            return not_found(n, true, err);
    }
    if (failpoint("restore-rdma-home") < 0) /* home, its name not given back yet */
        return rg_error(err, -EFAULT, CNI_ERR_IO, "failpoint %s", failpoint_name());
    if (!streq(d.name, n->rdma)) {
        r = rdma_dev_rename(ns->host_rdma, d.index, n->rdma);
        if (r == -EEXIST)
            return rg_error(err, r, CNI_ERR_DEVICE,
                            "unit %s: RDMA device %s is home as %s, and another device holds its "
                            "name (one the pod made?); the record and the unit's claim stay until "
                            "it has its name back",
                            n->unit, n->rdma, d.name);
        if (r >= 0)
            r = find(ns->host_rdma, n, &d);
        if (r >= 0 && (r == 0 || !streq(d.name, n->rdma)))
            r = -EIO;
        if (r < 0)
            return rdma_nl_error(err, ns->host_rdma, r, n->unit, "giving its name back to",
                                 n->rdma);
        log_warn(NULL, n->unit, "RDMA device %s: the name the pod gave it taken back", n->rdma);
    }
    if (moved)
        log_info(NULL, n->unit, "RDMA device %s back in the host namespace", n->rdma);
    return 0;
}

int rdmadev_check(NicNs *ns, const AttachedNic *n, RgError *err) {
    RdmaDevice d;
    Netlink *pod = NULL;
    int r;

    if (!n->rdma[0])
        return 0;
    r = pod_rdma(ns, &pod);
    if (r >= 0)
        r = find(pod, n, &d);
    if (r < 0)
        return rdma_nl_error(err, pod, r, n->unit, "looking in the pod for", n->rdma);
    if (r == 0)
        return rg_error(err, -ENODEV, CNI_ERR_CHECK,
                        "unit %s: RDMA device %s (index %u) is not in the pod", n->unit, n->rdma,
                        n->rdma_index);
    if (!streq(d.name, n->rdma))
        return rg_error(err, -EIO, CNI_ERR_CHECK, "unit %s: RDMA device %s is called %s in the pod",
                        n->unit, n->rdma, d.name);
    return 0;
}
