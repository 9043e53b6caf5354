/* SPDX-License-Identifier: Apache-2.0 */
/* The namespaces a command works in, their netlink connections, and what every NIC step shares. */
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include "netns.h"
#include "nicns.h"

int nicns_open(NicNs *ns, int pod_netns, RgError *err) {
    int r;

    *ns = (NicNs)NICNS_INIT;
    ns->pod_fd = pod_netns;
    r = netns_open_current(&ns->host_fd);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot open the host network namespace: %s",
                        strerror(-r));
    /* named by its fd, not "the calling thread's": a socket opened again
     * later (a broken conversation) is the host's wherever the thread is */
    r = netlink_open(ns->host_fd, &ns->host);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_NETLINK, "cannot open a netlink socket: %s", strerror(-r));
    if (pod_netns < 0)
        return 0;
    r = netlink_open(pod_netns, &ns->pod);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_NETLINK,
                        "cannot open a netlink socket in the pod's network namespace: %s",
                        strerror(-r));
    return 0;
}

void nicns_close(NicNs *ns) {
    free(ns->spare);
    free(ns->pod_links);
    ethtool_close(ns->host_ethtool);
    netlink_close(ns->host);
    netlink_close(ns->pod);
    netlink_close(ns->host_rdma);
    netlink_close(ns->pod_rdma);
    if (ns->host_fd >= 0)
        close(ns->host_fd);
    if (ns->pod_fd >= 0)
        close(ns->pod_fd);
    *ns = (NicNs)NICNS_INIT;
}

int nic_nl_error(RgError *err, Netlink *nl, int r, const char *what, const char *dev) {
    char kernel[256];

    if (netlink_kernel_message(nl, r, kernel, sizeof(kernel)))
        return rg_error(err, r, CNI_ERR_NETLINK, "%s %s: %s (kernel: %s)", what, dev, strerror(-r),
                        kernel);
    return rg_error(err, r, CNI_ERR_NETLINK, "%s %s: %s", what, dev, strerror(-r));
}

int nic_batch_error(RgError *err, const NetlinkBatchEntry *e, const char *dev) {
    if (e->ext_ack[0])
        return rg_error(err, e->err, CNI_ERR_NETLINK, "%s %s: %s (kernel: %s)", e->what, dev,
                        strerror(-e->err), e->ext_ack);
    return rg_error(err, e->err, CNI_ERR_NETLINK, "%s %s: %s", e->what, dev, strerror(-e->err));
}

const NetlinkBatchEntry *nic_batch_failed(const NetlinkBatch *b, bool tolerate_exist) {
    for (size_t i = 0; i < netlink_batch_n(b); i++) {
        const NetlinkBatchEntry *e = netlink_batch_entry(b, i);

        if (e->err < 0 && !(tolerate_exist && e->err == -EEXIST))
            return e;
    }
    return NULL;
}

int ifname_random(char buf[static IF_NAMESIZE]) {
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz234567";
    uint8_t rnd[IF_NAMESIZE - 3];

    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -EIO;
    buf[0] = 'r';
    buf[1] = 'g';
    for (size_t i = 0; i < sizeof(rnd); i++)
        buf[2 + i] = digits[rnd[i] % 32];
    buf[IF_NAMESIZE - 1] = 0;
    return 0;
}
