/* SPDX-License-Identifier: Apache-2.0 */
/* CHECK: the pod's rails are as ADD left them. */
#include "commands.h"
#include "ipam.h"
#include "netns.h"
#include "nic.h"
#include "nicns.h"
#include "rdmadev.h"
#include "state.h"

static int check_locked(CniContext *c, const char *key, RgError *err) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    _cleanup_(nicns_close) NicNs ns = NICNS_INIT;
    int pod_netns = -EBADF;
    int r;

    r = state_record_load(c->node->state_dir, c->env->container_id, c->env->ifname, &a);
    if (r == -ENOENT)
        return 0; /* a pod without units: nothing of ours to check */
    if (r == -EXDEV)
        return rg_error(err, r, CNI_ERR_CHECK, "the record of %s is of another attachment", key);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "unreadable state: %s", strerror(-r));
    if (state_record_from_earlier_boot(a))
        return rg_error(err, -ESTALE, CNI_ERR_CHECK,
                        "the attachment was made before the node rebooted: its NICs are gone "
                        "from the pod");
    c->tenant = context_namespace_tenant(c, a->pod_ns);
    c->rails = (unsigned)a->n_nics;
    r = netns_open(c->env->netns, &pod_netns);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_CHECK, "CNI_NETNS %s: %s", c->env->netns, strerror(-r));
    r = nicns_open(&ns, pod_netns, err);
    if (r < 0)
        return r;
    for (size_t i = 0; i < a->n_nics; i++) {
        r = nic_check(&ns, &a->nics[i], err);
        if (r >= 0)
            r = rdmadev_check(&ns, &a->nics[i], err);
        if (r < 0)
            return r;
    }
    /* the tenant's IPAM plugin still holds what it gave */
    return a->ipam ? ipam_check(c, a, err) : 0;
}

int cmd_check(CniContext *c, RgError *err) {
    return context_with_attachment(c, check_locked, err);
}
