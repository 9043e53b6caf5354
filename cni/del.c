/* DEL and the teardown shared with GC and a failed ADD: every NIC home. */
#include <stdio.h>

#include "log.h"
#include "netns.h"
#include "ops.h"
#include "state.h"
#include "strv.h"

/* Restore NICs in reverse order; keep the ones that could not be restored
 * in the record so that the runtime's retry can finish the job. */
static int restore_nics(CniContext *c, Attachment *a, int pod_netns, int host_netns, RgError *err) {
    const char *state = c->node->state_dir;
    int failed = 0;
    size_t keep = 0;

    for (size_t i = a->n_nics; i-- > 0;) {
        AttachedNic *n = &a->nics[i];
        RgError e = {0};
        int r = nic_restore(n, pod_netns, host_netns, &e);
        if (r == -ENODEV)
            log_warn(NULL, n->unit,
                     "NIC %s is gone: a virtual NIC dies with its namespace; dropping its state",
                     n->host_name);
        else if (r < 0) {
            log_error(NULL, n->unit, r, "cannot restore NIC %s: %s", n->host_name, e.msg);
            *err = e;
            failed = r;
            continue;
        } else if (n->stage == NIC_MOVED)
            log_info(NULL, n->unit, "NIC %s back in the host namespace", n->host_name);
        state_unit_unmark(state, n->unit);
        n->stage = NIC_PLANNED; /* nothing left to undo */
    }
    for (size_t i = 0; i < a->n_nics; i++)
        if (a->nics[i].stage == NIC_MOVED)
            a->nics[keep++] = a->nics[i];
        else {
            strv_free(a->nics[i].host_addrs);
            strv_free(a->nics[i].pod_addrs);
        }
    a->n_nics = keep;
    return failed;
}

int attachment_teardown(CniContext *c, Attachment *a, RgError *err) {
    _cleanup_close_ int host_netns = -EBADF, pod_netns = -EBADF;
    int r;

    r = netns_open_current(&host_netns);
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "cannot open the host network namespace");
    if (a->netns[0] && netns_open(a->netns, &pod_netns) < 0)
        pod_netns = -EBADF; /* the pod's namespace is gone: NICs came home by themselves */
    r = restore_nics(c, a, pod_netns, host_netns, err);
    if (r < 0) {
        (void)attachment_save(c->node->state_dir, a);
        return r;
    }
    if (a->ipam && c->conf->ipam) {
        r = ipam_exec(c, "DEL", a->container_id, NULL, err);
        if (r < 0)
            return r;
    }
    return attachment_remove(c->node->state_dir, a->container_id, a->ifname);
}

/* Claims of units an ADD killed half-way never recorded (the recorded
 * ones were released by the teardown). */
static void release_claims(CniContext *c) {
    char owner[300];

    if (attachment_key(c->env->container_id, c->env->ifname, owner, sizeof(owner)) >= 0)
        (void)state_unit_release_owner(c->node->state_dir, owner);
}

int cmd_del(CniContext *c, RgError *err) {
    _cleanup_(attachment_freep) Attachment *a = NULL;
    int r;

    r = context_load_node(c, err);
    if (r < 0)
        return r;
    _cleanup_close_ int lock = context_lock_attachment(c, err);
    if (lock < 0)
        return lock;
    r = attachment_load(c->node->state_dir, c->env->container_id, c->env->ifname, &a);
    if (r == -ENOENT) {
        /* never attached, already deleted, or an ADD killed between claiming
         * its units and recording them: free its claims; releasing IPAM
         * again is harmless */
        release_claims(c);
        if (c->conf->ipam)
            return ipam_exec(c, "DEL", NULL, NULL, err);
        return 0;
    }
    if (r < 0)
        return rg_error(err, r, CNI_ERR_IO, "unreadable state for %s/%s: %s", c->env->container_id,
                        c->env->ifname, strerror(-r));
    r = attachment_teardown(c, a, err);
    if (r >= 0) {
        release_claims(c);
        log_info(NULL, NULL, "pod %s/%s: %s detached", a->pod_ns, a->pod_name,
                 c->env->container_id);
    }
    return r;
}
