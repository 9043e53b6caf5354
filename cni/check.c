/* CHECK: the pod's rails are as ADD left them. */
#include "netns.h"
#include "ops.h"

int cmd_check(CniContext *c, RgError *err) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    _cleanup_close_ int pod_netns = -EBADF;
    int r;

    r = context_load_node(c, err);
    if (r < 0)
        return r;
    r = attachment_load(c->node->state_dir, c->env->container_id, c->env->ifname, &a);
    if (r == -ENOENT)
        return 0; /* a pod without units: nothing of ours to check */
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "unreadable state: %s", strerror(-r));
    r = netns_open(c->env->netns, &pod_netns);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_CHECK, "CNI_NETNS %s: %s", c->env->netns, strerror(-r));
    for (size_t i = 0; i < a->n_nics; i++) {
        if (a->nics[i].stage != NIC_MOVED)
            return rg_error(err, -EIO, CNI_ERR_CHECK, "unit %s was never attached",
                            a->nics[i].unit);
        r = nic_check(&a->nics[i], pod_netns, err);
        if (r < 0)
            return r;
    }
    return 0;
}
